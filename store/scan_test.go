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

// heldArray is a float8[] of values as a little-endian server holds it,
// readings_vals_bytes's answer where the role may make it so.
func heldArray(values ...float64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 1) // ndim
	b = binary.LittleEndian.AppendUint32(b, 0)    // no nulls
	b = binary.LittleEndian.AppendUint32(b, 701)  // float8
	b = binary.LittleEndian.AppendUint32(b, uint32(len(values)))
	b = binary.LittleEndian.AppendUint32(b, 1) // lower bound
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// FuzzDecodeValueBytes: no bytes make decodeValueBytes panic, and it
// decodes the values of a held array of them, bit for bit, whatever the
// fuzzer makes them.
func FuzzDecodeValueBytes(f *testing.F) {
	f.Add(floatArray(1, -0.5, math.Inf(1), 0x1p1000), false)
	f.Add(heldArray(1, -0.5, math.Inf(1), 0x1p1000), false)
	f.Add(heldArray(), false)
	f.Add(heldArray(1, 2)[:27], false)
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())), true)
	f.Fuzz(func(t *testing.T, b []byte, asValues bool) {
		got, err := store.DecodeValueBytes(b, []float64{7})
		if !asValues {
			return
		}
		values := make([]float64, 0, len(b)/8)
		for ; len(b) >= 8; b = b[8:] {
			values = append(values, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		sameBits := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
		if got, err = store.DecodeValueBytes(heldArray(values...), []float64{7}); err != nil || got[0] != 7 || !slices.EqualFunc(got[1:], values, sameBits) {
			t.Fatalf("decodeValueBytes(heldArray(%v)) = %v, %v; want 7 then them", values, got, err)
		}
	})
}

func TestDecodeValueBytes(t *testing.T) {
	want := []float64{1, -0.5, math.Inf(-1), 0x1p1000}
	for _, tt := range []struct {
		name    string
		b       []byte
		want    []float64
		wantErr bool
	}{
		{"held", heldArray(want...), want, false},
		{"sent", floatArray(want...), want, false},
		{"held, empty", append([]byte{0, 0, 0, 0}, heldArray()[4:12]...), nil, false},
		{"held, empty with a dimension", heldArray(), nil, false},
		{"held, a value short", heldArray(want...)[:20+8*4-1], nil, true},
		{"held, with nulls", func() []byte { b := heldArray(want...); b[4] = 28; return b }(), nil, true},
		{"held, two dimensions", func() []byte { b := heldArray(want...); b[0] = 2; return b }(), nil, true},
	} {
		got, err := store.DecodeValueBytes(tt.b, nil)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("%s: decodeValueBytes = %v, %v; want %v, error %t", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
