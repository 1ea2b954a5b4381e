package store

import (
	"cmp"
	"context"
	"slices"
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

// Outputs computes a sensor's outputs reading after reading, as a read of
// the API does; Value(k) is the output IDs()[k] of the reading last
// computed.
type Outputs interface {
	IDs() []int64
	Compute(r *Reading)
	Value(k int) (float64, bool)
}

// BucketSink receives what AggregateBuckets finds, in this order: the
// counts of the buckets with readings, once; the outputs' statistics of
// each bucket with output values, by bucket, each indexed as the Outputs'
// IDs and nil for an output without values; each input's statistics over
// each bucket, by bucket and input. An error of the sink stops the query
// and is returned as it is.
type BucketSink interface {
	Counts([]BucketCount) error
	Outputs(bucket time.Time, stats []*stats.Stats) error
	Input(*InputStats) error
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

// spans are instants [from[i], to[i]), ascending and apart.
type spans struct{ from, to []time.Time }

// add appends [a, b), joined to the last span when they meet.
func (s *spans) add(a, b time.Time) {
	if !a.Before(b) {
		return
	}
	if n := len(s.to); n > 0 && !s.to[n-1].Before(a) {
		if b.After(s.to[n-1]) {
			s.to[n-1] = b
		}
		return
	}
	s.from, s.to = append(s.from, a), append(s.to, b)
}

// maxSpans bounds the spans a query reads the readings of, and so the
// cost of skipping them in the rollups: past it, a query reads the
// readings of its whole range.
const maxSpans = 100

// bucketPlan is what a query reads: the rollups of the hours [h0, h1)
// outside the spans, and the readings of the spans, separately for the
// inputs (and the counts) and for the outputs.
type bucketPlan struct {
	h0, h1          time.Time
	inputs, outputs spans
}

// use says where an answer following the plan comes from.
func (p *bucketPlan) use(outputs bool) RollupUse {
	switch {
	case !p.h0.Before(p.h1):
		return RollupsNone
	case len(p.inputs.from) == 0 && (!outputs || len(p.outputs.from) == 0):
		return RollupsUsed
	}
	return RollupsPartial
}

func (p *bucketPlan) args(sensor Sensor, q BucketQuery, s spans) []any {
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	return []any{sensor.ID, p.h0, p.h1, pgtype.Interval{Microseconds: q.Interval.Microseconds(), Valid: true}, zone, s.from, s.to}
}

// AggregateBuckets cuts the sensor's readings that q selects into buckets
// and gives sink their counts, the statistics of each output that outputs
// (nil for none) computes, and those of each input, from one snapshot.
// Buckets of whole hours, aligned on the hours in q's zone throughout the
// range, without a median, are read from the hourly rollups for the hours
// whose rollups are current, and from the readings for the others. The
// statistics are the same either way, to the rounding of the sums. It
// says where the answer came from. Errors are the sink's, or the
// database's.
func (db *DB) AggregateBuckets(ctx context.Context, sensor Sensor, q BucketQuery, outputs Outputs, sink BucketSink) (RollupUse, error) {
	if outputs != nil && len(outputs.IDs()) == 0 {
		outputs = nil
	}
	var use RollupUse
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		plan, err := planBuckets(ctx, tx, sensor, q, outputs != nil)
		if err != nil {
			return err
		}
		use = plan.use(outputs != nil)
		if use == RollupsNone {
			return rawBuckets(ctx, tx, sensor, q, plan, outputs, sink)
		}
		rows, _ := tx.Query(ctx, bucketCountsSQL, plan.args(sensor, q, plan.inputs)...)
		counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BucketCount])
		if err != nil {
			return err
		}
		if err := sink.Counts(counts); err != nil {
			return err
		}
		if outputs != nil {
			if err := outputStats(ctx, tx, sensor, q, plan, outputs, sink); err != nil {
				return err
			}
		}
		return inputStats(ctx, tx, q, plan.args(sensor, q, plan.inputs), sink)
	})
	return use, readError("aggregate buckets", err)
}

