package store_test

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/sensorreadings/readings/store"
)

// floatArray is a float8[] of values in PostgreSQL's binary format.
func floatArray(values ...float64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1) // ndim
	b = binary.BigEndian.AppendUint32(b, 0)    // no nulls
	b = binary.BigEndian.AppendUint32(b, 701)  // float8
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, v := range values {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// FuzzDecodeFloats: no bytes make decodeFloats panic, and it decodes what
// decodeArray decodes, or fails where it fails.
func FuzzDecodeFloats(f *testing.F) {
	f.Add(floatArray(1, -0.5, math.Inf(1), 0x1p1000))
	f.Add(floatArray())
	f.Add(binary.BigEndian.AppendUint32(nil, 0))
	f.Add(floatArray(1, 2)[:30])
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := store.DecodeFloats(b, []float64{7})
		want, werr := store.DecodeFloatArray(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("decodeFloats(%x) error %v, decodeArray's %v", b, err, werr)
		}
		sameBits := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
		if err == nil && (got[0] != 7 || !slices.EqualFunc(got[1:], want, sameBits)) {
			t.Fatalf("decodeFloats(%x) = %v, want 7 then decodeArray's %v", b, got, want)
		}
	})
}

func TestDecodeFloats(t *testing.T) {
	want := []float64{1, -0.5, math.Inf(-1), 0x1p1000}
	got, err := store.DecodeFloats(floatArray(want...), nil)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("decodeFloats = %v, %v; want %v", got, err, want)
	}
	bad := floatArray(1, 2)
	binary.BigEndian.PutUint32(bad[20+12:], 4) // the second element of 4 bytes
	if got, err := store.DecodeFloats(bad, nil); err == nil {
		t.Errorf("decodeFloats of an element of 4 bytes = %v, want an error", got)
	}
}
