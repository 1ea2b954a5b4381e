package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/jackc/pgx/v5"
)

// copyReadings COPYs readings of the sensor into table in PostgreSQL's
// binary format, encoded here rather than by pgx's CopyFrom: that boxes
// each value of each row in an interface and encodes it through pgx's
// generic type map, which was 13 % of the service's CPU while ingesting
// (make bench -profile) for four columns whose types never change.
func copyReadings(ctx context.Context, tx pgx.Tx, table string, sensorID int64, readings []Reading) error {
	buf := copyBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 4<<20 {
			copyBuffers.Put(buf)
		}
	}()
	buf.Reset()
	buf.Write(appendCopyData(buf.AvailableBuffer(), sensorID, readings))
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, buf,
		"COPY "+table+" (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT binary)")
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != int64(len(readings)) {
		return fmt.Errorf("copy into %s: %d rows of %d", table, n, len(readings))
	}
	return nil
}

var copyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// The binary COPY format: a signature, flags and a header extension length,
// then each row as a field count and each field as its length and bytes,
// then -1.
const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

const (
	int8OID   = 20
	float8OID = 701
)

// appendCopyData appends readings as rows of (sensor_id bigint, datetime
// timestamptz, input_ids bigint[], vals float8[]).
func appendCopyData(b []byte, sensorID int64, readings []Reading) []byte {
	be := binary.BigEndian
	b = append(b, copySignature...)
	for i := range readings {
		r := &readings[i]
		b = be.AppendUint16(b, 4)
		b = be.AppendUint32(b, 8)
		b = be.AppendUint64(b, uint64(sensorID))
		b = be.AppendUint32(b, 8)
		b = be.AppendUint64(b, uint64(r.Time.UnixMicro()-postgresEpochMicros))
		b = appendArray(b, int8OID, r.InputIDs, func(v int64) uint64 { return uint64(v) })
		b = appendArray(b, float8OID, r.Values, math.Float64bits)
	}
	return be.AppendUint16(b, 0xffff)
}

// appendArray appends a one-dimensional array of 8-byte elements without
// nulls: its length, then dimensions, null flag, element type, and each
// dimension's size and lower bound, then each element's length and bits.
func appendArray[T int64 | float64](b []byte, elemOID uint32, values []T, bits func(T) uint64) []byte {
	be := binary.BigEndian
	if len(values) == 0 {
		b = be.AppendUint32(b, 12)
		b = be.AppendUint32(b, 0) // no dimensions
		b = be.AppendUint32(b, 0)
		return be.AppendUint32(b, elemOID)
	}
	b = be.AppendUint32(b, uint32(20+12*len(values)))
	b = be.AppendUint32(b, 1) // dimensions
	b = be.AppendUint32(b, 0) // no nulls
	b = be.AppendUint32(b, elemOID)
	b = be.AppendUint32(b, uint32(len(values)))
	b = be.AppendUint32(b, 1) // lower bound
	for _, v := range values {
		b = be.AppendUint32(b, 8)
		b = be.AppendUint64(b, bits(v))
	}
	return b
}
