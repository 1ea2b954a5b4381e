package server

import (
	"encoding/json"
	"math"
	"testing"
)

// FuzzAppendNumber checks that readings are written exactly as
// encoding/json writes a float64, so that the hand-written encoder of the
// readings page is a drop-in for it.
func FuzzAppendNumber(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 0.1, 1.5, 2803.5, 1e-7, 1e-6, 9.99e-7, 1e20, 1e21, 1.7976931348623157e308,
		5e-324, -2e-7, 123456789.123, math.Copysign(0, -1)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return // never stored
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendNumber(nil, v)); got != string(want) {
			t.Fatalf("appendNumber(%v) = %s, encoding/json %s", v, got, want)
		}
	})
}