// planBuckets decides what a query reads: the readings of the whole range
// unless the rollups can serve it, and then the readings of the edges of
// the range that are not whole hours, and of the hours whose rollups are
// queued for a recomputation or, for the outputs, were computed with
// another version of the sensor's formulas.
func planBuckets(ctx context.Context, tx pgx.Tx, sensor Sensor, q BucketQuery, outputs bool) (bucketPlan, error) {
	p := bucketPlan{h0: q.From, h1: q.From}
	whole := func() bucketPlan {
		p.h1 = p.h0
		p.inputs, p.outputs = spans{}, spans{}
		p.inputs.add(q.From, q.To)
		p.outputs.add(q.From, q.To)
		return p
	}
	h0, h1 := q.From.Truncate(time.Hour), q.To.Truncate(time.Hour)
	if h0.Before(q.From) {
		h0 = h0.Add(time.Hour)
	}
	if q.Raw || q.Median || !h0.Before(h1) || !hourAligned(q) {
		return whole(), nil
	}
	p.h0, p.h1 = h0, h1
	rows, _ := tx.Query(ctx, `SELECT hour, inputs FROM rollup_dirty WHERE sensor_id = $1 AND hour >= $2 AND hour < $3 ORDER BY hour`,
		sensor.ID, h0, h1)
	type queued struct {
		Hour   time.Time
		Inputs bool
	}
	dirty, err := pgx.CollectRows(rows, pgx.RowToStructByPos[queued])
	if err != nil {
		return p, err
	}
	var stale []time.Time
	if outputs {
		rows, _ := tx.Query(ctx, `SELECT hour FROM rollup_hours WHERE sensor_id = $1 AND hour >= $2 AND hour < $3 AND version <> $4`,
			sensor.ID, h0, h1, sensor.version())
		if stale, err = pgx.CollectRows(rows, pgx.RowTo[time.Time]); err != nil {
			return p, err
		}
	}
	p.inputs.add(q.From, h0)
	p.outputs.add(q.From, h0)
	for _, d := range dirty {
		if d.Inputs {
			p.inputs.add(d.Hour, d.Hour.Add(time.Hour))
		}
		stale = append(stale, d.Hour)
	}
	slices.SortFunc(stale, func(a, b time.Time) int { return a.Compare(b) })
	for _, h := range stale {
		p.outputs.add(h, h.Add(time.Hour))
	}
	p.inputs.add(h1, q.To)
	p.outputs.add(h1, q.To)
	if sensor.Instance.linked() {
		// A linked input's value is another sensor's, which the hours'
		// rollups do not follow: its outputs are always read.
		p.outputs = spans{}
		p.outputs.add(q.From, q.To)
	}
	if len(p.inputs.from) > maxSpans || len(p.outputs.from) > maxSpans {
		return whole(), nil
	}
	return p, nil
}

// hourAligned tells whether every bucket of q is made of whole UTC hours:
// its interval is whole hours, and throughout the range the zone's offset
// is whole hours and changes on the hour. (Asia/Kolkata's +05:30 never
// is; Europe/Paris' offsets are, since 1911.)
func hourAligned(q BucketQuery) bool {
	if q.Interval%time.Hour != 0 {
		return false
	}
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return false
	}
	for t := q.From; t.Before(q.To); {
		local := t.In(loc)
		if _, offset := local.Zone(); offset%3600 != 0 {
			return false
		}
		_, end := local.ZoneBounds()
		if end.IsZero() || !end.Before(q.To) {
			return true
		}
		if end.Unix()%3600 != 0 || end.Nanosecond() != 0 {
			return false
		}
		t = end
	}
	return true
}

