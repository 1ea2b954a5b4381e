package store_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestSensors tests the methods of sensors.go.
func TestSensors(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"ListSensors":  testListSensors,
		"CreateSensor": testCreateSensor,
		"GetSensor":    testGetSensor,
		"UpdateSensor": testUpdateSensor,
		"DeleteSensor": testDeleteSensor,
	})
}

func testListSensors(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		project, other := newProject(t, db, org), newProject(t, db, org)
		var want []int64
		for range 3 {
			want = append(want, newSensor(t, db, project, nil).SensorID)
			newSensor(t, db, other, nil)
		}
		checkPages(t, want, func(after int64, limit int) ([]int64, bool, error) {
			sensors, more, err := db.ListSensors(t.Context(), org.ID, project.ID, after, limit)
			return ids(sensors, func(s store.Sensor) int64 { return s.ID }), more, err
		})
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, _, err := db.ListSensors(t.Context(), newOrg(t, db).ID, unknownID, 0, 10)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		newSensor(t, db, project, nil)
		_, _, err := db.ListSensors(t.Context(), newOrg(t, db).ID, project.ID, 0, 10)
		wantCode(t, err, apperr.NotFound)
	})
}

func testCreateSensor(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		sensor, err := db.CreateSensor(t.Context(), project.OrgID, project.ID, "meter", "on the roof", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := store.Sensor{
			ID: sensor.ID, ProjectID: project.ID, Name: "meter", Description: "on the roof",
			CreatedAt: sensor.CreatedAt, UpdatedAt: sensor.UpdatedAt,
		}
		if !reflect.DeepEqual(sensor, want) || sensor.ID == 0 || sensor.CreatedAt.IsZero() {
			t.Fatalf("CreateSensor = %+v, want %+v", sensor, want)
		}
	})
	t.Run("Blueprint", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		b := newBlueprint(t, db, org.ID)
		project := newProject(t, db, org)
		attach := attachment(t, b)
		sensor, err := db.CreateSensor(t.Context(), org.ID, project.ID, "meter", "", attach)
		if err != nil {
			t.Fatal(err)
		}
		if sensor.BlueprintID == nil || *sensor.BlueprintID != b.ID {
			t.Fatalf("BlueprintID=%v, want %d", sensor.BlueprintID, b.ID)
		}
		inst := sensor.Instance
		if inst == nil {
			t.Fatal("Instance=nil, want one")
		}
		if got, want := inst.Version, int64(1); got != want {
			t.Fatalf("Version=%d, want %d", got, want)
		}
		wantNewIDs(t, inst, nil)
		if attach.Instance.Inputs[0].ID != 0 {
			t.Fatal("CreateSensor gave ids to the caller's instance, want them on a copy")
		}
		got := getSensor(t, db, store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID})
		if !reflect.DeepEqual(got.Instance, inst) {
			t.Fatalf("GetSensor: Instance=%+v, want %+v", got.Instance, inst)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.CreateSensor(t.Context(), newOrg(t, db).ID, unknownID, "meter", "", nil)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		_, err := db.CreateSensor(t.Context(), newOrg(t, db).ID, project.ID, "meter", "", nil)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrInvalid/EmptyName", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		_, err := db.CreateSensor(t.Context(), project.OrgID, project.ID, "", "", nil)
		wantCode(t, err, apperr.Invalid)
	})
	for name, foreign := range foreignAttachments {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			t.Parallel()
			org := newOrg(t, db)
			project := newProject(t, db, org)
			attach := foreign(t, db, org)
			_, err := db.CreateSensor(t.Context(), org.ID, project.ID, "meter", "", attach)
			wantCode(t, err, apperr.NotFound)
			sensors, _, err := db.ListSensors(t.Context(), org.ID, project.ID, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(sensors), 0; got != want {
				t.Fatalf("len(sensors)=%d after a refused CreateSensor, want %d", got, want)
			}
		})
	}
}

// foreignAttachments make, for a sensor of org, attachments it may not be
// given: of a blueprint that does not exist, and of another
// organization's, both not found as an id of another organization in a
// path would be.
var foreignAttachments = map[string]func(*testing.T, *store.DB, store.Org) *store.Attachment{
	"UnknownBlueprint": func(t *testing.T, db *store.DB, org store.Org) *store.Attachment {
		a := attachment(t, newBlueprint(t, db, org.ID))
		a.BlueprintID = unknownID
		return a
	},
	"AnotherOrgsBlueprint": func(t *testing.T, db *store.DB, _ store.Org) *store.Attachment {
		return attachment(t, newBlueprint(t, db, newOrg(t, db).ID))
	},
}

