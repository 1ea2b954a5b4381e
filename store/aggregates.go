package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorreadings/readings/stats"
)

// BucketQuery cuts a sensor's readings from From (inclusive) to To
// (exclusive) into buckets Interval long, aligned in Zone: a bucket starts
// at a multiple of Interval after Monday 2000-01-03 00:00 local time, so
// that 1d buckets are local calendar days (23 or 25 hours on the days the
// clocks change) and 7d buckets start on Mondays.
type BucketQuery struct {
	From, To time.Time
	Interval time.Duration
	Zone     string // an IANA zone, UTC by default
	// Whether to compute the statistics that cost memory per bucket: the
	// first and last values (and so the rate), and the median.
	FirstLast, Median bool
}

// InputStats is an input's statistics over a bucket.
type InputStats struct {
	Bucket  time.Time
	InputID int64
	stats.Stats
}

// BucketCount is how many readings a bucket has.
type BucketCount struct {
	Bucket time.Time
	Count  int64
}

// bucketExpr is a reading's bucket. date_bin runs on the local wall-clock
// time (timestamp without time zone), so buckets follow the zone's
// calendar; AT TIME ZONE turns the bucket's local start back into an
// instant. It works the same on a plain table and on a hypertable, so one
// statement, tested on both, serves both.
const bucketExpr = `date_bin($4::interval, r.datetime AT TIME ZONE $5::text, TIMESTAMP '2000-01-03') AT TIME ZONE $5::text`

func (q BucketQuery) args(sensor Sensor) []any {
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	return []any{sensor.ID, q.From, q.To, pgtype.Interval{Microseconds: q.Interval.Microseconds(), Valid: true}, zone}
}

// BucketCounts returns how many readings each non-empty bucket holds, by
// bucket.
func (db *DB) BucketCounts(ctx context.Context, sensor Sensor, q BucketQuery) ([]BucketCount, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+bucketExpr+` AS bucket, count(*)
FROM readings r
WHERE r.sensor_id = $1 AND r.datetime >= $2 AND r.datetime < $3
GROUP BY 1 ORDER BY 1`, q.args(sensor)...)
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BucketCount])
	return counts, readError("bucket counts", err)
}

// InputBucketStats calls fn with each input's statistics over each
// bucket, ordered by bucket and input, as the rows arrive; fn's error stops
// the query and is returned as it is. Any finite values give statistics
// without an error: the sum is taken in two parts (see stats.Sums), and Avg lies
// between Min and Max; a Sum beyond float64 is ±Inf.
func (db *DB) InputBucketStats(ctx context.Context, sensor Sensor, q BucketQuery, fn func(*InputStats) error) error {
	firstLast, median := `NULL::float8, NULL::float8`, `NULL::float8, NULL::float8`
	if q.FirstLast {
		firstLast = `(array_agg(u.v ORDER BY r.datetime))[1], (array_agg(u.v ORDER BY r.datetime DESC))[1]`
	}
	if q.Median {
		// The two middle values, interpolated in Go: percentile_cont's
		// lo + (hi - lo) * 0.5 is infinite when hi - lo is beyond float64.
		median = `percentile_disc(0.5) WITHIN GROUP (ORDER BY u.v), percentile_disc(0.5) WITHIN GROUP (ORDER BY u.v DESC)`
	}
	// Not avg(), whose accumulated squares overflow from 1e155 on, nor a
	// plain sum(), which fails beyond float64: see stats.Sums.
	rows, err := db.pool.Query(ctx, `
SELECT `+bucketExpr+` AS bucket, u.id,
       count(*), coalesce(sum(u.v) FILTER (WHERE abs(u.v) < $6), 0),
       coalesce(sum(u.v * $7) FILTER (WHERE abs(u.v) >= $6), 0), min(u.v), max(u.v),
       `+firstLast+`, `+median+`, min(r.datetime), max(r.datetime)
FROM readings r CROSS JOIN LATERAL unnest(r.input_ids, r.vals) AS u(id, v)
WHERE r.sensor_id = $1 AND r.datetime >= $2 AND r.datetime < $3
GROUP BY 1, 2 ORDER BY 1, 2`, append(q.args(sensor), stats.SplitAt, 1/stats.SplitAt)...)
	if err != nil {
		return readError("input statistics", err)
	}
	defer rows.Close()
	var (
		s               InputStats
		sums            stats.Sums
		lowMid, highMid *float64
	)
	for rows.Next() {
		err := rows.Scan(&s.Bucket, &s.InputID, &s.Count, &sums.Lo, &sums.Hi, &s.Min, &s.Max,
			&s.First, &s.Last, &lowMid, &highMid, &s.FirstAt, &s.LastAt)
		if err != nil {
			return readError("input statistics", err)
		}
		s.Sum, s.Avg = sums.Sum(), sums.Mean(s.Count, s.Min, s.Max)
		s.Median = nil
		if lowMid != nil && highMid != nil {
			m := stats.Midpoint(*lowMid, *highMid)
			s.Median = &m
		}
		if err := fn(&s); err != nil {
			return err
		}
	}
	return readError("input statistics", rows.Err())
}

// BucketReadings calls fn with each reading of the range in time order,
// with its bucket, as the rows arrive; fn must not keep the Reading.
func (db *DB) BucketReadings(ctx context.Context, sensor Sensor, q BucketQuery, fn func(bucket time.Time, r *Reading) error) error {
	rows, err := db.pool.Query(ctx, `
SELECT `+bucketExpr+` AS bucket, r.datetime, r.input_ids, r.vals
FROM readings r
WHERE r.sensor_id = $1 AND r.datetime >= $2 AND r.datetime < $3
ORDER BY r.datetime`, q.args(sensor)...)
	if err != nil {
		return readError("bucket readings", err)
	}
	defer rows.Close()
	var (
		bucket  time.Time
		reading Reading
	)
	for rows.Next() {
		if err := rows.Scan(&bucket, &reading.Time, &reading.InputIDs, &reading.Values); err != nil {
			return readError("bucket readings", err)
		}
		if err := fn(bucket, &reading); err != nil {
			return err
		}
	}
	return readError("bucket readings", rows.Err())
}

// Buckets returns the start of every bucket of the range, empty or not.
func (db *DB) Buckets(ctx context.Context, q BucketQuery) ([]time.Time, error) {
	args := q.args(Sensor{})[1:]
	rows, _ := db.pool.Query(ctx, `
SELECT g AT TIME ZONE $4::text
FROM generate_series(
    date_bin($3::interval, $1::timestamptz AT TIME ZONE $4::text, TIMESTAMP '2000-01-03'),
    ($2::timestamptz AT TIME ZONE $4::text) - interval '1 microsecond',
    $3::interval) AS g`, args...)
	starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	return starts, dbError("buckets", err)
}
