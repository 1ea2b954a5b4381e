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

// QueuedHour is an hour queued for the rollups' maintainer: its inputs
// too, or only its outputs (after an edit of the formulas).
type QueuedHour struct {
	Hour   time.Time
	Inputs bool
}

// QueuedHoursIn returns the sensor's hours in [from, to) queued for the
// rollups' maintainer, by hour.
func (tx *Tx) QueuedHoursIn(ctx context.Context, sensorID int64, from, to time.Time) ([]QueuedHour, error) {
	rows, _ := tx.tx.Query(ctx, `SELECT hour, inputs FROM rollup_dirty WHERE sensor_id = $1 AND hour >= $2 AND hour < $3 ORDER BY hour`,
		sensorID, from, to)
	hours, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueuedHour])
	return hours, readError("queued hours", err)
}

// HourRollups gives fn the sensor's rollups of the hours in [from, to), in
// no order, their outputs too with outputs, their first and last values with
// edges, as the rows arrive; fn must not keep the rollup. fn's errors are
// returned as they are.
func (tx *Tx) HourRollups(ctx context.Context, sensorID int64, from, to time.Time, outputs, edges bool, fn func(*HourRollup) error) error {
	// Whether inputs and outputs are NULL is asked apart: the driver
	// gives an empty value as nil, as it does NULL.
	columns := `inputs IS NOT NULL, inputs, false, NULL::bytea`
	if outputs {
		columns = `inputs IS NOT NULL, inputs, outputs IS NOT NULL, outputs`
	}
	if edges {
		columns += `, edges`
	} else {
		columns += `, NULL::bytea`
	}
	// In no order: sorting 8,784 rows of a kilobyte took PostgreSQL
	// longer than reading them.
	rows, err := tx.tx.Query(ctx, `SELECT hour, n, version, `+columns+` FROM rollup_hours WHERE sensor_id = $1 AND hour >= $2 AND hour < $3`,
		sensorID, from, to)
	if err != nil {
		return readError("hour rollups", err)
	}
	defer rows.Close()
	var (
		r          HourRollup
		hasOutputs bool
	)
	for rows.Next() {
		// The packed series are read as the driver holds them, not
		// copied: a year is 8,784 rows of 720 bytes.
		raw := rows.RawValues()
		if err := rows.Scan(&r.Hour, &r.Count, &r.Version, &r.Whole, nil, &hasOutputs, nil, nil); err != nil {
			return readError("hour rollups", err)
		}
		if err := unpackHour(raw[4], raw[6], raw[7], hasOutputs, edges, &r); err != nil {
			return readError("hour rollups", err)
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return readError("hour rollups", rows.Err())
}

// unpackHour unpacks an hour's inputs, outputs (if it has them) and, with
// withEdges, their edges into r, reusing its slices.
func unpackHour(inputs, outputs, edges []byte, hasOutputs, withEdges bool, r *HourRollup) error {
	var err error
	if r.Inputs, err = unpackCore(inputs, r.Inputs[:0]); err != nil {
		return err
	}
	r.Outputs = r.Outputs[:0]
	if !hasOutputs {
		r.Outputs = nil
	} else if r.Outputs, err = unpackCore(outputs, r.Outputs); err != nil {
		return err
	}
	if r.Outputs == nil && hasOutputs {
		r.Outputs = []Series{}
	}
	if !withEdges || !r.Whole {
		return nil
	}
	if edges, err = unpackEdges(edges, r.Inputs); err != nil {
		return err
	}
	_, err = unpackEdges(edges, r.Outputs)
	return err
}

// QuarterRollups gives fn the quarters of the sensor's rollups of hours
// that have them, in no order; fn must not keep them. fn's errors are
// returned as they are.
func (tx *Tx) QuarterRollups(ctx context.Context, sensorID int64, hours []time.Time, fn func(hour time.Time, quarters *[4]Quarter) error) error {
	if len(hours) == 0 {
		return nil
	}
	rows, err := tx.tx.Query(ctx, `SELECT hour, quarters FROM rollup_hours WHERE sensor_id = $1 AND hour = ANY($2) AND quarters IS NOT NULL`, sensorID, hours)
	if err != nil {
		return readError("quarter rollups", err)
	}
	defer rows.Close()
	var (
		hour     time.Time
		quarters [4]Quarter
	)
	for rows.Next() {
		raw := rows.RawValues()
		if err := rows.Scan(&hour, nil); err != nil {
			return readError("quarter rollups", err)
		}
		if err := unpackQuarters(raw[1], &quarters); err != nil {
			return readError("quarter rollups", err)
		}
		if err := fn(hour, &quarters); err != nil {
			return err
		}
	}
	return readError("quarter rollups", rows.Err())
}

// spanReadingsSQL are the readings of the sensor $1 in the spans [$2[i],
// $3[i]), a range scan each, in time order within each span. OFFSET 0
// keeps the planner from joining the spans to every reading of the
// sensor, which it prefers on compressed chunks.
const spanReadingsSQL = `
SELECT r.datetime, r.input_ids, r.vals FROM unnest($2::timestamptz[], $3::timestamptz[]) AS w(a, b)
CROSS JOIN LATERAL (
    SELECT r.datetime, r.input_ids, r.vals FROM readings r
    WHERE r.sensor_id = $1 AND r.datetime >= w.a AND r.datetime < w.b ORDER BY r.datetime OFFSET 0
) r`

// SpanReadings gives fn each of the sensor's readings in the spans [from[i],
// to[i]), ascending and apart, as the rows arrive, in time order within a
// span; fn must not keep the reading. fn's errors are returned as they
// are.
func (tx *Tx) SpanReadings(ctx context.Context, sensorID int64, from, to []time.Time, fn func(*Reading) error) error {
	if len(from) == 0 {
		return nil
	}
	rows, err := tx.tx.Query(ctx, spanReadingsSQL, sensorID, from, to)
	if err != nil {
		return readError("span readings", err)
	}
	err = ScanReadings(rows, fn)
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err // fn's
	}
	return readError("span readings", err)
}

// BucketStart is a bucket's start: on the zone's wall clock, and the
// instant it names.
type BucketStart struct {
	Local, At time.Time // Local in UTC, holding the wall clock
}

// BucketStarts returns, ascending on the wall clock, the start of every
// bucket of q's interval on the wall clock of q's zone from a day before
// the range's start to a day after its end, and the instant each names,
// as PostgreSQL's AT TIME ZONE resolves a wall clock that the zone's
// changes skip or repeat: so that the service can put an instant in its
// bucket without asking PostgreSQL each time (the day's margins cover
// the wall clock going back).
func (tx *Tx) BucketStarts(ctx context.Context, q BucketQuery) ([]BucketStart, error) {
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	rows, _ := tx.tx.Query(ctx, `
SELECT g, g AT TIME ZONE $4::text
FROM generate_series(
    date_bin($3::interval, ($1::timestamptz AT TIME ZONE $4::text) - interval '1 day', TIMESTAMP '2000-01-03'),
    ($2::timestamptz AT TIME ZONE $4::text) + interval '1 day',
    $3::interval) AS g`, q.From, q.To, pgtype.Interval{Microseconds: q.Interval.Microseconds(), Valid: true}, zone)
	starts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BucketStart])
	return starts, readError("bucket starts", err)
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
