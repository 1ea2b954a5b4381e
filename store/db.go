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
	pool       *pgxpool.Pool
	limits     Limits
	txAttempts int // inTx's attempts in all
	instances  *instanceCache
}

// DefaultMaxSensorInputs is how many distinct input ids a sensor without a
// blueprint may have unless New is told otherwise: as many as a blueprint
// may have inputs.
const DefaultMaxSensorInputs = 100

// New returns a DB on pool. The caller owns the pool and closes it. The
// collections clients grow are capped by limits, DefaultLimits when none
// is given, and by DefaultLimits' value for each field of 0.
func New(pool *pgxpool.Pool, limits ...Limits) *DB {
	var l Limits
	if len(limits) > 0 {
		l = limits[0]
	}
	return &DB{pool: pool, limits: l.withDefaults(), txAttempts: DefaultTxAttempts, instances: &instanceCache{}}
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

// dbError maps a driver error to the service's error model, once, here:
// a client's bad value is Invalid, a duplicate is Conflict, a database that
// cannot be reached or answer in time is Unavailable, anything else Internal.
// The client's message is always ours: PostgreSQL's own names tables,
// columns and constraints. Its error stays the cause, for the log.
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
		case retryable(err):
			// A deadlock's victim or a serialization failure, after inTx's
			// attempts: nothing of it was stored, and the same request may
			// well pass a moment later.
			return apperr.Wrap(apperr.Unavailable, err, "%s: it met concurrent writes and was undone, storing nothing; retry it", op)
		case pgErr.Code[:2] == "22", pgErr.Code[:2] == "23":
			return apperr.Wrap(apperr.Invalid, err, "%s: %s", op, invalidValue(pgErr.Code))
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

// invalidValue says, for a data exception (22…) or an integrity
// constraint violation (23…), what was wrong with the value, in our words.
// The API checks values before they reach the database, so these are the
// checks' last line; the spec's rules are the ones a client should read.
func invalidValue(code string) string {
	switch code {
	case "22021", "22P05": // character_not_in_repertoire, untranslatable_character
		return "a text holds a character that cannot be stored, such as a NUL byte"
	case "22001": // string_data_right_truncation
		return "a text is too long"
	case "22003", "22008": // numeric_value_out_of_range, datetime_field_overflow
		return "a value is out of range"
	case "23503": // foreign_key_violation
		return "it refers to something that does not exist or is in use"
	case "23502": // not_null_violation
		return "a required value is missing"
	case "23514": // check_violation
		return "a value is outside what is allowed"
	}
	return "a value is not valid"
}

// readError is dbError for a read of stored data: a data exception there is
// not the client's mistake but ours (stored data that a statement cannot
// handle), so it is Internal, logged, and never a 400.
func readError(op string, err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code[:2] == "22" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return dbError(op, err)
}

// notFound turns pgx.ErrNoRows into a NotFound naming what was missing.
func notFound(op string, err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.Errorf(apperr.NotFound, "%s not found", what)
	}
	return dbError(op, err)
}

// collectPage scans rows, fetched with a LIMIT of limit+1, into a page of
// at most limit T by column name, and says whether there were more: one
// query tells both. Errors are op's.
func collectPage[T any](op string, rows pgx.Rows, limit int) ([]T, bool, error) {
	page, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, false, dbError(op, err)
	}
	page, more := pageOf(page, limit)
	return page, more, nil
}

// pageOf trims rows, fetched with a LIMIT of limit+1, to limit, and says
// whether there were more.
func pageOf[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}
