package store

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"testing"
	"time"
)

// copyStream is the whole COPY that src gives, read n bytes at a time as
// pgconn reads it.
func copyStream(t testing.TB, src io.Reader, n int) []byte {
	var out []byte
	p := make([]byte, n)
	for {
		c, err := src.Read(p)
		out = append(out, p[:c]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if c == 0 {
			t.Fatal("Read returned nothing and no error")
		}
	}
}

// wantCopyStream is the binary COPY of readings, written field by field
// as PostgreSQL's documentation spells the format, without the encoder's
// shortcuts.
func wantCopyStream(sensorID int64, readings []Reading) []byte {
	be := binary.BigEndian
	b := []byte("PGCOPY\n\xff\r\n\x00")
	b = be.AppendUint32(b, 0) // flags
	b = be.AppendUint32(b, 0) // header extension
	array := func(b []byte, oid uint32, elems []uint64) []byte {
		var a []byte
		if len(elems) == 0 {
			a = be.AppendUint32(a, 0)
			a = be.AppendUint32(a, 0)
			a = be.AppendUint32(a, oid)
		} else {
			a = be.AppendUint32(a, 1)
			a = be.AppendUint32(a, 0)
			a = be.AppendUint32(a, oid)
			a = be.AppendUint32(a, uint32(len(elems)))
			a = be.AppendUint32(a, 1)
			for _, e := range elems {
				a = be.AppendUint32(a, 8)
				a = be.AppendUint64(a, e)
			}
		}
		b = be.AppendUint32(b, uint32(len(a)))
		return append(b, a...)
	}
	for _, r := range readings {
		b = be.AppendUint16(b, 4)
		b = be.AppendUint32(b, 8)
		b = be.AppendUint64(b, uint64(sensorID))
		b = be.AppendUint32(b, 8)
		b = be.AppendUint64(b, uint64(r.Time.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()))
		var ids, vals []uint64
		for _, id := range r.InputIDs {
			ids = append(ids, uint64(id))
		}
		for _, v := range r.Values {
			vals = append(vals, math.Float64bits(v))
		}
		b = array(b, 20, ids)
		b = array(b, 701, vals)
	}
	return be.AppendUint16(b, 0xffff)
}

// TestCopySource reads the COPY of readings whose ids are shared with the
// reading before (as a decoded batch's are), equal to them in another
// slice, different, and empty, in reads of every size from smaller than
// a row's field to larger than the whole, and holds it to
// wantCopyStream: the rows written straight into the reader's buffer, a
// row that does not fit staged, and the ids' field copied from the row
// before.
func TestCopySource(t *testing.T) {
	shared := []int64{1, 2, 3}
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	readings := []Reading{
		{Time: t0, InputIDs: shared, Values: []float64{1, 2, 3}},
		{Time: t0.Add(time.Second), InputIDs: shared, Values: []float64{4, 5, 6}},
		{Time: t0.Add(2 * time.Second), InputIDs: []int64{1, 2, 3}, Values: []float64{7, math.Copysign(0, -1), math.Inf(1)}},
		{Time: t0.Add(3 * time.Second), InputIDs: []int64{1, 2, 4}, Values: []float64{7, 8, 9}},
		{Time: t0.Add(4 * time.Second), InputIDs: []int64{1, 2}, Values: []float64{1, 2}},
		{Time: t0.Add(5 * time.Second), InputIDs: []int64{}, Values: []float64{}},
		{Time: t0.Add(6 * time.Second), InputIDs: []int64{}, Values: []float64{}},
		{Time: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC), InputIDs: []int64{math.MaxInt64}, Values: []float64{-1}},
		{Time: t0.Add(7 * time.Second), InputIDs: shared, Values: []float64{1, 2, 3}},
	}
	for range 200 {
		readings = append(readings, Reading{Time: readings[len(readings)-1].Time.Add(time.Second), InputIDs: shared, Values: []float64{0.1, 0.2, 0.3}})
	}
	want := wantCopyStream(42, readings)
	for _, n := range []int{1, 2, 7, 19, 64, 100, 1000, 4096, 65531, len(want) + 1} {
		got := copyStream(t, &copySource{sensorID: 42, readings: readings}, n)
		if !bytes.Equal(got, want) {
			t.Errorf("reads of %d bytes: %d bytes, want %d; first difference at %d", n, len(got), len(want), firstDifference(got, want))
		}
	}
	t.Run("Empty", func(t *testing.T) {
		if got, want := copyStream(t, &copySource{sensorID: 1}, 65531), wantCopyStream(1, nil); !bytes.Equal(got, want) {
			t.Errorf("got %x, want %x", got, want)
		}
	})
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkCopySource encodes the COPY of a batch of 1,000 readings of
// 10 inputs that share their ids, as a decoded batch does, read as pgconn
// reads it (65,531 bytes at a time).
func BenchmarkCopySource(b *testing.B) {
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	readings := make([]Reading, 1000)
	for i := range readings {
		vals := make([]float64, len(ids))
		for k := range vals {
			vals[k] = float64(i)*1.37 + float64(k)
		}
		readings[i] = Reading{Time: t0.Add(time.Duration(i) * time.Second), InputIDs: ids, Values: vals}
	}
	p := make([]byte, 65531)
	b.ReportAllocs()
	for b.Loop() {
		src := &copySource{sensorID: 7, readings: readings}
		for {
			if _, err := src.Read(p); err == io.EOF {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(readings)), "ns/reading")
}
