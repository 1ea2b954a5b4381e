package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
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
	inBinary := binaryColumns(rows, 8)
	for rows.Next() {
		// The packed series are read as the driver holds them, not
		// copied: a year is 8,784 rows of 720 bytes; and so are the
		// other columns, which pgx's Scan took longer to read than the
		// rows took to unpack.
		raw := rows.RawValues()
		if inBinary {
			err = decodeHourColumns(raw, &r, &hasOutputs)
		} else {
			err = rows.Scan(&r.Hour, &r.Count, &r.Version, &r.Whole, nil, &hasOutputs, nil, nil)
		}
		if err != nil {
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

// decodeHourColumns decodes the hour, count, version and whether the
// inputs and outputs are there of a row of HourRollups, in PostgreSQL's
// binary format.
func decodeHourColumns(raw [][]byte, r *HourRollup, hasOutputs *bool) error {
	var err error
	if r.Hour, err = decodeTimestamptz(raw[0]); err != nil {
		return fmt.Errorf("hour: %w", err)
	}
	if len(raw[1]) != 8 || len(raw[2]) != 8 || len(raw[3]) != 1 || len(raw[5]) != 1 {
		return fmt.Errorf("hour rollup's columns of %d, %d, %d and %d bytes", len(raw[1]), len(raw[2]), len(raw[3]), len(raw[5]))
	}
	r.Count, r.Version = int64(binary.BigEndian.Uint64(raw[1])), int64(binary.BigEndian.Uint64(raw[2]))
	r.Whole, *hasOutputs = raw[3][0] != 0, raw[5][0] != 0
	return nil
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

// commonIDsSQL tells whether the input ids of reading r of sensor $1 are
// $4 (ascending, each once). Comparing the arrays (a copy of each and a
// call a value) costs PostgreSQL a seventh of sending a reading and a
// fifth of summing one; when every id the sensor's readings have ever had
// (sensor_inputs, which only grows) is one of $4's, a reading whose ids
// are ascending and each once, as every write stores them, has $4's
// exactly when it has as many, and so as many values (the table's CHECK).
// Its values' stored size tells that without a copy of either array
// (cardinality copies an array stored with a short header to read its
// header: 7-10 % of PostgreSQL's time to send a million readings): a
// one-dimensional float8[] of n values without nulls takes 24 + 8n bytes,
// 21 + 8n with a short header. The only other arrays of those sizes have
// two dimensions or null elements, which no write stores (nor, before it,
// did cardinality tell those apart), and which the scanners reject.
const commonIDsSQL = `CASE WHEN (SELECT si.input_ids <@ $4::bigint[] FROM sensor_inputs si WHERE si.sensor_id = $1)
    THEN pg_column_size(r.vals) IN (21 + 8 * cardinality($4::bigint[]), 24 + 8 * cardinality($4::bigint[]))
    ELSE r.input_ids = $4::bigint[] END`

// spanReadingsSQL are the readings of the sensor $1 in the spans [$2[i],
// $3[i]), a range scan each, in time order within each span, their input
// ids NULL where they are $4 (commonIDsSQL), their values as
// readings_vals_bytes gives them (a copy, not a call a value; migration
// 00073). OFFSET 0 keeps the planner
// from joining the spans to every reading of the sensor, which it prefers
// on compressed chunks.
const spanReadingsSQL = `
SELECT r.datetime, CASE WHEN ` + commonIDsSQL + ` THEN NULL ELSE r.input_ids END, readings_vals_bytes(r.vals)
FROM unnest($2::timestamptz[], $3::timestamptz[]) AS w(a, b)
CROSS JOIN LATERAL (
    SELECT r.datetime, r.input_ids, r.vals FROM readings r
    WHERE r.sensor_id = $1 AND r.datetime >= w.a AND r.datetime < w.b ORDER BY r.datetime OFFSET 0
) r`

// SpanReadings gives fn each of the sensor's readings in the spans [from[i],
// to[i]), ascending and apart, as the rows arrive, in time order within a
// span; fn must not keep the reading. common are the input ids most of
// them have (the instance's, ascending; nil if unknown): PostgreSQL sends
// a reading's input ids only where they are others, since sending arrays
// is most of its work in reading many readings. fn's errors are returned
// as they are.
func (tx *Tx) SpanReadings(ctx context.Context, sensorID int64, from, to []time.Time, common []int64, fn func(*Reading) error) error {
	if len(from) == 0 {
		return nil
	}
	if common == nil {
		common = []int64{}
	}
	rows, err := tx.tx.Query(ctx, spanReadingsSQL, sensorID, from, to, common)
	if err != nil {
		return readError("span readings", err)
	}
	err = scanSpanReadings(rows, common, fn)
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err // fn's
	}
	return readError("span readings", err)
}

// scanSpanReadings is ScanReadings for spanReadingsSQL's rows, whose NULL
// input ids are common.
func scanSpanReadings(rows pgx.Rows, common []int64, fn func(*Reading) error) error {
	defer rows.Close()
	if !binaryColumns(rows, 3) {
		return fmt.Errorf("span readings not in binary")
	}
	var reading Reading
	for rows.Next() {
		raw := rows.RawValues()
		var err error
		if reading.Time, err = decodeTimestamptz(raw[0]); err != nil {
			return fmt.Errorf("datetime: %w", err)
		}
		if raw[1] == nil {
			reading.InputIDs = append(reading.InputIDs[:0], common...)
		} else if reading.InputIDs, err = decodeArray(raw[1], reading.InputIDs[:0], func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }); err != nil {
			return fmt.Errorf("input_ids: %w", err)
		}
		if reading.Values, err = decodeValueBytes(raw[2], reading.Values[:0]); err != nil {
			return fmt.Errorf("vals: %w", err)
		}
		if len(reading.Values) != len(reading.InputIDs) {
			return fmt.Errorf("%d values for %d input ids", len(reading.Values), len(reading.InputIDs))
		}
		if err := fn(&reading); err != nil {
			return err
		}
	}
	return rows.Err()
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

// InputGroup is what PostgreSQL aggregated of a sensor's readings with the
// same input ids over one grain of time: how many they are, and each
// input's sum, minimum and maximum, by position in InputIDs. Apart says
// that it could not: the readings have more inputs than it aggregates, or
// a value beyond what PostgreSQL's float8 sum adds as stats.Sums does (not
// finite, or of magnitude stats.SplitAt or more), so the grain's readings
// are to be read one by one.
type InputGroup struct {
	Start    time.Time // of the grain
	Count    int64
	InputIDs []int64
	Apart    bool
	Sums     []float64 // stats.Sums.Lo: Hi is 0, the values being below stats.SplitAt
	Min, Max []float64
}

// maxGroupPositions is the most inputs a reading may have for
// SpanInputGroups to aggregate them: each is three aggregates of a column
// of its own.
const maxGroupPositions = 200

// SpanInputGroups aggregates in PostgreSQL the sensor's readings in the
// spans [from[i], to[i]) by grain (from 2000-01-03 00:00 UTC on) and input
// ids, each input by its position in the reading's arrays, as many
// positions as common has (the input ids its readings mostly have: the
// instance's, ascending), and gives fn each group as its row arrives; fn
// must not keep it. An aggregate of inputs alone then reads a row per
// grain instead of every reading. It returns false, having read nothing,
// when there are no common ids or more than it aggregates: the readings
// are then to be read. fn's errors are returned as they are.
func (tx *Tx) SpanInputGroups(ctx context.Context, sensorID int64, from, to []time.Time, grain time.Duration, common []int64, fn func(*InputGroup) error) (bool, error) {
	if len(common) == 0 || len(common) > maxGroupPositions {
		return false, nil
	}
	if len(from) == 0 {
		return true, nil
	}
	positions := len(common)
	rows, err := tx.tx.Query(ctx, inputGroupsSQL(positions), sensorID, from, to,
		pgtype.Interval{Microseconds: grain.Microseconds(), Valid: true}, common)
	if err != nil {
		return false, readError("input groups", err)
	}
	defer rows.Close()
	if !binaryColumns(rows, 3+3*positions) {
		return false, readError("input groups", errors.New("input groups not in binary"))
	}
	g := InputGroup{Sums: make([]float64, positions), Min: make([]float64, positions), Max: make([]float64, positions)}
	for rows.Next() {
		if err := decodeInputGroup(rows.RawValues(), common, &g); err != nil {
			return false, readError("input groups", err)
		}
		if err := fn(&g); err != nil {
			return false, err
		}
	}
	return true, readError("input groups", rows.Err())
}

// inputGroupsSQL aggregates the readings of sensor $1 in the spans [$2[i],
// $3[i]) by grain $4 and input ids, NULL where they are $5, each of
// positions inputs by its position in the readings' arrays. The spans
// are read as spanReadingsSQL reads them, in time order, so that each
// group's sum adds its values in the order the readings alone add them.
//
// What each reading costs PostgreSQL is most of an aggregate's time (1
// µs, against 0.13 µs to count the readings): hence ids compared with $5
// once and hashed as NULL when they are those (grouping by the ids hashed
// and compared every reading's array, a sixth of its time), and arrays
// taken apart once each. A subscript of an array stored with a short
// header copies it whole first (detoast_attr, a fifth of the time with one
// copy a value); the array concatenated with an empty one is that copy
// made once, which each subscript then reads in place; and each value is
// taken out of it once, in a subquery that OFFSET 0 keeps apart, since an
// aggregate's argument is evaluated for each aggregate.
func inputGroupsSQL(positions int) string {
	values, aggregates := positionColumns(positions)
	return `
SELECT g, ids, count(*)` + aggregates + ` FROM (
    SELECT g, ids` + values + ` FROM (
        SELECT date_bin($4::interval, r.datetime, TIMESTAMPTZ '2000-01-03 00:00+00') AS g,
            CASE WHEN r.input_ids = $5::bigint[] THEN NULL ELSE r.input_ids END AS ids,
            r.vals || '{}'::float8[] AS vals
        FROM unnest($2::timestamptz[], $3::timestamptz[]) AS w(a, b)
        CROSS JOIN LATERAL (
            SELECT r.datetime, r.input_ids, r.vals FROM readings r
            WHERE r.sensor_id = $1 AND r.datetime >= w.a AND r.datetime < w.b ORDER BY r.datetime OFFSET 0
        ) r
        OFFSET 0
    ) r
    OFFSET 0
) r
GROUP BY g, ids`
}

// SpanInputBuckets aggregates in PostgreSQL the sensor's readings in each
// piece [from[i], to[i]) apart, in time order, each input by its position
// in the readings' arrays, as many positions as common has (the input ids
// its readings mostly have: the instance's, ascending), and gives fn, as
// its row arrives, each piece with readings as an InputGroup whose Start
// is from[i] and whose ids are common's; fn must not keep it. The pieces are
// meant to be buckets, or the parts of buckets the rollups leave: each
// piece's sums are then those the readings added one by one give, bit for
// bit. A piece with readings of other input ids, or with a value its sum
// cannot add (InputGroup.Apart), is to be read otherwise. It returns
// false, having read nothing, when there are no common ids or more than
// it aggregates. fn's errors are returned as they are.
func (tx *Tx) SpanInputBuckets(ctx context.Context, sensorID int64, from, to []time.Time, common []int64, fn func(*InputGroup) error) (bool, error) {
	if len(common) == 0 || len(common) > maxGroupPositions {
		return false, nil
	}
	if len(from) == 0 {
		return true, nil
	}
	positions := len(common)
	// [lo, hi) holds every piece: inputBucketsSQL's $5 and $6.
	lo, hi := from[0], to[0]
	for i := range from {
		if from[i].Before(lo) {
			lo = from[i]
		}
		if to[i].After(hi) {
			hi = to[i]
		}
	}
	// The planner prices a scan per piece at the whole query's rows, and
	// JIT-compiles the 3 × positions aggregates for longer than they run
	// (1.9 µs a reading with JIT against 1.0): sent with the query, in the
	// same round trip, for the rest of this read-only transaction.
	b := &pgx.Batch{}
	b.Queue(noJITSQL)
	b.Queue(inputBucketsSQL(positions), sensorID, from, to, common, lo, hi)
	br := tx.tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return false, readError("input buckets", err)
	}
	rows, err := br.Query()
	if err != nil {
		return false, readError("input buckets", err)
	}
	defer rows.Close()
	if !binaryColumns(rows, 3+3*positions) {
		return false, readError("input buckets", errors.New("input buckets not in binary"))
	}
	g := InputGroup{Sums: make([]float64, positions), Min: make([]float64, positions), Max: make([]float64, positions)}
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw[0]) != 8 {
			return false, readError("input buckets", fmt.Errorf("piece of %d bytes", len(raw[0])))
		}
		k := binary.BigEndian.Uint64(raw[0])
		if k < 1 || k > uint64(len(from)) {
			return false, readError("input buckets", fmt.Errorf("piece %d of %d", k, len(from)))
		}
		g.Start = from[k-1] // the caller's own, to the nanosecond
		if len(raw[1]) != 1 {
			return false, readError("input buckets", fmt.Errorf("same ids of %d bytes", len(raw[1])))
		}
		g.InputIDs = append(g.InputIDs[:0], common...)
		if err := decodeGroupStats(raw[2:], &g); err != nil {
			return false, readError("input buckets", err)
		}
		if raw[1][0] == 0 { // readings of other input ids
			g.Apart, g.Sums, g.Min, g.Max = true, g.Sums[:0], g.Min[:0], g.Max[:0]
		}
		if err := fn(&g); err != nil {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, readError("input buckets", err)
	}
	return true, readError("input buckets", br.Close())
}

