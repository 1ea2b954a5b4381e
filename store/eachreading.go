package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// eachReading runs query, whose rows are a key (a bucket, an hour) and a
// reading's datetime, input ids and values, in time order, and calls fn
// with each, as the rows arrive; fn must not keep the reading. fn's
// errors are returned as they are; the database's are op's.
func eachReading(ctx context.Context, tx pgx.Tx, op, query string, args []any, fn func(key time.Time, r *Reading) error) error {
	var (
		key time.Time
		r   Reading
	)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return readError(op, err)
	}
	err = scanKeyedReadings(rows, &key, &r, func() error { return fn(key, &r) })
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err
	}
	return readError(op, err)
}

// scanKeyedReadings scans each row of rows into key and r, as the
// readings' own scanner does (binary, reusing r's slices), and calls fn.
func scanKeyedReadings(rows pgx.Rows, key *time.Time, r *Reading, fn func() error) error {
	defer rows.Close()
	binary := binaryColumns(rows, 4)
	for rows.Next() {
		var err error
		if binary {
			raw := rows.RawValues()
			if *key, err = decodeTimestamptz(raw[0]); err == nil {
				err = decodeReading(raw[1:], r)
			}
		} else {
			err = rows.Scan(key, &r.Time, &r.InputIDs, &r.Values)
		}
		if err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}
