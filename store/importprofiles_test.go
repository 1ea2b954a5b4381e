package store_test

import (
	"fmt"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

func TestImportProfiles(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"SetGetDelete": func(t *testing.T, db *store.DB) {
			sensor, key := newBlueprintSensor(t, db)
			u := sensor.Instance.Inputs[0]
			spec := store.ImportProfileSpec{TZ: "Europe/Zurich", DST: "later", Columns: map[string]string{"U_Avg": "u", "I_Avg": fmt.Sprint(sensor.Instance.Inputs[1].ID)}}
			set, err := db.SetImportProfile(t.Context(), key, spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.GetImportProfile(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%d Europe/Zurich later [{I_Avg %d i} {U_Avg %d u}]", sensor.ID, sensor.Instance.Inputs[1].ID, u.ID)
			for name, p := range map[string]store.ImportProfile{"set": set, "get": got} {
				if s := fmt.Sprint(p.SensorID, " ", p.TZ, " ", p.DST, " ", p.Columns); s != want {
					t.Errorf("%s = %s, want %s", name, s, want)
				}
			}
			if _, err := db.SetImportProfile(t.Context(), key, store.ImportProfileSpec{TZ: "UTC"}); err != nil {
				t.Fatal(err)
			}
			if p, err := db.ImportProfileOf(t.Context(), sensor); err != nil || p == nil || p.DST != "" || len(p.Columns) != 0 || p.TZ != "UTC" {
				t.Errorf("replaced profile %+v, %v; want UTC with no columns", p, err)
			}
			if err := db.DeleteImportProfile(t.Context(), key); err != nil {
				t.Fatal(err)
			}
			if p, err := db.ImportProfileOf(t.Context(), sensor); p != nil || err != nil {
				t.Errorf("after delete: %+v, %v; want none", p, err)
			}
			defaults, err := db.GetImportProfile(t.Context(), key)
			if err != nil || defaults.TZ != "UTC" || defaults.DST != "" || len(defaults.Columns) != 0 || defaults.UpdatedAt != nil {
				t.Errorf("after delete: %+v, %v; want the defaults", defaults, err)
			}
			if err := db.DeleteImportProfile(t.Context(), key); err != nil {
				t.Errorf("delete again: %v, want nil", err)
			}
		},
		"WithoutBlueprint": func(t *testing.T, db *store.DB) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			p, err := db.SetImportProfile(t.Context(), key, store.ImportProfileSpec{TZ: "UTC", Columns: map[string]string{"ch1": "42"}})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(p.Columns), "[{ch1 42 }]"; got != want {
				t.Errorf("columns %s, want %s", got, want)
			}
			for _, input := range []string{"u", "042", "0", "-1", "+42"} {
				_, err := db.SetImportProfile(t.Context(), key, store.ImportProfileSpec{TZ: "UTC", Columns: map[string]string{"ch1": input}})
				wantCode(t, err, apperr.Invalid)
			}
		},
		"Invalid": func(t *testing.T, db *store.DB) {
			_, key := newBlueprintSensor(t, db)
			for _, columns := range []map[string]string{
				{"P": "p"},                   // an output
				{"a": "u", "b": "u"},         // one input twice
				{"x": "9223372036854775807"}, // an id the instance has not
			} {
				_, err := db.SetImportProfile(t.Context(), key, store.ImportProfileSpec{TZ: "UTC", Columns: columns})
				wantCode(t, err, apperr.Invalid)
			}
			if p, err := db.GetImportProfile(t.Context(), key); err != nil || p.UpdatedAt != nil {
				t.Errorf("after the refusals: %+v, %v; want the defaults", p, err)
			}
		},
		"NotFound": func(t *testing.T, db *store.DB) {
			_, key := newBlueprintSensor(t, db)
			key.SensorID = unknownID
			_, err := db.SetImportProfile(t.Context(), key, store.ImportProfileSpec{TZ: "UTC"})
			wantCode(t, err, apperr.NotFound)
			_, err = db.GetImportProfile(t.Context(), key)
			wantCode(t, err, apperr.NotFound)
			wantCode(t, db.DeleteImportProfile(t.Context(), key), apperr.NotFound)
		},
	})
}

// TestResolveColumns resolves a file's columns to the inputs they feed,
// by key or id, and refuses an input the sensor lacks or two columns
// feeding one input, naming the column.
func TestResolveColumns(t *testing.T) {
	inst := &store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}, {ID: 8, Key: "temp"}}}
	got, err := store.ResolveColumns(inst, map[string]string{"Freq_Avg": "freq", "T": "8"})
	if err != nil || len(got) != 2 || got["Freq_Avg"] != 7 || got["T"] != 8 {
		t.Errorf("ResolveColumns = %v, %v; want Freq_Avg 7 and T 8", got, err)
	}
	for name, spec := range map[string]map[string]string{
		"NotAnInput": {"A": "pressure"},
		"Twice":      {"A": "freq", "B": "7"},
	} {
		_, err := store.ResolveColumns(inst, spec)
		wantCode(t, err, apperr.Invalid)
		if e, _ := err.(*apperr.Error); e == nil || e.Details["column"] == nil {
			t.Errorf("%s: %v, want the column named", name, err)
		}
	}
	if got, err := store.ResolveColumns(nil, map[string]string{"A": "12"}); err != nil || got["A"] != 12 {
		t.Errorf("ResolveColumns without an instance = %v, %v; want any id", got, err)
	}
}
