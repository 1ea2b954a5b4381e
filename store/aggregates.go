package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorreadings/readings/apperr"
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
	// Raw reads the readings alone, never the rollups: what the rollups
	// are checked against.
	Raw bool
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

// RollupUse says where an answer came from.
type RollupUse string

// The answers' sources, as the X-Rollups header names them.
const (
	RollupsUsed    RollupUse = "used"    // every bucket from rollups
	RollupsPartial RollupUse = "partial" // rollups and readings
	RollupsNone    RollupUse = "none"    // readings alone
)

// bucketOfReading and bucketOfHour are the bucket of a reading r and of
// an hour x of the rollups. date_bin runs on the local wall-clock time
// (timestamp without time zone), so buckets follow the zone's calendar; AT
// TIME ZONE turns the bucket's local start back into an instant. It works
// the same on a plain table and on a hypertable, so one statement, tested
// on both, serves both.
const (
	bucketOfReading = `date_bin($4::interval, r.datetime AT TIME ZONE $5::text, TIMESTAMP '2000-01-03') AT TIME ZONE $5::text`
	bucketOfHour    = `date_bin($4::interval, x.hour AT TIME ZONE $5::text, TIMESTAMP '2000-01-03') AT TIME ZONE $5::text`
)

// The statements below take $1 the sensor, [$2, $3) the hours read from
// the rollups, $4 and $5 the interval and zone, and $6 and $7 the starts
// and ends of the spans read from the readings: within [$2, $3), the
// rollups of an hour in a span are not read.
const (
	// spansSQL are the readings of the spans, with their bucket, a scan of
	// each span's range. OFFSET 0 keeps the planner from joining the spans
	// to every reading of the sensor, which it prefers on compressed
	// chunks, and has the bucket computed once a reading, not once an
	// input.
	spansSQL = `unnest($6::timestamptz[], $7::timestamptz[]) AS w(a, b)
CROSS JOIN LATERAL (
    SELECT ` + bucketOfReading + ` AS bucket, r.datetime, r.input_ids, r.vals
    FROM readings r WHERE r.sensor_id = $1 AND r.datetime >= w.a AND r.datetime < w.b OFFSET 0
) r`
	notInSpans = `NOT EXISTS (SELECT FROM unnest($6::timestamptz[], $7::timestamptz[]) AS w(a, b) WHERE x.hour >= w.a AND x.hour < w.b)`

	bucketCountsSQL = `
SELECT bucket, sum(n)::bigint FROM (
    SELECT ` + bucketOfHour + ` AS bucket, x.n FROM rollup_hours x
    WHERE x.sensor_id = $1 AND x.hour >= $2 AND x.hour < $3 AND ` + notInSpans + `
    UNION ALL
    SELECT r.bucket, count(*) FROM ` + spansSQL + ` GROUP BY 1
) p GROUP BY 1 ORDER BY 1`

	// bucketReadingsSQL names $2 and $3, which it has no use for, so that
	// PostgreSQL knows their type.
	bucketReadingsSQL = `
SELECT r.bucket, r.datetime, r.input_ids, r.vals FROM ` + spansSQL + `
WHERE $2::timestamptz <= $3::timestamptz ORDER BY r.datetime`
)

// outputRollupsSQL merges the rollups of each output per bucket, so that
// a row per bucket and output reaches Go, not one per hour; the first and
// last values only when asked for (0 stands in otherwise).
func outputRollupsSQL(q BucketQuery) string {
	first, last := `0::float8`, `0::float8`
	if q.FirstLast {
		first, last = `(array_agg(x.first ORDER BY x.first_at))[1]`, `(array_agg(x.last ORDER BY x.last_at DESC))[1]`
	}
	return `
SELECT ` + bucketOfHour + ` AS bucket, x.id, sum(x.n)::bigint, sum(x.sum_lo), sum(x.sum_hi), min(x.min), max(x.max),
       ` + first + `, min(x.first_at), ` + last + `, max(x.last_at)
FROM rollup_outputs x
WHERE x.sensor_id = $1 AND x.hour >= $2 AND x.hour < $3 AND ` + notInSpans + `
GROUP BY 1, 2`
}

