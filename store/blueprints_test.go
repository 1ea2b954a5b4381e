package store_test

import (
	"reflect"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestBlueprints tests the methods of blueprints.go that use the database.
func TestBlueprints(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"ListBlueprints":  testListBlueprints,
		"CreateBlueprint": testCreateBlueprint,
		"GetBlueprint":    testGetBlueprint,
		"UpdateBlueprint": testUpdateBlueprint,
		"DeleteBlueprint": testDeleteBlueprint,
	})
}

func TestBlueprint_Instantiate(t *testing.T) {
	b := testBlueprint()
	t.Run("Defaults", func(t *testing.T) {
		inst, err := b.Instantiate(nil)
		if err != nil {
			t.Fatal(err)
		}
		want := store.Instance{
			Inputs: []store.InstanceInput{{Key: "u", Name: "voltage", Unit: "V"}, {Key: "i", Name: "current", Unit: "A"}},
			Outputs: []store.InstanceOutput{
				{Key: "p", Name: "power", Unit: "W", Formula: "u * i * k"},
			},
			Constants: []store.InstanceConstant{
				{Key: "k", Name: "gain", Default: b.Constants[0].Default},
				{Key: "offset", Name: "offset", Unit: "W"},
			},
		}
		if !reflect.DeepEqual(inst, want) {
			t.Fatalf("Instantiate = %+v, want %+v", inst, want)
		}
	})
	t.Run("Values", func(t *testing.T) {
		inst, err := b.Instantiate(map[string]float64{"k": 3, "offset": -1})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []float64{3, -1} {
			if v := inst.Constants[i].Value; v == nil || *v != want {
				t.Errorf("constant %s: Value=%v, want %v", inst.Constants[i].Key, v, want)
			}
		}
		if got, want := *inst.Constants[0].Default, 2.0; got != want {
			t.Errorf("Default=%v, want %v", got, want)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		_, err := b.Instantiate(map[string]float64{"gain": 3})
		wantCode(t, err, apperr.Invalid)
	})
}

func testListBlueprints(t *testing.T, db *store.DB) {
	org, other := newOrg(t, db), newOrg(t, db)
	var want []int64
	for range 3 {
		want = append(want, newBlueprint(t, db, org.ID).ID)
		newBlueprint(t, db, other.ID)
	}
	checkPages(t, want, func(after int64, limit int) ([]int64, bool, error) {
		blueprints, more, err := db.ListBlueprints(t.Context(), org.ID, after, limit)
		return ids(blueprints, func(b store.Blueprint) int64 { return b.ID }), more, err
	})
}

func testCreateBlueprint(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		b, err := db.CreateBlueprint(t.Context(), org.ID, testBlueprint())
		if err != nil {
			t.Fatal(err)
		}
		if b.ID == 0 || b.CreatedAt.IsZero() || b.UpdatedAt.IsZero() {
			t.Fatalf("CreateBlueprint = %+v, want an id and times", b)
		}
		if got, want := b.OrgID, org.ID; got != want {
			t.Fatalf("OrgID=%d, want %d", got, want)
		}
		wantBlueprint(t, b, testBlueprint())
	})
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		b, err := db.CreateBlueprint(t.Context(), newOrg(t, db).ID, store.Blueprint{Name: "nothing yet"})
		if err != nil {
			t.Fatal(err)
		}
		if b.Inputs == nil || b.Constants == nil || b.Outputs == nil {
			t.Fatalf("CreateBlueprint = %+v, want empty lists, not nil", b)
		}
	})
	for name, tt := range map[string]struct {
		orgID func(store.Org) int64
		name  string
	}{
		"ErrInvalid/EmptyName":  {orgOf, ""},
		"ErrInvalid/UnknownOrg": {unknownOrg, "power"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := testBlueprint()
			b.Name = tt.name
			_, err := db.CreateBlueprint(t.Context(), tt.orgID(newOrg(t, db)), b)
			wantCode(t, err, apperr.Invalid)
		})
	}
}

