package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestInputIDs reads the set of input ids a sensor's readings have had,
// which ingest keeps: none before the first reading, every one after, and
// still every one once readings are deleted.
func TestInputIDs(t *testing.T) {
	ctx := t.Context()
	db := store.New(storetest.NewPool(t))
	sensor, key := newPlainSensor(t, db)
	ids := func() string {
		t.Helper()
		got, err := db.InputIDs(ctx, sensor)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(got)
	}
	if got, want := ids(), "[]"; got != want {
		t.Errorf("InputIDs before any reading = %s, want %s", got, want)
	}
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var readings []store.Reading
	for i, in := range [][]int64{{1, 2}, {1}, {5}, {3}, {1, 9}} {
		readings = append(readings, store.Reading{Time: base.Add(time.Duration(i) * time.Second), InputIDs: in, Values: make([]float64, len(in))})
	}
	if _, err := insert(ctx, db, key, readings); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "[1 2 3 5 9]"; got != want {
		t.Errorf("InputIDs = %s, want %s", got, want)
	}
	if _, err := deleteReadings(ctx, db, key, store.MinTime, store.MaxTime); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(), "[1 2 3 5 9]"; got != want {
		t.Errorf("InputIDs after deleting every reading = %s, want %s", got, want)
	}
}

// TestInputIDsOf: every input id of a batch comes at least once, whether
// a reading repeats the inputs of the one before or not.
func TestInputIDsOf(t *testing.T) {
	readings := []store.Reading{
		{InputIDs: []int64{1, 2}}, {InputIDs: []int64{1, 2}}, {InputIDs: []int64{3}},
		{InputIDs: []int64{1, 2}}, {InputIDs: []int64{2, 4}}, {InputIDs: []int64{2, 4}},
	}
	got := slices.Sorted(store.InputIDsOf(readings))
	if got, want := slices.Compact(got), []int64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("InputIDsOf = %v, want %v", got, want)
	}
}
