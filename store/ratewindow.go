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
}

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
func ParseRateWindow(b []byte, room int) (RateWindow, error) {
	var w RateWindow
	w.Version = takeVarint(&b, binary.Varint)
	w.Through = time.UnixMicro(takeVarint(&b, binary.Varint)).UTC()
	count := takeVarint(&b, binary.Uvarint)
	if b == nil || count > uint64(len(b)/9) {
		return RateWindow{}, errRateWindow
	}
	w.Micros = make([]int64, count, int(count)+room)
	w.Values = make([]float64, count, int(count)+room)
	var us int64
	for i := range w.Micros {
		if i == 0 {
			us = takeVarint(&b, binary.Varint)
		} else {
			us += int64(takeVarint(&b, binary.Uvarint))
		}
		w.Micros[i] = us
	}
	if b == nil || len(b) != 8*len(w.Values) {
		return RateWindow{}, errRateWindow
	}
	for i := range w.Values {
		w.Values[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return w, nil
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
	_, err := tx.tx.Exec(ctx, `UPDATE alarm_rules SET rate_kept = NULL WHERE sensor_id = $1 AND rate_kept IS NOT NULL`, sensorID)
	return dbError("forget rate windows", err)
}