// positionColumns lists, for the first positions of the readings' arrays,
// each value taken out once (", r.vals[k] AS vk") and its sum, min and
// max (", sum(vk), min(vk), max(vk)").
func positionColumns(positions int) (values, aggregates string) {
	var v, a strings.Builder
	for k := 1; k <= positions; k++ {
		fmt.Fprintf(&v, ", r.vals[%d] AS v%d", k, k)
		fmt.Fprintf(&a, ", sum(v%d), min(v%d), max(v%d)", k, k, k)
	}
	return v.String(), a.String()
}

// inputBucketsSQL aggregates the readings of sensor $1 in each piece [$2[i],
// $3[i]) apart, those whose input ids are $4 or not, each of positions
// inputs by its position in the readings' arrays, in time order.
//
// A plain aggregate a piece, from a scan of its own, costs PostgreSQL a
// sixth less a reading than inputGroupsSQL's grouping by grain (no
// date_bin, no hashing of a group key a reading), for some 50 µs a
// piece to start the scan again: what a bucket of a day or more repays.
// The arrays are taken apart once each, as inputGroupsSQL does and for
// the same reasons, and a reading's ids compared with $4 by their count
// where that tells (commonIDsSQL).
//
// $5 and $6 bound every piece ([$5, $6) holds them all), so that the
// plan leaves out a hypertable's chunks beyond them: a piece's bounds are
// known only as its scan starts again, so every scan excluded each other
// chunk anew (117 a piece in the bench's table after its other phases:
// 8 % more of PostgreSQL's CPU), and the planner weighed them all (with
// 150 small chunks two years away it chose a sequential scan and a sort
// of every chunk a piece, three times the time).
func inputBucketsSQL(positions int) string {
	values, aggregates := positionColumns(positions)
	return `
SELECT w.k, x.* FROM unnest($2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY AS w(a, b, k)
CROSS JOIN LATERAL (
    SELECT bool_and(same), count(*)` + aggregates + ` FROM (
        SELECT same` + values + ` FROM (
            SELECT ` + commonIDsSQL + ` AS same,
                r.vals || '{}'::float8[] AS vals FROM (
                SELECT r.input_ids, r.vals FROM readings r
                WHERE r.sensor_id = $1 AND r.datetime >= w.a AND r.datetime < w.b
                    AND r.datetime >= $5 AND r.datetime < $6
                ORDER BY r.datetime OFFSET 0
            ) r
            OFFSET 0
        ) r
        OFFSET 0
    ) r
    HAVING count(*) > 0
) x`
}

