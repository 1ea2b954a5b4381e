package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig tunes the connection pool.
type PoolConfig struct {
	MaxConns int32 // 0 keeps pgxpool's default
	// Lazy skips the check that the database answers: a standby may be
	// down when the service starts, and its readers fall back meanwhile.
	Lazy bool
	// Tracer, if set, sees every statement the pool's connections run (the
	// tests count round trips with it).
	Tracer pgx.QueryTracer
	// ReadBuffer, if above pgx's 8 kB, is how much a connection reads of
	// its socket at once, held for the connection's life: a page's rows
	// come as PostgreSQL's 8 kB sends, and a service busy encoding finds
	// several waiting, which one read then takes.
	ReadBuffer int
}

// Open connects a pool to databaseURL and, unless pc.Lazy, checks that the
// database answers.
// Times come back in UTC, whatever the server's or the process's zone.
func Open(ctx context.Context, databaseURL string, pc PoolConfig) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if pc.MaxConns > 0 {
		cfg.MaxConns = pc.MaxConns
	}
	if pc.Tracer != nil {
		cfg.ConnConfig.Tracer = pc.Tracer
	}
	if pc.ReadBuffer > 8<<10 {
		size := pc.ReadBuffer
		cfg.ConnConfig.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
			return pgproto3.NewFrontend(bufio.NewReaderSize(r, size), w)
		}
	}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		conn.TypeMap().RegisterType(&pgtype.Type{
			Name:  "timestamptz",
			OID:   pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	if pc.Lazy {
		return pool, nil
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}