// inputStats reads the inputs' statistics per bucket and gives them to
// sink as the rows arrive.
func inputStats(ctx context.Context, tx pgx.Tx, q BucketQuery, args []any, sink BucketSink) error {
	rows, err := tx.Query(ctx, inputStatsSQL(q), append(args, stats.SplitAt, 1/stats.SplitAt)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		s    InputStats
		sums stats.Sums
	)
	for rows.Next() {
		err := rows.Scan(&s.Bucket, &s.InputID, &s.Count, &sums.Lo, &sums.Hi, &s.Min, &s.Max, &s.First, &s.Last, &s.FirstAt, &s.LastAt)
		if err != nil {
			return err
		}
		s.Sum, s.Avg = sums.Sum(), sums.Mean(s.Count, s.Min, s.Max)
		if err := sink.Input(&s); err != nil {
			return err
		}
	}
	return rows.Err()
}

// outputStats computes the outputs of the readings of the plan's spans,
// as they stream in time order, and merges in the rollups of the other
// hours; it gives sink each bucket's statistics, by bucket.
func outputStats(ctx context.Context, tx pgx.Tx, sensor Sensor, q BucketQuery, plan bucketPlan, outputs Outputs, sink BucketSink) error {
	ids := outputs.IDs()
	args := plan.args(sensor, q, plan.outputs)
	// The rollups' rows are few (a bucket's per output), so they are read
	// first; the readings, many, stream.
	rolled := map[time.Time][]stats.Partial{}
	if plan.h0.Before(plan.h1) {
		index := make(map[int64]int, len(ids))
		for k, id := range ids {
			index[id] = k
		}
		rows, err := tx.Query(ctx, outputRollupsSQL(q), args...)
		if err != nil {
			return err
		}
		var (
			bucket time.Time
			id     int64
			p      stats.Partial
		)
		_, err = pgx.ForEachRow(rows, []any{&bucket, &id, &p.Count, &p.Sums.Lo, &p.Sums.Hi, &p.Min, &p.Max, &p.First, &p.FirstAt, &p.Last, &p.LastAt},
			func() error {
				k, ok := index[id]
				if !ok {
					return nil // an output the sensor no longer has
				}
				parts := rolled[bucket]
				if parts == nil {
					parts = make([]stats.Partial, len(ids))
					rolled[bucket] = parts
				}
				parts[k].Merge(p)
				return nil
			})
		if err != nil {
			return err
		}
	}
	acc := make([]stats.Accumulator, len(ids)) // no median: it is never asked of rollups
	done := map[time.Time][]*stats.Stats{}
	finish := func(bucket time.Time) {
		for k, p := range rolled[bucket] {
			acc[k].Merge(p)
		}
		delete(rolled, bucket)
		out := make([]*stats.Stats, len(ids))
		for k := range acc {
			out[k] = acc[k].Finish()
		}
		done[bucket] = out
	}
	add := func(k int, t time.Time, v float64) { acc[k].Add(t, v) }
	err := eachReading(ctx, tx, bucketReadingsSQL, args, finish, func(_ time.Time, r *Reading) { addOutputs(outputs, r, add) })
	if err != nil {
		return err
	}
	for bucket := range rolled {
		finish(bucket)
	}
	buckets := make([]time.Time, 0, len(done))
	for b := range done {
		buckets = append(buckets, b)
	}
	slices.SortFunc(buckets, func(a, b time.Time) int { return a.Compare(b) })
	for _, b := range buckets {
		if err := sink.Outputs(b, done[b]); err != nil {
			return err
		}
	}
	return nil
}

// bucketStats are a bucket's statistics, as rawBuckets gathers them.
type bucketStats struct {
	count   int64
	inputs  []InputStats   // by input id
	outputs []*stats.Stats // by output, nil without outputs
}

