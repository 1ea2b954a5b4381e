package store_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

var rateWindowTests = []struct {
	name string
	w    store.RateWindow
}{
	{"Empty", store.RateWindow{Through: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), Version: 1}},
	{"SecondApart", store.RateWindow{Through: time.Date(2024, 5, 1, 12, 0, 2, 0, time.UTC), Version: 7,
		Micros: micros(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), time.Date(2024, 5, 1, 12, 0, 1, 0, time.UTC), time.Date(2024, 5, 1, 12, 0, 2, 0, time.UTC)),
		Values: []float64{1.5, -2, math.MaxFloat64}}},
	{"BeforeTheEpochToTheMicrosecond", store.RateWindow{Through: time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC),
		Micros: micros(time.Date(1969, 12, 31, 23, 59, 58, 999000, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC)),
		Values: []float64{0, math.SmallestNonzeroFloat64}}},
}

// TestRateWindowEncode: what a rule keeps reads back as it was written.
func TestRateWindowEncode(t *testing.T) {
	for _, tt := range rateWindowTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.ParseRateWindow(tt.w.Encode(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Through.Equal(tt.w.Through) || got.Version != tt.w.Version ||
				!slices.Equal(got.Micros, tt.w.Micros) || !slices.Equal(got.Values, tt.w.Values) {
				t.Errorf("ParseRateWindow(Encode(%+v)) = %+v", tt.w, got)
			}
		})
	}
	for _, b := range [][]byte{nil, {0x80}, {2, 2, 4, 0, 2}, append(rateWindowTests[1].w.Encode(), 0)} {
		if _, err := store.ParseRateWindow(b, 0); err == nil {
			t.Errorf("ParseRateWindow(%x) accepts a malformed window", b)
		}
	}
}

// FuzzParseRateWindow: no bytes make the parser panic, and what it
// accepts encodes back to the same bytes.
func FuzzParseRateWindow(f *testing.F) {
	for _, tt := range rateWindowTests {
		f.Add(tt.w.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := store.ParseRateWindow(b, 0)
		if err != nil {
			return
		}
		if again, err := store.ParseRateWindow(w.Encode(), 0); err != nil || !slices.Equal(again.Values, w.Values) && !hasNaN(w.Values) ||
			!slices.Equal(again.Micros, w.Micros) || again.Version != w.Version || !again.Through.Equal(w.Through) {
			t.Errorf("%x parses to %+v, which reads back as %+v (%v)", b, w, again, err)
		}
	})
}

func micros(ts ...time.Time) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.UnixMicro()
	}
	return out
}

func hasNaN(vs []float64) bool { return slices.ContainsFunc(vs, math.IsNaN) }