func testGetSensor(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		if sensor := getSensor(t, db, key); sensor.ID != key.SensorID || sensor.ProjectID != key.ProjectID || sensor.Name != "meter" {
			t.Fatalf("GetSensor = %+v, want sensor %d of project %d", sensor, key.SensorID, key.ProjectID)
		}
	})
	for name, foreign := range foreignKeys {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			t.Parallel()
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			_, err := db.GetSensor(t.Context(), foreign(t, db, key))
			wantCode(t, err, apperr.NotFound)
		})
	}
}

func testUpdateSensor(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		sensor, err := updateSensor(t.Context(), db, key, store.SensorPatch{Description: ptr("moved")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sensor.Name, "meter"; got != want {
			t.Fatalf("Name=%q, want %q", got, want)
		}
		if got, want := sensor.Description, "moved"; got != want {
			t.Fatalf("Description=%q, want %q", got, want)
		}
		if sensor.Instance != nil {
			t.Fatalf("Instance=%+v, want nil", sensor.Instance)
		}
	})
	t.Run("Attach", func(t *testing.T) {
		t.Parallel()
		before, key := newBlueprintSensor(t, db)
		other := newBlueprint(t, db, key.OrgID)
		sensor, err := updateSensor(t.Context(), db, key, store.SensorPatch{Attach: attachment(t, other)})
		if err != nil {
			t.Fatal(err)
		}
		if sensor.BlueprintID == nil || *sensor.BlueprintID != other.ID {
			t.Fatalf("BlueprintID=%v, want %d", sensor.BlueprintID, other.ID)
		}
		if got, want := sensor.Instance.Version, before.Instance.Version+1; got != want {
			t.Fatalf("Version=%d, want %d", got, want)
		}
		wantNewIDs(t, sensor.Instance, before.Instance)
	})
	t.Run("Instance", func(t *testing.T) {
		t.Parallel()
		before, key := newBlueprintSensor(t, db)
		edit := before.Instance.Clone()
		edit.Outputs[0].Formula = "u * i"
		sensor, err := updateSensor(t.Context(), db, key, store.SensorPatch{Instance: &edit})
		if err != nil {
			t.Fatal(err)
		}
		want := edit.Clone()
		want.Version++
		if !reflect.DeepEqual(*sensor.Instance, want) {
			t.Fatalf("Instance=%+v, want %+v", *sensor.Instance, want)
		}
		if !reflect.DeepEqual(sensor.BlueprintID, before.BlueprintID) {
			t.Fatalf("BlueprintID=%v, want %v", sensor.BlueprintID, before.BlueprintID)
		}
	})
	t.Run("ErrInvalid/EmptyName", func(t *testing.T) {
		t.Parallel()
		key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		_, err := updateSensor(t.Context(), db, key, store.SensorPatch{Name: ptr("")})
		wantCode(t, err, apperr.Invalid)
	})
	for name, foreign := range foreignAttachments {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			t.Parallel()
			org := newOrg(t, db)
			key := newSensor(t, db, newProject(t, db, org), nil)
			attach := foreign(t, db, org)
			_, err := updateSensor(t.Context(), db, key, store.SensorPatch{Attach: attach})
			wantCode(t, err, apperr.NotFound)
			wantUnchanged(t, db, key, "meter", 0)
		})
	}
	// A refused change changes nothing, the name in the same patch
	// included.
	for name, tt := range map[string]struct {
		attach   bool // the sensor has an instance
		readings bool // and readings
		patch    func(t *testing.T, org store.Org, current store.Sensor) store.SensorPatch
	}{
		"ErrConflict/AttachWithReadings": {true, true, func(t *testing.T, org store.Org, _ store.Sensor) store.SensorPatch {
			return store.SensorPatch{Attach: attachment(t, newBlueprint(t, db, org.ID))}
		}},
		"ErrConflict/StaleInstance": {true, false, func(t *testing.T, _ store.Org, current store.Sensor) store.SensorPatch {
			stale := current.Instance.Clone()
			stale.Version--
			return store.SensorPatch{Instance: &stale}
		}},
		"ErrConflict/NoInstance": {false, false, func(t *testing.T, org store.Org, _ store.Sensor) store.SensorPatch {
			inst, err := testBlueprint().Instantiate(nil)
			if err != nil {
				t.Fatal(err)
			}
			return store.SensorPatch{Instance: &inst}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			org := newOrg(t, db)
			var b *store.Blueprint
			if tt.attach {
				b = ptr(newBlueprint(t, db, org.ID))
			}
			key := newSensor(t, db, newProject(t, db, org), b)
			if tt.readings {
				id := getSensor(t, db, key).Instance.Inputs[0].ID
				reading := store.Reading{Time: time.Now(), InputIDs: []int64{id}, Values: []float64{1}}
				if _, err := insert(t.Context(), db, key, []store.Reading{reading}); err != nil {
					t.Fatal(err)
				}
			}
			current := getSensor(t, db, key)
			patch := tt.patch(t, org, current)
			patch.Name = ptr("renamed")
			_, err := updateSensor(t.Context(), db, key, patch)
			wantCode(t, err, apperr.Conflict)
			var version int64
			if current.Instance != nil {
				version = current.Instance.Version
			}
			wantUnchanged(t, db, key, "meter", version)
		})
	}
	for name, foreign := range foreignKeys {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			t.Parallel()
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			_, err := updateSensor(t.Context(), db, foreign(t, db, key), store.SensorPatch{Name: ptr("renamed")})
			wantCode(t, err, apperr.NotFound)
			wantUnchanged(t, db, key, "meter", 0)
		})
	}
}

