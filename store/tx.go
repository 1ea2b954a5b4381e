package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultTxAttempts is how many times a transaction that PostgreSQL aborts
// as a deadlock's victim or a serialization failure runs in all, unless
// the DB is told otherwise.
const DefaultTxAttempts = 4

// txPause is the longest pause before the first retry; it doubles for each
// one after.
const txPause = 10 * time.Millisecond

// inTx runs fn in a transaction, as pgx.BeginTxFunc does, and runs it
// again, whole, when PostgreSQL aborted it as a deadlock's victim or a
// serialization failure (SQLSTATE 40P01, 40001), up to db.txAttempts times
// in all, after a pause drawn at random so that the transactions that met
// do not meet again. An aborted attempt keeps nothing and its caller has
// acknowledged nothing, so fn runs as if for the first time: it must set
// its results afresh and consume nothing it cannot read again (a stream is
// not retried: InsertReadingStream). After the last attempt the error is
// returned, and dbError makes it Unavailable.
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
