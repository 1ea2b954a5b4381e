package store

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// RateWindow is what a rate rule keeps of its target's values between
// writes (alarm_rules.rate_kept): those of the readings from Through less
// the rule's window to Through, the sensor's newest reading when it was
// kept, as the rule sees them (flags applied), computed with the sensor's
// instance at Version (0 without one). The domain decides what it holds;
// the store keeps it.
type RateWindow struct {
	Through time.Time
	Version int64
	Micros  []int64 // the values' instants, in Unix microseconds, ascending
	Values  []float64
	// Sealed counts the first values, those kept in parts
	// (AlarmRule.RateParts), when read by ParseKept.
	Sealed int
}

// KeptPartLen is how many values a part of a kept window holds: under
// 8 kB encoded, whatever the instants (18 bytes a value at most), so that
// it stays in its row (migration 00063). Every part holds as many, so
// that the parts a read leaves out count their values.
const KeptPartLen = 440

// Encode is w as stored: the version, Through, the count, the first
// instant and each next one as a difference, in microseconds (varints),
// then each value's 8 bytes. A second apart, a value costs 11 bytes.
func (w RateWindow) Encode() []byte {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+len(w.Micros)*11)
	b = binary.AppendVarint(b, w.Version)
	b = binary.AppendVarint(b, w.Through.UnixMicro())
	b = binary.AppendUvarint(b, uint64(len(w.Micros)))
	var prev int64
	for i, us := range w.Micros {
		if i == 0 {
			b = binary.AppendVarint(b, us)
		} else {
			b = binary.AppendUvarint(b, uint64(us-prev))
		}
		prev = us
	}
	for _, v := range w.Values {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

var errRateWindow = errors.New("parse rate window: malformed")

// ParseRateWindow reads a window Encode wrote, with room in its slices
// for room more values, which a write appends.
func ParseRateWindow(b []byte, room int) (RateWindow, error) { return ParseKept(b, nil, room) }

// ParseKept reads what a rule keeps (AlarmRule.RateKept and RateParts),
// with room in its slices for room more values: Through and Version from
// head, the values of the parts, oldest first, then head's. Sealed counts
// those of the parts.
func ParseKept(head []byte, parts [][]byte, room int) (RateWindow, error) {
	return ParseKeptInto(RateWindow{}, head, parts, room)
}

// ParseKeptInto is ParseKept into the slices of into, whose values it
// overwrites, when they have the room: a write after write parses what
// its rules keep into the same memory, not into a window's worth of new
// slices each time.
func ParseKeptInto(into RateWindow, head []byte, parts [][]byte, room int) (RateWindow, error) {
	n := room
	for i := 0; i <= len(parts); i++ {
		b := head
		if i < len(parts) {
			b = parts[i]
		}
		_, _, count, _, err := windowHeader(b)
		if err != nil {
			return RateWindow{}, err
		}
		n += count
	}
	w := RateWindow{Micros: into.Micros[:0], Values: into.Values[:0]}
	if cap(w.Micros) < n {
		w.Micros = make([]int64, 0, n)
	}
	if cap(w.Values) < n {
		w.Values = make([]float64, 0, n)
	}
	for _, b := range parts {
		if err := w.decode(b); err != nil {
			return RateWindow{}, err
		}
	}
	w.Sealed = len(w.Micros)
	version, through, _, _, _ := windowHeader(head)
	if err := w.decode(head); err != nil {
		return RateWindow{}, err
	}
	w.Version, w.Through = version, through
	return w, nil
}

// KeptAt reads where what a rule keeps stands: its head's Through and
// Version, without reading its values.
func KeptAt(head []byte) (through time.Time, version int64, err error) {
	version, through, _, _, err = windowHeader(head)
	return through, version, err
}

// PartEnd is the last instant of a part of a kept window, in Unix
// microseconds: its Through, as the domain encodes it.
func PartEnd(part []byte) (int64, error) {
	_, through, _, _, err := windowHeader(part)
	return through.UnixMicro(), err
}

// windowHeader reads the version, Through and count of an encoded window,
// and the bytes after them.
func windowHeader(b []byte) (version int64, through time.Time, count int, rest []byte, err error) {
	version = takeVarint(&b, binary.Varint)
	through = time.UnixMicro(takeVarint(&b, binary.Varint)).UTC()
	n := takeVarint(&b, binary.Uvarint)
	if b == nil || n > uint64(len(b)/9) {
		return 0, time.Time{}, 0, nil, errRateWindow
	}
	return version, through, int(n), b, nil
}

// decode appends the values of the encoded window b to w's.
func (w *RateWindow) decode(b []byte) error {
	_, _, count, b, err := windowHeader(b)
	if err != nil {
		return err
	}
	var us int64
	for i := range count {
		if i == 0 {
			us = takeVarint(&b, binary.Varint)
		} else {
			us += int64(takeVarint(&b, binary.Uvarint))
		}
		w.Micros = append(w.Micros, us)
	}
	if b == nil || len(b) != 8*count {
		return errRateWindow
	}
	for i := range count {
		w.Values = append(w.Values, math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return nil
}

// takeVarint decodes a varint from *b with decode and moves past it, or sets *b
// to nil when there is none.
func takeVarint[T int64 | uint64](b *[]byte, decode func([]byte) (T, int)) T {
	v, n := decode(*b)
	if n <= 0 {
		*b = nil
		return 0
	}
	*b = (*b)[n:]
	return v
}

// ForgetRateWindows drops what the sensor's rate rules keep, in an edit
// that changes what their windows would hold (a flag, a delete, the
// sensor's formulas or rules), so that its next write reads them again.
func (tx *Tx) ForgetRateWindows(ctx context.Context, sensorID int64) error {
	_, err := tx.tx.Exec(ctx, `
WITH parts AS (
    DELETE FROM rate_kept_parts WHERE sensor_id = $1
)
UPDATE alarm_rules SET rate_kept = NULL, rate_kept_stamp = NULL WHERE sensor_id = $1 AND rate_kept IS NOT NULL`, sensorID)
	return dbError("forget rate windows", err)
}
