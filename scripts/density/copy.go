package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The binary COPY is written here field by field, as the service's store
// writes its own (store.copySource), rather than through pgx's CopyFrom,
// which asks PostgreSQL to describe the table first: a round trip and a
// statement the service does not pay.

const (
	int4OID        = 23
	int8OID        = 20
	float8OID      = 701
	timestamptzOID = 1184
)

var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// copyBuf is one COPY's stream.
type copyBuf struct {
	b    []byte
	rows int
}

func newCopyBuf() *copyBuf { return &copyBuf{b: append(make([]byte, 0, 1<<20), copySignature...)} }

func (c *copyBuf) row(fields int) {
	c.b = binary.BigEndian.AppendUint16(c.b, uint16(fields))
	c.rows++
}

func (c *copyBuf) int8(v int64) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v))
}

func (c *copyBuf) int4(v int32) {
	c.b = binary.BigEndian.AppendUint32(c.b, 4)
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(v))
}

func (c *copyBuf) null() { c.b = binary.BigEndian.AppendUint32(c.b, 0xffffffff) }

func micros(t time.Time) int64 { return t.Sub(postgresEpoch).Microseconds() }

func (c *copyBuf) time(t time.Time) { c.int8(micros(t)) }

// array8 appends a one-dimensional array of n 8-byte elements, each given
// by elem(i) as its bits.
func (c *copyBuf) array8(oid uint32, n int, elem func(i int) uint64) {
	be := binary.BigEndian
	c.b = be.AppendUint32(c.b, uint32(20+12*n))
	c.b = be.AppendUint32(c.b, 1)
	c.b = be.AppendUint32(c.b, 0)
	c.b = be.AppendUint32(c.b, oid)
	c.b = be.AppendUint32(c.b, uint32(n))
	c.b = be.AppendUint32(c.b, 1)
	for i := range n {
		c.b = be.AppendUint32(c.b, 8)
		c.b = be.AppendUint64(c.b, elem(i))
	}
}

func (c *copyBuf) ids(ids []int64) {
	c.array8(int8OID, len(ids), func(i int) uint64 { return uint64(ids[i]) })
}

func (c *copyBuf) floats(v []float64) {
	c.array8(float8OID, len(v), func(i int) uint64 { return math.Float64bits(v[i]) })
}

func (c *copyBuf) times(t []time.Time) {
	c.array8(timestamptzOID, len(t), func(i int) uint64 { return uint64(micros(t[i])) })
}

// send COPYs the stream into table's columns on conn.
func (c *copyBuf) send(ctx context.Context, conn *pgconn.PgConn, table, columns string) error {
	c.b = binary.BigEndian.AppendUint16(c.b, 0xffff)
	tag, err := conn.CopyFrom(ctx, bytes.NewReader(c.b), "COPY "+table+" ("+columns+") FROM STDIN (FORMAT binary)")
	if err != nil {
		return fmt.Errorf("copy into %s: %w", table, err)
	}
	if n := tag.RowsAffected(); n != int64(c.rows) {
		return fmt.Errorf("copy into %s: %d rows of %d", table, n, c.rows)
	}
	return nil
}
