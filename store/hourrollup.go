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
