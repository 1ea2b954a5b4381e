package store_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// TestHourFirsts holds the hours of ordered readings, and the first
// instant of each, to those found by truncating every reading's time, for
// readings apart by nothing to hours, on the hour and off it, in UTC and
// in a zone half an hour off it.
func TestHourFirsts(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	gaps := []time.Duration{0, time.Nanosecond, time.Second, 15 * time.Minute, 59 * time.Minute, time.Hour, 3 * time.Hour}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, loc := range []*time.Location{time.UTC, kolkata} {
		for range 200 {
			at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(8)) * 15 * time.Minute).In(loc)
			readings := make([]store.Reading, 1+rng.IntN(50))
			for i := range readings {
				readings[i].Time = at
				at = at.Add(gaps[rng.IntN(len(gaps))])
			}
			var wantHours, wantFirsts []time.Time
			for _, r := range readings {
				h := r.Time.Truncate(time.Hour)
				if n := len(wantHours); n == 0 || !wantHours[n-1].Equal(h) {
					wantHours, wantFirsts = append(wantHours, h), append(wantFirsts, r.Time)
				}
			}
			hours, firsts := store.HourFirsts(readings)
			if !slices.EqualFunc(hours, wantHours, time.Time.Equal) || !slices.EqualFunc(firsts, wantFirsts, time.Time.Equal) {
				t.Fatalf("HourFirsts(%v) = %v, %v, want %v, %v", readings, hours, firsts, wantHours, wantFirsts)
			}
		}
	}
}
