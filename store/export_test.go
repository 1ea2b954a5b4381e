package store

import (
	"encoding/binary"
	"math"
)

// SetTxAttempts sets how many times a transaction aborted as a deadlock's
// victim or a serialization failure runs in all, so that a test can see
// the first abort.
func (db *DB) SetTxAttempts(n int) { db.txAttempts = n }

// UpsertMax is the largest batch LockSensorWrite stores in its round trip.
const UpsertMax = upsertMax

// HourFirsts is hourFirsts, the hours of a batch LockSensorWrite sends.
var HourFirsts = hourFirsts

// DecodeFloats is decodeFloats, and DecodeFloatArray decodeArray of float8
// values, which it must agree with.
var DecodeFloats = decodeFloats

// DecodeValueBytes is decodeValueBytes.
var DecodeValueBytes = decodeValueBytes

func DecodeFloatArray(src []byte) ([]float64, error) {
	return decodeArray(src, nil, func(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) })
}

// LatestReadingsSQL is the statement of LatestReadings' rows, for a test
// of its plan.
const LatestReadingsSQL = latestReadingsSQL

// InputBucketsSQL is inputBucketsSQL, for a test of its plan.
var InputBucketsSQL = inputBucketsSQL
