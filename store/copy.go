package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyReadings COPYs readings of the sensor into readings in PostgreSQL's
// binary format, encoded here rather than by pgx's CopyFrom: that boxes
// each value of each row in an interface and encodes it through pgx's
// generic type map, for four columns whose types never change.
func copyReadings(ctx context.Context, conn *pgconn.PgConn, sensorID int64, readings []Reading) error {
	src := &copySource{sensorID: sensorID, readings: readings}
	tag, err := conn.CopyFrom(ctx, src, "COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT binary)")
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != int64(len(readings)) {
		return fmt.Errorf("copy readings: %d rows of %d", n, len(readings))
	}
	return nil
}

// CopyReadings is the service's COPY of a batch on conn, with no lock, no
// check and no transaction but conn's: the limit ingest approaches,
// for the bench. Readings must be new, each at its own instant.
func CopyReadings(ctx context.Context, conn *pgconn.PgConn, sensorID int64, readings []Reading) error {
	return dbError("copy readings", copyReadings(ctx, conn, sensorID, readings))
}

// WriteReadings is ingest's storage alone, in tx, without the lock on the
// sensor or the checks of the batch: the limit ingest approaches, for the
// bench. With rollups it also queues the batch's hours for their rollups,
// as ingest does. The sensor's newest reading, which tells whether the
// batch can go straight in, is read from sensor_latest and kept there, as
// ingest does: readings written otherwise (CopyReadings) need it filled
// in. Concurrent calls for one sensor are unsafe.
func WriteReadings(ctx context.Context, tx pgx.Tx, sensorID int64, readings []Reading, rollups bool) (Written, error) {
	var newest *time.Time
	err := tx.QueryRow(ctx, `SELECT (SELECT datetime FROM sensor_latest WHERE sensor_id = $1)`, sensorID).Scan(&newest)
	if err != nil {
		return Written{}, dbError("write readings", err)
	}
	ordered := LastPerInstant(readings)
	written, err := insertReadings(ctx, tx, sensorID, ordered, newest, rollups)
	if err == nil && len(ordered) > 0 {
		last := ordered[len(ordered)-1]
		_, err = tx.Exec(ctx, keepLatestSQL, sensorID, last.Time, last.InputIDs, last.Values)
	}
	return written, dbError("write readings", err)
}

// copySource encodes rows as the COPY reads them, a few tens of kilobytes
// at a time, so that a batch of 10,000 readings is not held twice in
// memory.
type copySource struct {
	sensorID int64
	readings []Reading // still to encode
	started  bool
	done     bool   // the trailer is encoded
	buf      []byte // encoded rows
	pending  []byte // of buf, not yet read
}

// copyChunk is how much copySource encodes at a time: about half of the
// 64 KiB that pgconn reads for each CopyData message.
const copyChunk = 32 << 10

func (s *copySource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for n < len(p) {
		if len(s.pending) == 0 {
			if s.done {
				break
			}
			s.encode()
		}
		c := copy(p[n:], s.pending)
		s.pending = s.pending[c:]
		n += c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// encode fills pending with the next rows, the header before the first and
// the trailer after the last.
func (s *copySource) encode() {
	b := s.buf[:0]
	if !s.started {
		b = append(b, copySignature...)
		s.started = true
	}
	for len(s.readings) > 0 && len(b) < copyChunk {
		b = appendCopyRow(b, s.sensorID, &s.readings[0])
		s.readings = s.readings[1:]
	}
	if len(s.readings) == 0 {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
		s.done = true
	}
	s.buf, s.pending = b, b
}

// The binary COPY format: a signature, flags and a header extension length,
// then each row as a field count and each field as its length and bytes,
// then -1.
const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

const (
	int8OID   = 20
	float8OID = 701
)

// appendCopyRow appends r as a row of (sensor_id bigint, datetime
// timestamptz, input_ids bigint[], vals float8[]).
func appendCopyRow(b []byte, sensorID int64, r *Reading) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 4)
	b = be.AppendUint32(b, 8)
	b = be.AppendUint64(b, uint64(sensorID))
	b = be.AppendUint32(b, 8)
	b = be.AppendUint64(b, uint64(r.Time.UnixMicro()-postgresEpochMicros))
	b = appendArray(b, int8OID, r.InputIDs, func(v int64) uint64 { return uint64(v) })
	return appendArray(b, float8OID, r.Values, math.Float64bits)
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