func testDeleteSensor(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		if err := db.DeleteSensor(t.Context(), key); err != nil {
			t.Fatal(err)
		}
		_, err := db.GetSensor(t.Context(), key)
		wantCode(t, err, apperr.NotFound)
	})
	for name, foreign := range foreignKeys {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			t.Parallel()
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			wantCode(t, db.DeleteSensor(t.Context(), foreign(t, db, key)), apperr.NotFound)
			wantUnchanged(t, db, key, "meter", 0)
		})
	}
}

// foreignKeys turns the key of a sensor into keys that must not find it:
// no sensor's, and keys naming it under another project or organization.
var foreignKeys = map[string]func(*testing.T, *store.DB, store.SensorKey) store.SensorKey{
	"Unknown": func(_ *testing.T, _ *store.DB, key store.SensorKey) store.SensorKey {
		key.SensorID = unknownID
		return key
	},
	"AnotherProject": func(t *testing.T, db *store.DB, key store.SensorKey) store.SensorKey {
		project, err := db.CreateProject(t.Context(), key.OrgID, "another", "")
		if err != nil {
			t.Fatal(err)
		}
		key.ProjectID = project.ID
		return key
	},
	"AnotherOrg": func(t *testing.T, db *store.DB, key store.SensorKey) store.SensorKey {
		key.OrgID = newOrg(t, db).ID
		return key
	},
	"AnotherOrgsProject": func(t *testing.T, db *store.DB, key store.SensorKey) store.SensorKey {
		project := newProject(t, db, newOrg(t, db))
		key.OrgID, key.ProjectID = project.OrgID, project.ID
		return key
	},
}

// wantNewIDs fails the test unless every input and output of inst has an
// id, none the same, and none one of old's (when old is not nil).
func wantNewIDs(t *testing.T, inst, old *store.Instance) {
	t.Helper()
	seen := make(map[int64]bool)
	if old != nil {
		for _, in := range old.Inputs {
			seen[in.ID] = true
		}
		for _, out := range old.Outputs {
			seen[out.ID] = true
		}
	}
	var got []int64
	for _, in := range inst.Inputs {
		got = append(got, in.ID)
	}
	for _, out := range inst.Outputs {
		got = append(got, out.ID)
	}
	for _, id := range got {
		if id == 0 || seen[id] {
			t.Fatalf("instance ids %v: want each new, none 0 or twice", got)
		}
		seen[id] = true
	}
}

// wantUnchanged fails the test unless the sensor still has its name and its
// instance's version (0 for none).
func wantUnchanged(t *testing.T, db *store.DB, key store.SensorKey, name string, version int64) {
	t.Helper()
	sensor := getSensor(t, db, key)
	var gotVersion int64
	if sensor.Instance != nil {
		gotVersion = sensor.Instance.Version
	}
	if sensor.Name != name || gotVersion != version {
		t.Fatalf("sensor: Name=%q, version %d; want %q, version %d", sensor.Name, gotVersion, name, version)
	}
}
