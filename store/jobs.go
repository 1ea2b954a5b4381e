package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

const claimJobSQL = `
SELECT finished_at IS NULL OR finished_at <= now() - make_interval(secs => $2)
FROM background_jobs WHERE name = $1
FOR UPDATE SKIP LOCKED`

// RunJob runs the background job name when no replica of the service is
// running it and none has finished it within every, and tells whether it
// ran. The job's row stays locked while fn runs, so a replica that asks
// meanwhile skips it at once; a replica that dies mid-job drops its
// connection, and with it the lock. Times are the database's, so replicas'
// clocks play no part. A failed fn is not recorded, and the next tick of
// any replica tries again. fn must be bounded: it holds a connection.
func (db *DB) RunJob(ctx context.Context, name string, every time.Duration, fn func(context.Context) error) (ran bool, err error) {
	if _, err := db.pool.Exec(ctx, `INSERT INTO background_jobs (name) VALUES ($1) ON CONFLICT DO NOTHING`, name); err != nil {
		return false, dbError("run job "+name, err)
	}
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var due bool
		if err := tx.QueryRow(ctx, claimJobSQL, name, every.Seconds()).Scan(&due); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // another replica holds it
			}
			return err
		}
		if !due {
			return nil
		}
		if err := fn(ctx); err != nil {
			return err
		}
		ran = true
		_, err := tx.Exec(ctx, `UPDATE background_jobs SET finished_at = clock_timestamp() WHERE name = $1`, name)
		return err
	})
	if err != nil {
		return false, dbError("run job "+name, err)
	}
	return ran, nil
}
