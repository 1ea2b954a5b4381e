package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is a transaction of the DB. The store's methods that take part in a
// write the domain makes of several steps (store the readings, step the
// alarms, keep the newest reading) are methods of Tx, so that the domain
// runs the transaction and its steps share it; the store calls nothing
// back. A Tx is valid only inside the function given to InTx, InTxOnce or
// InSnapshot. Its methods return the service's errors, as the DB's do.
type Tx struct {
	tx     pgx.Tx
	limits Limits
	pool   *pgxpool.Pool // the DB's, for Beside
}

// DefaultTxAttempts is how many times a transaction that PostgreSQL aborts
// as a deadlock's victim or a serialization failure runs in all, unless
// the DB is told otherwise.
const DefaultTxAttempts = 4

// txPause is the longest pause before the first retry; it doubles for each
// one after.
const txPause = 10 * time.Millisecond

// InTx runs fn in a transaction (READ COMMITTED), committed when fn
// returns nil and rolled back otherwise, and runs it again, whole, when
// PostgreSQL aborted it as a deadlock's victim or a serialization failure
// (SQLSTATE 40P01, 40001), up to the DB's attempts in all, after a pause
// drawn at random so that the transactions that met do not meet again. An
// aborted attempt keeps nothing and its caller has acknowledged nothing,
// so fn runs as if for the first time: it must set its results afresh and
// consume nothing it cannot read again (InTxOnce). After the last attempt
// the error is Unavailable. fn's own errors are returned as they are.
//
// A write takes its locks in one order, so that no two writes wait for
// each other: the project (shared), then the sensor, then the chunks of
// readings it writes, each locked to write it before anything reads it
// (docs/reliability.md).
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	return dbError("write", db.inTx(ctx, pgx.TxOptions{}, db.txFunc(fn)))
}

// InTxOnce is InTx for a write that cannot run twice: one that consumes a
// stream, which is gone once read. An abort is answered Unavailable at
// once, nothing of it stored, for the client to send the stream again.
func (db *DB) InTxOnce(ctx context.Context, fn func(*Tx) error) error {
	return dbError("write", pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, db.txFunc(fn)))
}

// InSnapshot runs fn in a read-only REPEATABLE READ transaction: all its
// statements read one snapshot, so that what several of them read agrees.
// A data exception there is Internal, not the client's (readError).
func (db *DB) InSnapshot(ctx context.Context, fn func(*Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return readError("read", pgx.BeginTxFunc(ctx, db.pool, opts, db.txFunc(fn)))
}

func (db *DB) txFunc(fn func(*Tx) error) func(pgx.Tx) error {
	return func(tx pgx.Tx) error { return fn(&Tx{tx: tx, limits: db.limits, pool: db.pool}) }
}

// inTx runs fn in a transaction, as pgx.BeginTxFunc does, and runs it
// again as InTx says.
func (db *DB) inTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, db.pool, opts, fn)
		if err == nil || attempt >= db.txAttempts || !retryable(err) {
			return err
		}
		pause := time.Duration(rand.Int64N(int64(txPause << (attempt - 1))))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// retryable tells whether err aborted a transaction that is safe to run
// again as it was: PostgreSQL chose it as a deadlock's victim, or could not
// serialize it.
func retryable(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// besideWait bounds how long Beside waits for a connection the pool says
// it has to spare: one being opened, or taken meanwhile by another request.
const besideWait = 100 * time.Millisecond

// Beside starts fn in a read-only transaction on a connection of its own
// that reads the same snapshot as tx, which must be InSnapshot's (an
// exported snapshot, as pg_dump's parallel jobs read one), so that one
// read can use two of PostgreSQL's cores. It takes that connection only
// when the pool will have another to spare once it has: a read never
// takes the last, nor waits for one. It says whether it started fn; wait
// waits for fn to end and returns its error. tx must not be used while
// fn runs, other than by the caller's own goroutine.
func (tx *Tx) Beside(ctx context.Context, fn func(*Tx) error) (wait func() error, started bool, err error) {
	if st := tx.pool.Stat(); st.AcquiredConns()+1 >= st.MaxConns() {
		return nil, false, nil
	}
	var snapshot string
	if err := tx.tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, false, readError("export snapshot", err)
	}
	acquireCtx, cancel := context.WithTimeout(ctx, besideWait)
	conn, err := tx.pool.Acquire(acquireCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, dbError("beside", ctx.Err())
		}
		return nil, false, nil
	}
	side, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err == nil {
		_, err = side.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`)
		if err != nil {
			side.Rollback(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		conn.Release()
		return nil, false, readError("beside", err)
	}
	done := make(chan error, 1)
	go func() {
		defer conn.Release()
		err := fn(&Tx{tx: side, limits: tx.limits, pool: tx.pool})
		// Read-only: nothing to commit but the end of the transaction.
		if rerr := side.Rollback(context.WithoutCancel(ctx)); err == nil && rerr != nil {
			err = readError("beside", rerr)
		}
		done <- err
	}()
	return func() error { return <-done }, true, nil
}
