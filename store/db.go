// Package store keeps the service's data in PostgreSQL through pgx. Every
// method scopes its queries by the organization (and project, sensor) the
// caller named, so one tenant's ids never reach another tenant's rows.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/apperr"
)

// DB is the service's database.
type DB struct {
	pool   *pgxpool.Pool
	alarms AlarmEvaluator // nil: readings raise no alarms
}

// New returns a DB on pool. The caller owns the pool and closes it.
func New(pool *pgxpool.Pool) *DB {
	return &DB{pool: pool}
}

// querier is what both the pool and a transaction can do, so helpers run in
// either.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PoolStats is what the connection pool is doing, for the metrics.
type PoolStats struct {
	Max, Total, Idle, Acquired int32
	Acquires, EmptyAcquires    int64 // EmptyAcquires waited for a connection
	AcquireWait                time.Duration
}

// PoolStats reports the connection pool's state.
func (db *DB) PoolStats() PoolStats {
	s := db.pool.Stat()
	return PoolStats{
		Max: s.MaxConns(), Total: s.TotalConns(), Idle: s.IdleConns(), Acquired: s.AcquiredConns(),
		Acquires: s.AcquireCount(), EmptyAcquires: s.EmptyAcquireCount(), AcquireWait: s.AcquireDuration(),
	}
}

// Ping tells whether the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return dbError("ping", err)
	}
	return nil
}

// dbError maps a driver error to the service's error model, once, here:
// a client's bad value is Invalid, a duplicate is Conflict, a database that
// cannot be reached or answer in time is Unavailable, anything else Internal.
func dbError(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch {
		case pgErr.Code == "23505":
			return apperr.Wrap(apperr.Conflict, err, "%s: already exists", op)
		case pgErr.Code == "23503", pgErr.Code == "23514", pgErr.Code == "23502":
			return apperr.Wrap(apperr.Invalid, err, "%s: %s", op, pgErr.Message)
		case pgErr.Code[:2] == "22": // data exception: a value the column cannot hold
			return apperr.Wrap(apperr.Invalid, err, "%s: %s", op, pgErr.Message)
		case pgErr.Code[:2] == "08", pgErr.Code[:2] == "53", pgErr.Code[:2] == "57":
			// connection exceptions, insufficient resources, operator
			// intervention (shutdown, cancel, statement timeout)
			return apperr.Wrap(apperr.Unavailable, err, "the database is unavailable; retry later")
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return apperr.Wrap(apperr.Unavailable, err, "the database did not answer in time; retry later")
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return apperr.Wrap(apperr.Unavailable, err, "the database is unavailable; retry later")
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return apperr.Wrap(apperr.Unavailable, err, "the database is unavailable; retry later")
	}
	if pgconn.SafeToRetry(err) {
		return apperr.Wrap(apperr.Unavailable, err, "the database is unavailable; retry later")
	}
	return fmt.Errorf("%s: %w", op, err)
}

// notFound turns pgx.ErrNoRows into a NotFound naming what was missing.
func notFound(op string, err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.Errorf(apperr.NotFound, "%s not found", what)
	}
	return dbError(op, err)
}

// pageOf trims rows, fetched with a LIMIT of limit+1, to limit, and says
// whether there were more: one query tells both.
func pageOf[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}
