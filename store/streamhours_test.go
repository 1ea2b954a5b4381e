package store

import (
	"slices"
	"testing"
	"time"
)

// TestStreamHours notes the hours of readings in order, out of order and
// hours apart: each hour once, ascending, and none at all past
// maxStreamHours, where the queue reads them from the readings instead.
func TestStreamHours(t *testing.T) {
	t0 := time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC)
	at := func(minutes ...int) []time.Time {
		var ts []time.Time
		for _, m := range minutes {
			ts = append(ts, t0.Add(time.Duration(m)*time.Minute))
		}
		return ts
	}
	for _, tc := range []struct {
		name  string
		times []time.Time
		want  []time.Time
	}{
		{"InOrder", at(0, 1, 59, 60, 61, 185), at(0, 60, 180)},
		{"BackAndForth", at(125, 0, 130, 61, 5, -1), at(-60, 0, 60, 120)},
		{"BeforeTheEpoch", []time.Time{time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC)}, []time.Time{time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h streamHours
			for _, ts := range tc.times {
				h.note(ts)
			}
			got, ok := h.list()
			if !ok || !slices.Equal(got, tc.want) {
				t.Errorf("list() = %v, %v, want %v, true", got, ok, tc.want)
			}
		})
	}
	t.Run("TooMany", func(t *testing.T) {
		var h streamHours
		for i := range maxStreamHours + 1 {
			h.note(t0.Add(time.Duration(i) * time.Hour))
		}
		if got, ok := h.list(); ok || got != nil {
			t.Errorf("list() of %d hours = %d hours, %v, want none, false", maxStreamHours+1, len(got), ok)
		}
	})
}
