package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyReadings COPYs readings of the sensor into readings in PostgreSQL's
// binary format, encoded here rather than by pgx's CopyFrom: that boxes
// each value of each row in an interface and encodes it through pgx's
// generic type map, for four columns whose types never change.
func copyReadings(ctx context.Context, conn *pgconn.PgConn, sensorID int64, readings []Reading) error {
	buf := copyBuffers.Get().(*[]byte)
	src := &copySource{sensorID: sensorID, readings: readings, buf: *buf}
	tag, err := conn.CopyFrom(ctx, src, "COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT binary)")
	if err != nil {
		// Not back to the pool: pgconn may return while its goroutine
		// still reads from src.
		return err
	}
	if cap(src.buf) <= 2*(copyChunk+copySlack) { // not grown by an outsized row
		*buf = src.buf[:0]
		copyBuffers.Put(buf)
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

// copySlack is room for the row that crosses copyChunk, so that the
// buffer is allocated once.
const copySlack = 4 << 10

// copyBuffers keeps the buffers of copySource between COPYs.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, copyChunk+copySlack)
	return &b
}}

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
// timestamptz, input_ids bigint[], vals float8[]). It grows b once and
// writes the row in place: a row is 10 to 20 times the work of its few
// values' bits when appended a field at a time.
func appendCopyRow(b []byte, sensorID int64, r *Reading) []byte {
	be := binary.BigEndian
	n := len(b)
	size := 2 + 12 + 12 + arraySize(len(r.InputIDs)) + arraySize(len(r.Values))
	b = slices.Grow(b, size)[:n+size]
	row := b[n:]
	be.PutUint16(row, 4)
	be.PutUint32(row[2:], 8)
	be.PutUint64(row[6:], uint64(sensorID))
	be.PutUint32(row[14:], 8)
	be.PutUint64(row[18:], uint64(r.Time.UnixMicro()-postgresEpochMicros))
	row = row[26:]
	row = putArrayHeader(row, int8OID, len(r.InputIDs))
	for _, v := range r.InputIDs {
		be.PutUint32(row, 8)
		be.PutUint64(row[4:], uint64(v))
		row = row[12:]
	}
	row = putArrayHeader(row, float8OID, len(r.Values))
	for _, v := range r.Values {
		be.PutUint32(row, 8)
		be.PutUint64(row[4:], math.Float64bits(v))
		row = row[12:]
	}
	return b
}

// arraySize is the size of a field holding a one-dimensional array of n
// 8-byte elements without nulls, its length included.
func arraySize(n int) int {
	if n == 0 {
		return 4 + 12
	}
	return 4 + 20 + 12*n
}

// putArrayHeader writes the length of an array field of n 8-byte elements
// without nulls, and the array's header: its dimensions, null flag,
// element type, and each dimension's size and lower bound. It returns what
// follows, where the elements go, each as its length and bits.
func putArrayHeader(b []byte, elemOID uint32, n int) []byte {
	be := binary.BigEndian
	if n == 0 {
		be.PutUint32(b, 12)
		be.PutUint32(b[4:], 0) // no dimensions
		be.PutUint32(b[8:], 0)
		be.PutUint32(b[12:], elemOID)
		return b[16:]
	}
	be.PutUint32(b, uint32(20+12*n))
	be.PutUint32(b[4:], 1) // dimensions
	be.PutUint32(b[8:], 0) // no nulls
	be.PutUint32(b[12:], elemOID)
	be.PutUint32(b[16:], uint32(n))
	be.PutUint32(b[20:], 1) // lower bound
	return b[24:]
}
