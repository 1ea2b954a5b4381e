package store_test

import (
	"slices"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestCountStored splits a write's instants into those new to the sensor
// and those it holds, each instant once.
func TestCountStored(t *testing.T) {
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	mustInsert(t, db, key, one(1, 1), one(3, 3))
	micros := []int64{at(3).UnixMicro(), at(2).UnixMicro(), at(1).UnixMicro(), at(2).UnixMicro()}
	got, err := db.CountStored(t.Context(), store.Sensor{ID: key.SensorID}, micros)
	if want := (store.Written{New: 1, Replaced: 2}); err != nil || got != want {
		t.Errorf("CountStored = %+v, %v; want %+v", got, err, want)
	}
	if got, err := db.CountStored(t.Context(), store.Sensor{ID: key.SensorID}, nil); err != nil || got != (store.Written{}) {
		t.Errorf("CountStored of nothing = %+v, %v; want nothing", got, err)
	}
}

// TestLockSensor: a transaction locks a sensor as its writers do, under
// its project's lock, and reads it; the sensor's newest reading is the
// one a write kept.
func TestLockSensor(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	org := newOrg(t, db)
	key := newSensor(t, db, newProject(t, db, org), nil)
	err := db.InTx(ctx, func(tx *store.Tx) error {
		sensor, err := tx.LockSensor(ctx, key)
		if err == nil && (sensor.ID != key.SensorID || sensor.Name != "meter") {
			t.Errorf("LockSensor = %+v, want the meter", sensor)
		}
		if latest, err := tx.LatestReading(ctx, key.SensorID); err != nil || latest != nil {
			t.Errorf("LatestReading of a sensor without readings = %+v, %v; want none", latest, err)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, key, one(2, 2), one(1, 1))
	err = db.InTx(ctx, func(tx *store.Tx) error {
		latest, err := tx.LatestReading(ctx, key.SensorID)
		if err == nil && (latest == nil || latest.Time.Minute() != 2 || !slices.Equal(latest.Values, []float64{2})) {
			t.Errorf("LatestReading = %+v, want minute 2's", latest)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		wantCode(t, db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.LockSensor(ctx, store.SensorKey{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: unknownID})
			return err
		}), apperr.NotFound)
	})
	t.Run("ErrConflict", func(t *testing.T) {
		if _, err := db.UpdateProject(ctx, org.ID, key.ProjectID, store.ProjectPatch{State: ptr(store.Archived)}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.LockSensor(ctx, key)
			return err
		}), apperr.Conflict)
	})
}

func TestBatchReplacesHours(t *testing.T) {
	t.Parallel()
	hours := func(stored ...int64) []store.BatchHour {
		var hs []store.BatchHour
		for _, n := range stored {
			hs = append(hs, store.BatchHour{Stored: n})
		}
		return hs
	}
	for _, tt := range []struct {
		name     string
		hours    []store.BatchHour
		replaced int
		want     bool
	}{
		{"every reading of one hour", hours(10), 10, true},
		{"every reading of two hours", hours(3, 4), 7, true},
		{"an hour without readings beside a replaced one", hours(0, 4), 4, true},
		{"one reading of an hour left", hours(10), 9, false},
		{"nothing replaced", hours(0), 0, false},
		{"an hour queued for the maintainer", hours(3, -1), 3, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.BatchReplacesHours(tt.hours, tt.replaced); got != tt.want {
				t.Errorf("BatchReplacesHours(%v, %d) = %v, want %v", tt.hours, tt.replaced, got, tt.want)
			}
		})
	}
}