// rawBuckets reads the readings of the range once, in time order, and
// computes every statistic of a bucket from them when the bucket is done:
// one scan where the rollups serve nothing, instead of one for the counts,
// one for the inputs, which multiplies the rows by the inputs, and one for
// the outputs. It gives sink what it gathered once the scan is over.
func rawBuckets(ctx context.Context, tx pgx.Tx, sensor Sensor, q BucketQuery, plan bucketPlan, outputs Outputs, sink BucketSink) error {
	var (
		buckets  []time.Time
		gathered []bucketStats
		slots    = map[int64]int{} // an input id's accumulator
		ids      []int64           // of each slot
		inputs   []stats.Accumulator
		seen     []bool // whether a slot had a value in the bucket
		outAcc   []stats.Accumulator
		n        int64
	)
	if outputs != nil {
		outAcc = make([]stats.Accumulator, len(outputs.IDs()))
		for k := range outAcc {
			outAcc[k] = stats.NewAccumulator(q.Median)
		}
	}
	addOutput := func(k int, t time.Time, v float64) { outAcc[k].Add(t, v) }
	finish := func(bucket time.Time) {
		b := bucketStats{count: n}
		for k, id := range ids {
			if seen[k] {
				b.inputs = append(b.inputs, InputStats{Bucket: bucket, InputID: id, Stats: *inputs[k].Finish()})
				seen[k] = false
			}
		}
		slices.SortFunc(b.inputs, func(x, y InputStats) int { return cmp.Compare(x.InputID, y.InputID) })
		if outAcc != nil {
			b.outputs = make([]*stats.Stats, len(outAcc))
			for k := range outAcc {
				b.outputs[k] = outAcc[k].Finish()
			}
		}
		buckets, gathered = append(buckets, bucket), append(gathered, b)
		n = 0
	}
	err := eachReading(ctx, tx, bucketReadingsSQL, plan.args(sensor, q, plan.inputs), finish, func(_ time.Time, r *Reading) {
		n++
		for i, id := range r.InputIDs {
			k, ok := slots[id]
			if !ok {
				k = len(ids)
				slots[id] = k
				ids, seen = append(ids, id), append(seen, false)
				inputs = append(inputs, stats.NewAccumulator(q.Median))
			}
			inputs[k].Add(r.Time, r.Values[i])
			seen[k] = true
		}
		if outputs != nil {
			addOutputs(outputs, r, addOutput)
		}
	})
	if err != nil {
		return err
	}
	counts := make([]BucketCount, len(buckets))
	for i, b := range buckets {
		counts[i] = BucketCount{Bucket: b, Count: gathered[i].count}
	}
	if err := sink.Counts(counts); err != nil {
		return err
	}
	for i, b := range buckets {
		if gathered[i].outputs != nil {
			if err := sink.Outputs(b, gathered[i].outputs); err != nil {
				return err
			}
		}
	}
	for i := range gathered {
		for j := range gathered[i].inputs {
			if err := sink.Input(&gathered[i].inputs[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachReading runs query, whose rows are a key (a bucket, an hour) and a
// reading's datetime, input ids and values, in time order, and calls fn
// with each reading, which it must not keep. It calls flush with a key
// when its readings are done.
func eachReading(ctx context.Context, tx pgx.Tx, query string, args []any, flush func(key time.Time), fn func(key time.Time, r *Reading)) error {
	var (
		current, key time.Time
		started      bool
		r            Reading
	)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, []any{&key, &r.Time, &r.InputIDs, &r.Values}, func() error {
		if started && !key.Equal(current) {
			flush(current)
		}
		current, started = key, true
		fn(key, &r)
		return nil
	})
	if err == nil && started {
		flush(current)
	}
	return err
}

// addOutputs computes the outputs of r and gives add each value, output
// k's as k.
func addOutputs(outputs Outputs, r *Reading, add func(k int, t time.Time, v float64)) {
	outputs.Compute(r)
	for k := range outputs.IDs() {
		if v, ok := outputs.Value(k); ok {
			add(k, r.Time, v)
		}
	}
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
