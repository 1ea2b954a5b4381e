package sensing_test

import (
	"strings"
	"testing"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// TestOutputsFollowEdits reads a page with outputs after each edit of the
// sensor's instance, on the same Service: each read computes with the
// instance as edited, never with the one prepared for the read before.
func TestOutputsFollowEdits(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db) // p = u * i * k, k 2 by default
	ingest(t, core, f.key,
		store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{3, 5}},
		store.Reading{Time: minute(10), InputIDs: []int64{f.u(), f.i()}, Values: []float64{3, 5}})
	read := func() string {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		if err := core.ListReadings(ctx, f.key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		return strings.Join(sink.got, ", ")
	}
	edit := func(change func(*store.Instance)) {
		t.Helper()
		if _, err := core.EditInstance(ctx, f.key, func(inst *store.Instance) error { change(inst); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := read(), "12:00:00 30, 12:10:00 30"; got != want {
		t.Fatalf("before any edit, p = %s; want %s", got, want)
	}
	for _, tt := range []struct {
		name   string
		change func(*store.Instance)
		want   string
	}{
		{"Constant", func(inst *store.Instance) { inst.Constants[0].Value = new(3.0) }, "12:00:00 45, 12:10:00 45"},
		{"Calibration", func(inst *store.Instance) {
			inst.Constants[0].Calibrations = []store.Calibration{{From: minute(5), Value: 4}}
		}, "12:00:00 45, 12:10:00 60"},
		{"Formula", func(inst *store.Instance) { inst.Outputs[0].Formula = "u + i * k" }, "12:00:00 18, 12:10:00 23"},
		{"Baseline", func(inst *store.Instance) {
			inst.Inputs[0].Baselines = []store.Calibration{{From: minute(5), Value: 1}}
			inst.Outputs[0].Formula = "(u - u0) * i * k"
		}, "12:00:00 -, 12:10:00 40"},
	} {
		edit(tt.change)
		if got := read(); got != tt.want {
			t.Errorf("after the %s's edit, p = %s; want %s", tt.name, got, tt.want)
		}
	}
}
