package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// readingScanner reads rows of (datetime, input_ids, vals) from
// PostgreSQL's binary format straight into one Reading, reusing its slices
// from row to row. pgx's generic array codec allocates two slices a row and
// goes through reflection; on a page of 1,000 readings that was a fifth of
// the service's time (BenchmarkListReadings compares the two).
type readingScanner struct {
	binary bool // the server sent the columns in binary; else pgx scans
	// ids is the sensor's set of input ids, from the row that gives it
	// (withSensorIDs), which the readings whose ids are NULL have; ok
	// once that row came.
	ids []int64
	ok  bool
}

func newReadingScanner(rows pgx.Rows) readingScanner {
	return readingScanner{binary: binaryColumns(rows, 3)}
}

// binaryColumns tells whether rows has n columns, all sent in binary but
// those at eitherFormat, which may come in either.
func binaryColumns(rows pgx.Rows, n int, eitherFormat ...int) bool {
	fields := rows.FieldDescriptions()
	binary := len(fields) == n
	for i, f := range fields {
		binary = binary && (f.Format == pgtype.BinaryFormatCode || slices.Contains(eitherFormat, i))
	}
	return binary
}

// ScanReadings calls fn with each row of rows, columns (datetime,
// input_ids, vals), in one reused Reading that fn must not keep, but for
// a row with a NULL datetime, whose input ids are those of each later row
// whose ids are NULL (withSensorIDs). It is how the store reads readings;
// scripts/bench reads the raw figure with it too.
func ScanReadings(rows pgx.Rows, fn func(*Reading) error) error {
	defer rows.Close()
	scanner := newReadingScanner(rows)
	var reading Reading
	for rows.Next() {
		ok, err := scanner.scan(rows, &reading)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := fn(&reading); err != nil {
			return err
		}
	}
	return rows.Err()
}

// postgresEpochMicros is where timestamptz's binary form counts
// microseconds from: 2000-01-01 UTC, in microseconds from 1970.
const postgresEpochMicros = 946_684_800_000_000

// scan reads a row into r, and reports whether it was a reading: else it
// was the sensor's set of input ids, which s keeps.
func (s *readingScanner) scan(rows pgx.Rows, r *Reading) (bool, error) {
	if !s.binary {
		return s.scanText(rows, r)
	}
	raw := rows.RawValues()
	if raw[0] == nil {
		return false, s.set(decodeArray(raw[1], s.ids[:0], decodeInt64))
	}
	if err := decodeReading(raw, r, s.ids, s.ok); err != nil {
		return false, err
	}
	return true, nil
}

// scanText is scan of a row pgx scans.
func (s *readingScanner) scanText(rows pgx.Rows, r *Reading) (bool, error) {
	var (
		at   pgtype.Timestamptz
		ids  []int64
		vals any = &r.Values
		raw  []byte
	)
	if rows.FieldDescriptions()[2].DataTypeOID == pgtype.ByteaOID {
		vals = &raw // readings_vals_bytes's
	}
	if err := rows.Scan(&at, &ids, vals); err != nil {
		return false, err
	}
	if raw != nil {
		var err error
		if r.Values, err = decodeValueBytes(raw, r.Values[:0]); err != nil {
			return false, fmt.Errorf("vals: %w", err)
		}
	}
	if !at.Valid {
		return false, s.set(ids, nil)
	}
	r.Time = at.Time
	if ids == nil {
		if !s.ok {
			return false, errNoSensorIDs
		}
		ids = s.ids
	}
	r.InputIDs = append(r.InputIDs[:0], ids...)
	return true, nil
}

// set keeps ids as the sensor's set of input ids.
func (s *readingScanner) set(ids []int64, err error) error {
	if err != nil {
		return fmt.Errorf("input ids of the sensor: %w", err)
	}
	s.ids, s.ok = ids, true
	return nil
}

var errNoSensorIDs = errors.New("input_ids: NULL before the sensor's set of input ids")

func decodeInt64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// decodeReading decodes a reading's datetime, input ids and values from
// PostgreSQL's binary format, the values a float8[] or readings_vals_bytes's
// (decodeValueBytes); NULL input ids are ids, the sensor's set, when
// known.
func decodeReading(raw [][]byte, r *Reading, ids []int64, known bool) error {
	var err error
	if r.Time, err = decodeTimestamptz(raw[0]); err != nil {
		return fmt.Errorf("datetime: %w", err)
	}
	switch {
	case raw[1] != nil:
		if r.InputIDs, err = decodeArray(raw[1], r.InputIDs[:0], decodeInt64); err != nil {
			return fmt.Errorf("input_ids: %w", err)
		}
	case known:
		r.InputIDs = append(r.InputIDs[:0], ids...)
	default:
		return errNoSensorIDs
	}
	if r.Values, err = decodeValueBytes(raw[2], r.Values[:0]); err != nil {
		return fmt.Errorf("vals: %w", err)
	}
	return nil
}

