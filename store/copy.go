package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
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

// copySource encodes rows as the COPY reads them, straight into the
// buffer pgconn sends each CopyData message from (64 KiB), so that a
// batch's rows are neither held whole nor copied once more. A row that
// does not fit in what is left of a read waits for the next; one larger
// than a whole read is staged, and given in pieces.
type copySource struct {
	sensorID int64
	readings []Reading // still to encode
	started  bool
	done     bool   // the trailer is given
	pending  []byte // of the header, the trailer or a staged row, not yet read
	ids      idsField
}

// The binary COPY's header and trailer, as pending.
var (
	copyHeader  = []byte(copySignature)
	copyTrailer = []byte{0xff, 0xff}
)

func (s *copySource) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case len(s.pending) > 0:
			c := copy(p[n:], s.pending)
			s.pending = s.pending[c:]
			n += c
		case !s.started:
			s.started, s.pending = true, copyHeader
		case len(s.readings) > 0:
			r := &s.readings[0]
			size := copyRowSize(r)
			if n+size > len(p) {
				if n > 0 {
					return n, nil
				}
				staged := make([]byte, size)
				putCopyRow(staged, s.sensorID, r, s.ids.of(r.InputIDs))
				s.pending = staged
			} else {
				putCopyRow(p[n:n+size], s.sensorID, r, s.ids.of(r.InputIDs))
				n += size
			}
			s.readings = s.readings[1:]
		case !s.done:
			s.done, s.pending = true, copyTrailer
		default:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
	return n, nil
}

// The binary COPY format: a signature, flags and a header extension length,
// then each row as a field count and each field as its length and bytes,
// then -1.
const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

const (
	int8OID   = 20
	float8OID = 701
)

// copyRowSize is the size of r's row in the binary COPY.
func copyRowSize(r *Reading) int {
	return 2 + 12 + 12 + arraySize(len(r.InputIDs)) + arraySize(len(r.Values))
}

// appendCopyRow appends r as a row of (sensor_id bigint, datetime
// timestamptz, input_ids bigint[], vals float8[]), its ids' field taken
// from ids. It grows b once and writes the row in place: a row is 10 to 20
// times the work of its few values' bits when appended a field at a time.
func appendCopyRow(b []byte, sensorID int64, r *Reading, ids *idsField) []byte {
	n := len(b)
	size := copyRowSize(r)
	b = slices.Grow(b, size)[:n+size]
	putCopyRow(b[n:], sensorID, r, ids.of(r.InputIDs))
	return b
}

// putCopyRow writes r as a row at the start of row, which has room for it
// (copyRowSize), with idField, its ids' array field as encoded already.
func putCopyRow(row []byte, sensorID int64, r *Reading, idField []byte) {
	be := binary.BigEndian
	be.PutUint16(row, 4)
	be.PutUint32(row[2:], 8)
	be.PutUint64(row[6:], uint64(sensorID))
	be.PutUint32(row[14:], 8)
	be.PutUint64(row[18:], uint64(r.Time.UnixMicro()-postgresEpochMicros))
	row = row[26+copy(row[26:], idField):]
	row = putArrayHeader(row, float8OID, len(r.Values))
	for _, v := range r.Values {
		be.PutUint32(row, 8)
		be.PutUint64(row[4:], math.Float64bits(v))
		row = row[12:]
	}
}

// idsField is the input ids' array field of the row encoded last. A
// batch's readings mostly have the ids of the one before: their field is
// copied rather than encoded again, id by id.
type idsField struct {
	ids   []int64 // a copy: a stream's reading is not kept past the next
	field []byte
}

// of returns the array field of ids, valid until the next call.
func (f *idsField) of(ids []int64) []byte {
	if f.field != nil && slices.Equal(ids, f.ids) {
		return f.field
	}
	f.ids = append(f.ids[:0], ids...)
	f.field = slices.Grow(f.field[:0], arraySize(len(ids)))[:arraySize(len(ids))]
	row := putArrayHeader(f.field, int8OID, len(ids))
	be := binary.BigEndian
	for _, v := range ids {
		be.PutUint32(row, 8)
		be.PutUint64(row[4:], uint64(v))
		row = row[12:]
	}
	return f.field
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