// decodeInputGroup decodes a row of inputGroupsSQL, whose NULL input ids
// are common, in PostgreSQL's binary format, into g, reusing its slices.
func decodeInputGroup(raw [][]byte, common []int64, g *InputGroup) error {
	var err error
	if g.Start, err = decodeTimestamptz(raw[0]); err != nil {
		return fmt.Errorf("grain: %w", err)
	}
	if raw[1] == nil {
		g.InputIDs = append(g.InputIDs[:0], common...)
	} else if g.InputIDs, err = decodeArray(raw[1], g.InputIDs[:0], func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }); err != nil {
		return fmt.Errorf("input_ids: %w", err)
	}
	return decodeGroupStats(raw[2:], g)
}

// decodeGroupStats decodes the count and the statistics by position of a
// group of g.InputIDs (raw: count, then sum, min and max a position) into
// g, reusing its slices, and tells whether it is Apart.
func decodeGroupStats(raw [][]byte, g *InputGroup) error {
	if len(raw[0]) != 8 {
		return fmt.Errorf("count of %d bytes", len(raw[0]))
	}
	g.Count = int64(binary.BigEndian.Uint64(raw[0]))
	n := len(g.InputIDs)
	g.Sums, g.Min, g.Max = g.Sums[:cap(g.Sums)], g.Min[:cap(g.Min)], g.Max[:cap(g.Max)]
	if g.Apart = n > len(g.Sums); g.Apart { // inputs beyond the positions aggregated
		g.Sums, g.Min, g.Max = g.Sums[:0], g.Min[:0], g.Max[:0]
		return nil
	}
	for k := 0; k < n && !g.Apart; k++ {
		var v [3]float64
		for j := range v {
			b := raw[1+3*k+j]
			if len(b) != 8 {
				// Only NULL elements at the position, which no write
				// stores: the readings tell.
				g.Apart = true
				break
			}
			v[j] = math.Float64frombits(binary.BigEndian.Uint64(b))
		}
		for _, x := range v[1:] {
			if !(math.Abs(x) < stats.SplitAt) { // NaN included
				g.Apart = true
			}
		}
		g.Sums[k], g.Min[k], g.Max[k] = v[0], v[1], v[2]
	}
	g.Sums, g.Min, g.Max = g.Sums[:n], g.Min[:n], g.Max[:n]
	if g.Apart {
		g.Sums, g.Min, g.Max = g.Sums[:0], g.Min[:0], g.Max[:0]
	}
	return nil
}
