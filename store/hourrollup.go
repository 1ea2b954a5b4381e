package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/sensorreadings/readings/stats"
)

// HourRollup is a sensor's rollup of a UTC hour: how many readings it
// has, each input's and each output's statistics over it, and the version
// of the sensor's formulas the outputs were computed with.
type HourRollup struct {
	Hour    time.Time
	Count   int64
	Version int64
	Inputs  []Series // by input id
	// Outputs are nil where they are not rolled up (a sensor with linked
	// inputs): never an answer's.
	Outputs []Series
	// Whole is false for a row written before its statistics were kept
	// in it (migration 00060): it is read from the readings.
	Whole bool
	// Quarters are the same of each quarter of the hour: kept by the
	// maintainer, read by QuarterRollups alone.
	Quarters [4]Quarter
}

// Quarter is a sensor's rollup of a quarter of an hour.
type Quarter struct {
	Count           int64
	Inputs, Outputs []Series // Outputs nil where the hour's are
}

// quarterHeader is the size of a quarter's header in a packed rollup: its
// count, and how many inputs and outputs follow (-1 outputs: nil).
const quarterHeader = 24

// packQuarters appends the quarters, packed, to b: for each, a header,
// then the cores of its inputs and outputs, then their edges.
func packQuarters(b []byte, quarters *[4]Quarter) []byte {
	for _, q := range quarters {
		outputs := int64(len(q.Outputs))
		if q.Outputs == nil {
			outputs = -1
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(q.Count))
		b = binary.LittleEndian.AppendUint64(b, uint64(len(q.Inputs)))
		b = binary.LittleEndian.AppendUint64(b, uint64(outputs))
		b = packCore(b, q.Inputs)
		b = packCore(b, q.Outputs)
		b = packEdges(b, q.Inputs)
		b = packEdges(b, q.Outputs)
	}
	return b
}

// unpackQuarters unpacks the quarters packed in b into dst, reusing its
// slices.
func unpackQuarters(b []byte, dst *[4]Quarter) error {
	for k := range dst {
		q := &dst[k]
		if len(b) < quarterHeader {
			return fmt.Errorf("packed quarters end in quarter %d", k)
		}
		count, inputs, outputs := int64(binary.LittleEndian.Uint64(b)), int(binary.LittleEndian.Uint64(b[8:])), int(int64(binary.LittleEndian.Uint64(b[16:])))
		b = b[quarterHeader:]
		if inputs < 0 || (inputs+max(outputs, 0))*seriesBytes > len(b) {
			return fmt.Errorf("packed quarter %d: %d and %d series in %d bytes", k, inputs, outputs, len(b))
		}
		var err error
		q.Count = count
		if q.Inputs, err = unpackCore(b[:inputs*coreBytes], q.Inputs[:0]); err != nil {
			return err
		}
		b = b[inputs*coreBytes:]
		q.Outputs = q.Outputs[:0]
		if outputs >= 0 {
			if q.Outputs, err = unpackCore(b[:outputs*coreBytes], q.Outputs); err != nil {
				return err
			}
			if q.Outputs == nil {
				q.Outputs = []Series{}
			}
			b = b[outputs*coreBytes:]
		} else {
			q.Outputs = nil
		}
		if b, err = unpackEdges(b, q.Inputs); err != nil {
			return err
		}
		if b, err = unpackEdges(b, q.Outputs); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("packed quarters: %d bytes more", len(b))
	}
	return nil
}

// Series is one input's or output's statistics over an hour.
type Series struct {
	ID int64
	stats.Partial
}

// A series is packed in two parts, 8 bytes a field, little-endian: its
// core (id, count, the two parts of its sum, minimum, maximum), which
// every aggregate reads, and its edges (first value and time, last value
// and time, times in microseconds from 1970), which only first, last and
// rate need.
const (
	coreBytes   = 48
	edgesBytes  = 32
	seriesBytes = coreBytes + edgesBytes
)

// packCore appends the cores of s to b.
func packCore(b []byte, s []Series) []byte {
	for i := range s {
		p := &s[i].Partial
		for _, u := range [...]uint64{uint64(s[i].ID), uint64(p.Count), math.Float64bits(p.Sums.Lo), math.Float64bits(p.Sums.Hi),
			math.Float64bits(p.Min), math.Float64bits(p.Max)} {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
	}
	return b
}

// packEdges appends the edges of s to b.
func packEdges(b []byte, s []Series) []byte {
	for i := range s {
		p := &s[i].Partial
		for _, u := range [...]uint64{math.Float64bits(p.First), uint64(p.FirstAt.UnixMicro()), math.Float64bits(p.Last), uint64(p.LastAt.UnixMicro())} {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
	}
	return b
}

// unpackCore appends the series whose cores are packed in b to dst,
// without their edges.
func unpackCore(b []byte, dst []Series) ([]Series, error) {
	if len(b)%coreBytes != 0 {
		return dst, fmt.Errorf("packed rollup of %d bytes, not a multiple of %d", len(b), coreBytes)
	}
	for ; len(b) > 0; b = b[coreBytes:] {
		u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
		f := func(i int) float64 { return math.Float64frombits(u(i)) }
		dst = append(dst, Series{ID: int64(u(0)), Partial: stats.Partial{
			Count: int64(u(1)), Sums: stats.Sums{Lo: f(2), Hi: f(3)}, Min: f(4), Max: f(5),
		}})
	}
	return dst, nil
}

// unpackEdges sets the edges of s, packed at the start of b, and returns
// the bytes of b after them.
func unpackEdges(b []byte, s []Series) ([]byte, error) {
	if len(b) < len(s)*edgesBytes {
		return b, fmt.Errorf("packed edges of %d series in %d bytes", len(s), len(b))
	}
	for i := range s {
		u := func(k int) uint64 { return binary.LittleEndian.Uint64(b[8*k:]) }
		p := &s[i].Partial
		p.First, p.FirstAt = math.Float64frombits(u(0)), time.UnixMicro(int64(u(1))).UTC()
		p.Last, p.LastAt = math.Float64frombits(u(2)), time.UnixMicro(int64(u(3))).UTC()
		b = b[edgesBytes:]
	}
	return b, nil
}