func testGetBlueprint(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		b := newBlueprint(t, db, newOrg(t, db).ID)
		got, err := db.GetBlueprint(t.Context(), b.OrgID, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != b.ID || got.OrgID != b.OrgID || !got.CreatedAt.Equal(b.CreatedAt) {
			t.Fatalf("GetBlueprint = %+v, want %+v", got, b)
		}
		wantBlueprint(t, got, b)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.GetBlueprint(t.Context(), newOrg(t, db).ID, unknownID)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		b := newBlueprint(t, db, newOrg(t, db).ID)
		_, err := db.GetBlueprint(t.Context(), newOrg(t, db).ID, b.ID)
		wantCode(t, err, apperr.NotFound)
	})
}

func testUpdateBlueprint(t *testing.T, db *store.DB) {
	// changed is testBlueprint with every field changed.
	changed := store.Blueprint{
		Name:        "energy",
		Description: "energy since the start",
		Inputs:      []store.BlueprintInput{{Key: "e", Name: "energy", Unit: "kWh"}},
		Constants:   []store.BlueprintConstant{},
		Outputs:     []store.BlueprintOutput{{Key: "wh", Name: "energy", Unit: "Wh", Formula: "e * 1000"}},
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		b := newBlueprint(t, db, org.ID)
		sensor := newSensor(t, db, newProject(t, db, org), &b)
		updated, err := db.UpdateBlueprint(t.Context(), org.ID, b.ID, changed)
		if err != nil {
			t.Fatal(err)
		}
		wantBlueprint(t, updated, changed)
		if got, err := db.GetBlueprint(t.Context(), org.ID, b.ID); err != nil {
			t.Fatal(err)
		} else {
			wantBlueprint(t, got, changed)
		}
		// The sensor's instance is its own copy and stays as it was.
		s, err := db.GetSensor(t.Context(), sensor)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Instance.Outputs[0].Formula, b.Outputs[0].Formula; got != want {
			t.Fatalf("the instance's formula=%q after UpdateBlueprint, want %q", got, want)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		b := newBlueprint(t, db, newOrg(t, db).ID)
		empty := changed
		empty.Name = ""
		_, err := db.UpdateBlueprint(t.Context(), b.OrgID, b.ID, empty)
		wantCode(t, err, apperr.Invalid)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.UpdateBlueprint(t.Context(), newOrg(t, db).ID, unknownID, changed)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		b := newBlueprint(t, db, newOrg(t, db).ID)
		_, err := db.UpdateBlueprint(t.Context(), newOrg(t, db).ID, b.ID, changed)
		wantCode(t, err, apperr.NotFound)
		got, err := db.GetBlueprint(t.Context(), b.OrgID, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantBlueprint(t, got, b)
	})
}

func testDeleteBlueprint(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		b := newBlueprint(t, db, org.ID)
		sensor := newSensor(t, db, newProject(t, db, org), &b)
		if err := db.DeleteBlueprint(t.Context(), org.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		_, err := db.GetBlueprint(t.Context(), org.ID, b.ID)
		wantCode(t, err, apperr.NotFound)
		// The sensor keeps its instance, no longer linked to a blueprint.
		s, err := db.GetSensor(t.Context(), sensor)
		if err != nil {
			t.Fatal(err)
		}
		if s.BlueprintID != nil || s.Instance == nil {
			t.Fatalf("sensor after DeleteBlueprint: BlueprintID=%v, Instance=%v; want nil and the instance", s.BlueprintID, s.Instance)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		wantCode(t, db.DeleteBlueprint(t.Context(), newOrg(t, db).ID, unknownID), apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		b := newBlueprint(t, db, newOrg(t, db).ID)
		wantCode(t, db.DeleteBlueprint(t.Context(), newOrg(t, db).ID, b.ID), apperr.NotFound)
		if _, err := db.GetBlueprint(t.Context(), b.OrgID, b.ID); err != nil {
			t.Fatalf("GetBlueprint after another organization's DeleteBlueprint: %v", err)
		}
	})
}

// wantBlueprint fails the test unless got has want's name, description,
// inputs, constants and outputs.
func wantBlueprint(t *testing.T, got, want store.Blueprint) {
	t.Helper()
	got.ID, got.OrgID, got.CreatedAt, got.UpdatedAt = 0, 0, want.CreatedAt, want.UpdatedAt
	want.ID, want.OrgID = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("blueprint=%+v, want %+v", got, want)
	}
}