// inputStatsSQL merges, per bucket and input, the hours of the rollups
// outside the spans with the readings of the spans, aggregated per bucket
// first. Not avg(), whose accumulated squares overflow from 1e155 on, nor
// a plain sum(), which fails beyond float64: see stats.Sums.
func inputStatsSQL(q BucketQuery) string {
	rawFirst, rawLast, mergedFL := `NULL::float8`, `NULL::float8`, `NULL::float8, NULL::float8`
	if q.FirstLast {
		rawFirst, rawLast = `(array_agg(u.v ORDER BY r.datetime))[1]`, `(array_agg(u.v ORDER BY r.datetime DESC))[1]`
		mergedFL = `(array_agg(f ORDER BY fa))[1], (array_agg(l ORDER BY la DESC))[1]`
	}
	return `
SELECT bucket, id, sum(n)::bigint, sum(lo), sum(hi), min(mn), max(mx), ` + mergedFL + `, min(fa), max(la)
FROM (
    SELECT ` + bucketOfHour + ` AS bucket, x.id, x.n, x.sum_lo AS lo, x.sum_hi AS hi, x.min AS mn, x.max AS mx,
           x.first AS f, x.first_at AS fa, x.last AS l, x.last_at AS la
    FROM rollup_inputs x
    WHERE x.sensor_id = $1 AND x.hour >= $2 AND x.hour < $3 AND ` + notInSpans + `
    UNION ALL
    SELECT r.bucket, u.id, count(*), coalesce(sum(u.v) FILTER (WHERE abs(u.v) < $8), 0),
           coalesce(sum(u.v * $9) FILTER (WHERE abs(u.v) >= $8), 0), min(u.v), max(u.v),
           ` + rawFirst + `, min(r.datetime), ` + rawLast + `, max(r.datetime)
    FROM ` + spansSQL + ` CROSS JOIN LATERAL unnest(r.input_ids, r.vals) AS u(id, v)
    GROUP BY 1, 2
) p GROUP BY 1, 2 ORDER BY 1, 2`
}

// BucketCounts returns how many readings each bucket of the plan with
// readings has, by bucket.
func (tx *Tx) BucketCounts(ctx context.Context, plan BucketPlan) ([]BucketCount, error) {
	rows, _ := tx.tx.Query(ctx, bucketCountsSQL, plan.args(plan.inputs)...)
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BucketCount])
	return counts, readError("bucket counts", err)
}

// InputStats gives fn each input's statistics over each bucket of the
// plan, by bucket and input, as the rows arrive; fn must not keep them.
// fn's errors are returned as they are.
func (tx *Tx) InputStats(ctx context.Context, plan BucketPlan, fn func(*InputStats) error) error {
	rows, err := tx.tx.Query(ctx, inputStatsSQL(plan.q), append(plan.args(plan.inputs), stats.SplitAt, 1/stats.SplitAt)...)
	if err != nil {
		return readError("input stats", err)
	}
	defer rows.Close()
	var (
		s    InputStats
		sums stats.Sums
	)
	for rows.Next() {
		err := rows.Scan(&s.Bucket, &s.InputID, &s.Count, &sums.Lo, &sums.Hi, &s.Min, &s.Max, &s.First, &s.Last, &s.FirstAt, &s.LastAt)
		if err != nil {
			return readError("input stats", err)
		}
		s.Sum, s.Avg = sums.Sum(), sums.Mean(s.Count, s.Min, s.Max)
		if err := fn(&s); err != nil {
			return err
		}
	}
	return readError("input stats", rows.Err())
}

// OutputRollups gives fn, for each bucket of the plan and output, the
// merged statistics of the output's rollups of the hours the plan reads
// from the rollups; fn must not keep p. Few rows (a bucket's per output)
// come back, the merging done in SQL.
func (tx *Tx) OutputRollups(ctx context.Context, plan BucketPlan, fn func(bucket time.Time, outputID int64, p *stats.Partial) error) error {
	if !plan.h0.Before(plan.h1) {
		return nil
	}
	rows, err := tx.tx.Query(ctx, outputRollupsSQL(plan.q), plan.args(plan.outputs)...)
	if err != nil {
		return readError("output rollups", err)
	}
	var (
		bucket time.Time
		id     int64
		p      stats.Partial
	)
	_, err = pgx.ForEachRow(rows, []any{&bucket, &id, &p.Count, &p.Sums.Lo, &p.Sums.Hi, &p.Min, &p.Max, &p.First, &p.FirstAt, &p.Last, &p.LastAt},
		func() error { return fn(bucket, id, &p) })
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err // fn's
	}
	return readError("output rollups", err)
}

// BucketReadings gives fn, in time order, each reading the plan reads
// from the readings, with its bucket: those of the inputs' spans, or with
// outputs those of the outputs' spans. fn must not keep the reading; its
// errors are returned as they are.
func (tx *Tx) BucketReadings(ctx context.Context, plan BucketPlan, outputs bool, fn func(bucket time.Time, r *Reading) error) error {
	s := plan.inputs
	if outputs {
		s = plan.outputs
	}
	return eachReading(ctx, tx.tx, "bucket readings", bucketReadingsSQL, plan.args(s), fn)
}

// Buckets returns the start of every bucket of the range, empty or not.
func (db *DB) Buckets(ctx context.Context, q BucketQuery) ([]time.Time, error) {
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	rows, _ := db.pool.Query(ctx, `
SELECT g AT TIME ZONE $4::text
FROM generate_series(
    date_bin($3::interval, $1::timestamptz AT TIME ZONE $4::text, TIMESTAMP '2000-01-03'),
    ($2::timestamptz AT TIME ZONE $4::text) - interval '1 microsecond',
    $3::interval) AS g`, q.From, q.To, pgtype.Interval{Microseconds: q.Interval.Microseconds(), Valid: true}, zone)
	starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	return starts, dbError("buckets", err)
}
