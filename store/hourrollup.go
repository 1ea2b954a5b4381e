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

// packQuarters appends the quarters, packed, to b.
func packQuarters(b []byte, quarters *[4]Quarter) []byte {
	for _, q := range quarters {
		outputs := int64(len(q.Outputs))
		if q.Outputs == nil {
			outputs = -1
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(q.Count))
		b = binary.LittleEndian.AppendUint64(b, uint64(len(q.Inputs)))
		b = binary.LittleEndian.AppendUint64(b, uint64(outputs))
		b = packSeries(b, q.Inputs)
		b = packSeries(b, q.Outputs)
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
		n := inputs + max(outputs, 0)
		if inputs < 0 || n*seriesBytes > len(b) {
			return fmt.Errorf("packed quarter %d: %d series in %d bytes", k, n, len(b))
		}
		var err error
		q.Count = count
		if q.Inputs, err = unpackSeries(b[:inputs*seriesBytes], q.Inputs[:0]); err != nil {
			return err
		}
		b = b[inputs*seriesBytes:]
		if outputs < 0 {
			q.Outputs = nil
			continue
		}
		if q.Outputs, err = unpackSeries(b[:outputs*seriesBytes], q.Outputs[:0]); err != nil {
			return err
		}
		if q.Outputs == nil {
			q.Outputs = []Series{}
		}
		b = b[outputs*seriesBytes:]
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

// seriesBytes is a series' size in a packed rollup: its id, count, the
// two parts of its sum, minimum, maximum, first value and time, last
// value and time, 8 bytes each, little-endian; times in microseconds from
// 1970.
const seriesBytes = 80

// packSeries appends s to b, packed.
func packSeries(b []byte, s []Series) []byte {
	for i := range s {
		p := &s[i].Partial
		for _, u := range [...]uint64{
			uint64(s[i].ID), uint64(p.Count), math.Float64bits(p.Sums.Lo), math.Float64bits(p.Sums.Hi),
			math.Float64bits(p.Min), math.Float64bits(p.Max), math.Float64bits(p.First), uint64(p.FirstAt.UnixMicro()),
			math.Float64bits(p.Last), uint64(p.LastAt.UnixMicro()),
		} {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
	}
	return b
}

// unpackSeries appends the series packed in b to dst.
func unpackSeries(b []byte, dst []Series) ([]Series, error) {
	if len(b)%seriesBytes != 0 {
		return dst, fmt.Errorf("packed rollup of %d bytes, not a multiple of %d", len(b), seriesBytes)
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	f := func(i int) float64 { return math.Float64frombits(u(i)) }
	for ; len(b) > 0; b = b[seriesBytes:] {
		dst = append(dst, Series{ID: int64(u(0)), Partial: stats.Partial{
			Count: int64(u(1)), Sums: stats.Sums{Lo: f(2), Hi: f(3)}, Min: f(4), Max: f(5),
			First: f(6), FirstAt: time.UnixMicro(int64(u(7))).UTC(), Last: f(8), LastAt: time.UnixMicro(int64(u(9))).UTC(),
		}})
	}
	return dst, nil
}