// decodeTimestamptz decodes a timestamptz in PostgreSQL's binary format.
func decodeTimestamptz(b []byte) (time.Time, error) {
	if len(b) != 8 {
		return time.Time{}, fmt.Errorf("%d bytes, want 8", len(b))
	}
	// Not epoch.Add(Duration): a Duration holds only ±292 years, and
	// readings run from year 1 to 9999.
	return time.UnixMicro(int64(binary.BigEndian.Uint64(b)) + postgresEpochMicros).UTC(), nil
}

// decodeArray appends the elements of a one-dimensional array of 8-byte
// values without nulls, in PostgreSQL's binary format: ndim, flags,
// element type, then length and lower bound per dimension, then each
// element as a length and its bytes.
func decodeArray[T any](src []byte, dst []T, element func([]byte) T) ([]T, error) {
	elements, err := arrayElements(src)
	if err != nil {
		return nil, err
	}
	dst = slices.Grow(dst, len(elements)/12)
	for i := 0; len(elements) >= 12; i, elements = i+1, elements[12:] {
		if binary.BigEndian.Uint32(elements) != 8 {
			return nil, fmt.Errorf("element %d is not 8 bytes", i)
		}
		dst = append(dst, element(elements[4:12]))
	}
	return dst, nil
}

// decodeFloats is decodeArray of float8 values, without a call a value:
// a reading's ten values took half as long.
func decodeFloats(src []byte, dst []float64) ([]float64, error) {
	elements, err := arrayElements(src)
	if err != nil {
		return nil, err
	}
	dst = slices.Grow(dst, len(elements)/12)
	for i := 0; len(elements) >= 12; i, elements = i+1, elements[12:] {
		if binary.BigEndian.Uint32(elements) != 8 {
			return nil, fmt.Errorf("element %d is not 8 bytes", i)
		}
		dst = append(dst, math.Float64frombits(binary.BigEndian.Uint64(elements[4:12])))
	}
	return dst, nil
}

// decodeValueBytes appends the values of readings_vals_bytes's answer
// (migration 00073): the float8[] as the server holds it (ndim, data
// offset, element type, then length and lower bound per dimension, then
// the values, 8 bytes each, little-endian: the migration makes it so only
// where the server lays them out so), or, where the migration could not,
// the array's binary form (decodeFloats). The element type tells the two
// apart: at bytes 8 to 11, little-endian in the one, big-endian in the
// other.
func decodeValueBytes(src []byte, dst []float64) ([]float64, error) {
	if len(src) < 12 || binary.LittleEndian.Uint32(src[8:]) != float8OID {
		return decodeFloats(src, dst)
	}
	switch ndim := binary.LittleEndian.Uint32(src); {
	case ndim == 0 && len(src) == 12:
		return dst, nil
	case ndim != 1 || binary.LittleEndian.Uint32(src[4:]) != 0 || len(src) < 20:
		return nil, fmt.Errorf("not a one-dimensional array without nulls")
	}
	n := int(binary.LittleEndian.Uint32(src[12:]))
	if src = src[20:]; len(src) != n*8 {
		return nil, fmt.Errorf("%d values in %d bytes", n, len(src))
	}
	dst = slices.Grow(dst, n)
	for ; len(src) >= 8; src = src[8:] {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(src)))
	}
	return dst, nil
}

// arrayElements returns the elements of a one-dimensional array of 8-byte
// values without nulls in PostgreSQL's binary format (ndim, flags,
// element type, then length and lower bound per dimension), each a length
// and its bytes, 12 apart: none, with an error, if src is not such an
// array.
func arrayElements(src []byte) ([]byte, error) {
	if len(src) < 12 {
		return nil, fmt.Errorf("%d bytes is no array", len(src))
	}
	ndim := binary.BigEndian.Uint32(src)
	if ndim == 0 {
		return nil, nil
	}
	if ndim != 1 || binary.BigEndian.Uint32(src[4:]) != 0 || len(src) < 20 {
		return nil, fmt.Errorf("not a one-dimensional array without nulls")
	}
	n := int(binary.BigEndian.Uint32(src[12:]))
	if src = src[20:]; len(src) != n*12 {
		return nil, fmt.Errorf("%d elements in %d bytes", n, len(src))
	}
	return src, nil
}
