package store

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
)

// Reading is a sensor's inputs at one instant: InputIDs[i] had Values[i].
type Reading struct {
	Time     time.Time
	InputIDs []int64
	Values   []float64
}

// ReadingQuery selects a sensor's readings.
type ReadingQuery struct {
	From, To time.Time // inclusive bounds, to the microsecond
	Desc     bool      // newest first
	Limit    int       // 0: all of them
	Offset   int64
	// Without leaves out the readings from Without[i][0] to Without[i][1],
	// inclusive: those a flag rejects whole.
	Without [][2]time.Time
}

// The instants a reading can have: those the API's datetimes name.
var (
	MinTime = datetime.Min
	MaxTime = datetime.Max
)

// lockSensorWriteSQL locks the project as lockWritableProject does, then
// the sensor, in that order (the CTE is read before the join yields the
// row the outer lock takes), in one round trip. Writers of readings take
// the sensor's row lock: it serializes the batches of one sensor, so that
// what a batch finds stored stays true until it commits. It also says
// whether the project has webhooks (a probe of their index), so that a
// write whose events no webhook delivers does not wake the outbox.
const lockSensorWriteSQL = `
WITH p AS MATERIALIZED (` + lockWritableProjectSQL + `)
SELECT p.state, s.instance, EXISTS (SELECT FROM webhooks w WHERE w.project_id = $2) AS hooked
FROM p JOIN sensors s ON s.project_id = $2
WHERE s.id = $3
FOR NO KEY UPDATE OF s`

// noJITSQL keeps PostgreSQL from compiling the rest of a transaction's
// statements, where the planner's costs overshoot what they run. In a
// write, a generic plan of the rules' read with the parts releases before
// kept was costed past jit_above_cost, and its JIT took 60-80 ms where
// running it took 0.1 ms (auto_explain over row 11e of make bench); no
// statement of a write of readings runs long enough to gain from it. For aggregates, see SpanInputBuckets.
const noJITSQL = `SET LOCAL jit = off`

// noJITGenericPlansSQL is noJITSQL and genericPlansSQL in one statement,
// for a round trip that needs both: each statement of a write's round
// trip costs the service and PostgreSQL their per-statement work again.
const noJITGenericPlansSQL = `SELECT set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`

// sensorWrittenSQL reads what the sensor's readings hold: the input ids
// they have used and the newest one's datetime.
const sensorWrittenSQL = `
SELECT coalesce((SELECT input_ids FROM sensor_inputs WHERE sensor_id = $1), '{}'),
       (SELECT datetime FROM sensor_latest WHERE sensor_id = $1),
       EXISTS (SELECT FROM reading_flags WHERE sensor_id = $1 AND cleared_at IS NULL),
       (SELECT checks FROM sensor_checks WHERE sensor_id = $1)`

// SensorWrite is what a write of a sensor's readings is made against, as
// the sensor's lock found it.
type SensorWrite struct {
	Sensor Sensor      // its ID, ProjectID and Instance
	Known  []int64     // the input ids its readings have used, ascending
	Newest *time.Time  // its newest reading's datetime; nil: it has none
	Rules  []AlarmRule // its alarm rules, as SensorRules returns them
	// Flagged says whether a flag is in force on any of its readings.
	Flagged bool
	// Checks are its validity checks as stored (JSON), nil for none.
	Checks []byte
	// Hooked says whether its project has webhooks, which the events a
	// write raises are delivered to.
	Hooked bool

	// Hours are the hours of a batch given to the lock, ascending, as
	// the lock found their rollups: the write must give them to
	// StoreBatchRollups.
	Hours []BatchHour

	// stored: the lock stored the batch too, which wrote written.
	stored  bool
	written Written
}

// BatchHour is an hour of a batch as the batch's lock found its rollup.
type BatchHour struct {
	Hour time.Time
	// Mergeable says that each of the batch's readings of the hour is new
	// to it and that Rollup, the hour's rollup with its edges and
	// quarters, holds exactly its stored readings; nil for an hour without
	// any. It is not for an hour queued for the maintainer or an overwrite.
	Mergeable bool
	Rollup    *HourRollup
	// Stored is how many readings the hour held before the batch, where
	// its rollup says exactly (it is not queued for the maintainer and
	// its statistics are kept; 0 for an hour without any), else -1. A
	// batch that replaced as many stored readings as its hours held
	// replaced every one of them (BatchReplacesHours).
	Stored int64
}

// BatchReplacesHours reports whether a batch that replaced replaced
// stored readings, in the hours the lock found (hours), replaced every
// reading those hours held: their rollups are then the batch's readings
// alone, and none must be read back. Each of the batch's replaced readings
// was one of its hours', so their count reaches the hours' only when each
// hour's readings were all replaced.
func BatchReplacesHours(hours []BatchHour, replaced int) bool {
	if replaced == 0 {
		return false
	}
	var stored int64
	for _, h := range hours {
		if h.Stored < 0 {
			return false
		}
		stored += h.Stored
	}
	return stored == int64(replaced)
}

// LockSensorWrite locks the sensor for a write of its readings, under its
// project's lock (lockSensorWriteSQL), and reads what its readings hold
// (sensorWrittenSQL) and its alarm rules, in one round trip but in
// statements of their own: when the lock waited for another writer of the
// sensor, its statement still sees what was stored before that writer
// committed (a READ COMMITTED statement reads one snapshot, taken before it
// waited), the next ones see it all. The lock stands in for a foreign key,
// checked once per write instead of once per row: the sensor cannot be
// deleted, with its readings, nor get a new instance or other rules until
// the write commits. It also makes the writes of one sensor take turns.
//
// A write that holds its readings whole, a batch, gives them as batch
// (ordered and one per instant, LastPerInstant; nil for a stream): the
// same round trip then reads the rollups of their hours (Hours) and keeps
// the newest as the sensor's (KeepLatest), so that a batch after the
// sensor's newest reading costs this round trip (with the transaction's
// BEGIN), its COPY and the commit, with which its hours are queued for the
// maintainer unless the write gives StoreBatchRollups their rollups. A batch
// of at most upsertMax readings is stored in that round trip too
// (upsertReadingsSQL), and WriteReadings has nothing left to do. The
// round trip's statements run whether or not the lock found the sensor:
// its writes are guarded (sensorOfKeySQL), so that a write naming a
// sensor beyond its project, another organization's say, writes, locks
// and waits for none of that sensor's rows before it is refused.
//
// It returns NotFound, and Conflict when the project is archived.
func (tx *Tx) LockSensorWrite(ctx context.Context, key SensorKey, batch []Reading) (SensorWrite, error) {
	b := &pgx.Batch{}
	w, state := queueLockSensorWrite(b, key)
	var hours, firsts []time.Time
	if len(batch) > 0 {
		hours, firsts = hourFirsts(batch)
	}
	// The rules' read is planned for the rules of any sensor, as
	// batchHoursSQL is for any batch (genericPlansSQL): its custom plan
	// cost as much to make as to run (pg_stat_statements over row 11e).
	b.Queue(noJITGenericPlansSQL)
	b.Queue(sensorRulesSQL, key.SensorID).Query(func(rows pgx.Rows) error {
		var err error
		w.Rules, err = pgx.CollectRows(rows, pgx.RowToStructByName[AlarmRule])
		return err
	})
	if len(batch) > 0 {
		b.Queue(batchHoursSQL, key.SensorID, hours, firsts, key.ProjectID, key.OrgID).Query(func(rows pgx.Rows) error {
			var err error
			w.Hours, err = scanBatchHours(rows, len(hours))
			return err
		})
	}
	b.Queue(resetPlansSQL)
	if len(batch) > 0 {
		newest := &batch[len(batch)-1]
		b.Queue(aheadKeepLatestSQL, key.SensorID, newest.Time, newest.InputIDs, newest.Values, key.ProjectID, key.OrgID)
		queued := &pgx.Batch{}
		queued.Queue(queueHoursSQL, key.SensorID, hours)
		tx.tx.rollups = queued
		if len(batch) <= upsertMax {
			times, starts, ends, ids, values := readingColumns(batch)
			b.Queue(upsertReadingsSQL, key.SensorID, times, starts, ends, ids, values, key.ProjectID, key.OrgID).QueryRow(func(row pgx.Row) error {
				return row.Scan(&w.written.New, &w.written.Replaced)
			})
			w.stored = true
		}
	}
	if err := tx.tx.SendBatch(ctx, b).Close(); err != nil {
		return *w, dbError("lock sensor", err)
	}
	return *w, dbError("lock sensor", writable(key.ProjectID, *state))
}

func lockSensorWrite(ctx context.Context, tx pgx.Tx, key SensorKey) (SensorWrite, error) {
	b := &pgx.Batch{}
	w, state := queueLockSensorWrite(b, key)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return *w, err
	}
	return *w, writable(key.ProjectID, *state)
}

// queueLockSensorWrite queues the lock of the sensor and the read of what
// its readings hold, whose results the batch's Close fills in.
func queueLockSensorWrite(b *pgx.Batch, key SensorKey) (*SensorWrite, *ProjectState) {
	var (
		w     = &SensorWrite{Sensor: Sensor{ID: key.SensorID, ProjectID: key.ProjectID}}
		state = new(ProjectState)
	)
	b.Queue(lockSensorWriteSQL, key.OrgID, key.ProjectID, key.SensorID).QueryRow(func(row pgx.Row) error {
		return notFound("lock sensor", row.Scan(state, &w.Sensor.Instance, &w.Hooked), "sensor")
	})
	b.Queue(sensorWrittenSQL, key.SensorID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&w.Known, &w.Newest, &w.Flagged, &w.Checks)
	})
	return w, state
}

// Written is what a write did: how many of its instants were new to the
// sensor and how many replaced a stored reading. Two readings at one
// instant of a write count once.
type Written struct {
	New, Replaced int
	Events        int  // alarm events it raised
	Hooked        bool // its project has webhooks, which deliver the events
}

// WriteReadings stores readings, ordered by time and one per instant
// (LastPerInstant), in the sensor w locked, and queues their hours for the
// rollups (insertReadings) unless the lock read them (LockSensorWrite's
// batch, whose hours go to StoreBatchRollups).
// It returns how many were new and how many replaced a stored reading.
func (tx *Tx) WriteReadings(ctx context.Context, w SensorWrite, readings []Reading) (Written, error) {
	if w.stored {
		return w.written, nil
	}
	written, err := insertReadings(ctx, tx.tx, w.Sensor.ID, readings, w.Newest, w.Hours == nil)
	return written, dbError("write readings", err)
}

// keepLatestSQL replaces the sensor's newest reading when the write's is as
// new or newer: a reading at the same instant is an overwrite. Concurrent
// writes of one sensor take turns on the row, and each compares with the
// other's committed row.
const keepLatestSQL = `
INSERT INTO sensor_latest AS l (sensor_id, datetime, input_ids, vals) VALUES ($1, $2, $3, $4)
ON CONFLICT (sensor_id) DO UPDATE SET datetime = EXCLUDED.datetime, input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals
WHERE l.datetime <= EXCLUDED.datetime`

// KeepLatest records newest, the newest reading of a write, as the
// sensor's newest reading, unless a newer one is stored.
func (tx *Tx) KeepLatest(ctx context.Context, sensorID int64, newest *Reading) error {
	_, err := tx.tx.Exec(ctx, keepLatestSQL, sensorID, newest.Time, newest.InputIDs, newest.Values)
	return dbError("keep latest", err)
}

const recordInputsSQL = `
INSERT INTO sensor_inputs AS si (sensor_id, input_ids) VALUES ($1, $2)
ON CONFLICT (sensor_id) DO UPDATE
SET input_ids = ARRAY(SELECT DISTINCT u.id FROM unnest(si.input_ids || EXCLUDED.input_ids) AS u(id) ORDER BY 1)
RETURNING cardinality(input_ids)`

// RecordInputs adds the input ids of ids that the sensor w locked never
// had to its set (sensor_inputs) and, for a sensor without an instance,
// refuses the write, Invalid, when the set would exceed the limit of a
// sensor's distinct inputs (by default DefaultMaxSensorInputs). A write
// with no new id, the common case, costs no statement. w.Known is the set
// as the write found it, under the sensor's lock that makes its writes
// take turns, so it is the set of every write committed before this one.
func (tx *Tx) RecordInputs(ctx context.Context, w SensorWrite, ids iter.Seq[int64]) error {
	fresh := freshInputs(w.Known, ids)
	if len(fresh) == 0 {
		return nil
	}
	limited, limit := w.Sensor.Instance == nil, tx.limits.SensorInputs
	total := len(w.Known) + len(fresh)
	if !limited || total <= limit {
		if err := tx.tx.QueryRow(ctx, recordInputsSQL, w.Sensor.ID, fresh).Scan(&total); err != nil {
			return dbError("record inputs", err)
		}
	}
	if limited && total > limit {
		return &apperr.Error{
			Code: apperr.Invalid,
			Message: fmt.Sprintf("the batch would give the sensor %d distinct input ids; a sensor without a blueprint has at most %d "+
				"(it has %d): reuse its input ids, or give it a blueprint", total, limit, len(w.Known)),
			Details: map[string]any{"limit": limit},
		}
	}
	return nil
}

// freshInputs returns the input ids of a write that known, ascending,
// lacks: ascending, each once.
func freshInputs(known []int64, ids iter.Seq[int64]) []int64 {
	var fresh []int64
	for id := range ids {
		if _, found := slices.BinarySearch(known, id); !found {
			fresh = append(fresh, id)
		}
	}
	slices.Sort(fresh)
	return slices.Compact(fresh)
}

// InputIDsOf yields the input ids of readings, each at least once. The
// readings of a batch mostly have the inputs of the reading before, which
// are not yielded again.
func InputIDsOf(readings []Reading) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		var last []int64
		for _, r := range readings {
			if SameIDs(r.InputIDs, last) {
				continue
			}
			last = r.InputIDs
			for _, id := range r.InputIDs {
				if !yield(id) {
					return
				}
			}
		}
	}
}

// SameIDs reports whether a and b hold the same input ids: at once when
// they are one slice, as the readings of a decoded batch that repeat the
// ids of the one before are (batch.Decode).
func SameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// replaceSQL deletes the sensor's ($1) stored readings at the instants of
// a batch ($5, from $3 to $4), and returns how many there were, queueing
// the batch's hours ($2) for their rollups in the same round trip
// (queueHoursSQL). The deletes run a chunk of readings at a time
// (delete_readings, migration 00049).
const replaceSQL = `
WITH queued AS (` + queueHoursSQL + `)
SELECT delete_readings($1, $3, $4::timestamptz + interval '1 microsecond', $5)`

// insertReadings stores readings, ordered and one per instant, of a sensor
// whose writers wait for this transaction and whose newest reading was
// newest (nil: it had none), and with queue queues their hours for the
// rollups. A batch after the sensor's newest reading, the common case,
// goes straight in with COPY, as fast as PostgreSQL ingests. Otherwise the
// stored readings at the batch's instants are deleted first, and the COPY
// follows in the same transaction: cheaper than an upsert, which must look
// up each row and cannot COPY (issue 14).
//
// It reads no readings: the first lock this transaction takes on a chunk
// of readings is the one to write it, and no chunk outside the batch's
// span is locked. A compression of the chunk (ExclusiveLock, then
// AccessExclusiveLock to truncate it) then waits for the batch, or the
// batch for it, never each for the other (docs/reliability.md).
func insertReadings(ctx context.Context, tx pgx.Tx, sensorID int64, readings []Reading, newest *time.Time, queue bool) (Written, error) {
	written := Written{New: len(readings)}
	if len(readings) == 0 {
		return written, nil
	}
	var hours []time.Time
	if queue {
		hours = readingHours(readings)
	}
	first, last := readings[0].Time, readings[len(readings)-1].Time
	switch {
	case newest != nil && !first.After(*newest):
		instants := make([]time.Time, len(readings))
		for i, r := range readings {
			instants[i] = r.Time
		}
		if newest.Before(last) { // nothing stored after the newest
			last = *newest
		}
		if err := tx.QueryRow(ctx, replaceSQL, sensorID, hours, first, last, instants).Scan(&written.Replaced); err != nil {
			return written, err
		}
		written.New -= written.Replaced
	case queue:
		if _, err := tx.Exec(ctx, queueHoursSQL, sensorID, hours); err != nil {
			return written, err
		}
	}
	if err := beginOn(ctx, tx); err != nil {
		return written, err
	}
	return written, copyReadings(ctx, tx.Conn().PgConn(), sensorID, readings)
}

// sensorOfKeySQL guards a write of LockSensorWrite's round trip: sensor
// $1 is of project $%[1]d of organization $%[2]d, as the lock checks. Its
// two lookups by primary key cost less than a round trip.
const sensorOfKeySQL = `EXISTS (SELECT FROM sensors s JOIN projects p ON p.id = s.project_id
    WHERE s.id = $1 AND p.id = $%[1]d AND p.org_id = $%[2]d)`

// aheadKeepLatestSQL is keepLatestSQL in LockSensorWrite's round trip,
// with the sensor's project $5 and organization $6.
var (
	aheadKeepLatestSQL = `
INSERT INTO sensor_latest AS l (sensor_id, datetime, input_ids, vals)
SELECT $1::bigint, $2::timestamptz, $3::bigint[], $4::float8[] WHERE ` + fmt.Sprintf(sensorOfKeySQL, 5, 6) + `
ON CONFLICT (sensor_id) DO UPDATE SET datetime = EXCLUDED.datetime, input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals
WHERE l.datetime <= EXCLUDED.datetime`
)

// upsertMax is the most readings of a batch that LockSensorWrite stores
// in its round trip, with upsertReadingsSQL: a logger's batch. Below a few
// hundred readings, an upsert costs PostgreSQL less than the DELETE and
// COPY of an overwrite, whose statements cost the same for one reading as
// for a thousand, and as little as the COPY of new ones, without the
// COPY's round trip; above, the COPY's cost per row wins
// (BenchmarkIngest).
const upsertMax = 100

// upsertReadingsSQL stores the readings of a batch of sensor $1, at
// instants $2, the i-th reading's inputs being elements $3[i] to $4[i] of
// $5 and $6, replacing those stored at its instants, and returns how many
// were new and how many replaced one; nothing unless the sensor is of
// project $7 of organization $8 (sensorOfKeySQL). A row the upsert
// inserted has no xmax; one it updated has the updating transaction's.
var upsertReadingsSQL = `
WITH u AS (
    INSERT INTO readings AS r (sensor_id, datetime, input_ids, vals)
    SELECT $1, c.t, ($5::bigint[])[c.lo:c.hi], ($6::float8[])[c.lo:c.hi]
    FROM unnest($2::timestamptz[], $3::int[], $4::int[]) AS c(t, lo, hi)
    WHERE ` + fmt.Sprintf(sensorOfKeySQL, 7, 8) + `
    ON CONFLICT (sensor_id, datetime) DO UPDATE SET input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals
    RETURNING r.xmax = 0 AS inserted
)
SELECT count(*) FILTER (WHERE inserted)::int, count(*) FILTER (WHERE NOT inserted)::int FROM u`

// readingColumns are readings as the columns of upsertReadingsSQL: the
// i-th reading's inputs are ids and values from starts[i] to ends[i],
// counted from 1 as SQL's arrays are.
func readingColumns(readings []Reading) (times []time.Time, starts, ends []int32, ids []int64, values []float64) {
	times = make([]time.Time, len(readings))
	starts, ends = make([]int32, len(readings)), make([]int32, len(readings))
	for i, r := range readings {
		times[i] = r.Time
		starts[i] = int32(len(ids) + 1)
		ids = append(ids, r.InputIDs...)
		values = append(values, r.Values...)
		ends[i] = int32(len(ids))
	}
	return times, starts, ends, ids, values
}

// LastPerInstant orders readings by time and keeps, of those at one
// instant, the one that came last: the rule is that the later reading
// wins, and COPY may not write an instant twice. Readings already in
// order, the common case, are returned as they are; others are copied.
func LastPerInstant(readings []Reading) []Reading {
	ordered := true
	for i := 1; i < len(readings) && ordered; i++ {
		ordered = readings[i-1].Time.Before(readings[i].Time)
	}
	if ordered {
		return readings
	}
	readings = slices.Clone(readings)
	slices.SortStableFunc(readings, func(a, b Reading) int { return a.Time.Compare(b.Time) })
	kept := readings[:0]
	for i, r := range readings {
		if i+1 < len(readings) && readings[i+1].Time.Equal(r.Time) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

var (
	listReadingsAscSQL  = withSensorIDs("", "", "\nWHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3\nORDER BY datetime LIMIT $4 OFFSET $5")
	listReadingsDescSQL = withSensorIDs("", "", "\nWHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3\nORDER BY datetime DESC LIMIT $4 OFFSET $5")
)

// withSensorIDs is a statement of the readings of sensor $1 that rest
// selects (its WHERE clause and what follows, FROM readings; with, a WITH
// clause it needs), whose first row is the sensor's set of input ids
// (sensor_inputs) with a NULL datetime, and whose readings have their
// input ids NULL where they are that set, which ScanReadings fills back
// in: a reading's ids and their array's header were a third of its row's
// bytes, and each id a call of int8send. guard, when set, is a condition
// on the set's row too (sensorOfKeySQL). The set and the readings are
// read in one snapshot, the statement's, and every write records its ids
// in the set in its own transaction (RecordInputs): a reading's ids, in
// that snapshot, are each one of the set's, ascending and each once, so
// they are the set exactly when they are as many, which its values' stored
// size tells, as commonIDsSQL says, without a copy or a call an id. The
// values are readings_vals_bytes's, a copy of the array where the server
// lays it out as the service reads it, not a call of float8send a value
// (migration 00073).
func withSensorIDs(with, guard, rest string) string {
	if guard != "" {
		guard = " AND " + guard
	}
	return with + `SELECT NULL::timestamptz, si.input_ids, NULL::bytea FROM sensor_inputs si WHERE si.sensor_id = $1` + guard + `
UNION ALL (
SELECT datetime, CASE WHEN pg_column_size(vals) - 8 * (SELECT cardinality(si.input_ids) FROM sensor_inputs si WHERE si.sensor_id = $1) IN (21, 24)
    THEN NULL ELSE input_ids END, readings_vals_bytes(vals)
FROM readings` + rest + `)`
}

// ListReadings calls fn with each reading of sensor that q selects, in
// order, as the rows arrive. fn must not keep the Reading it is given.
func (db *DB) ListReadings(ctx context.Context, sensor Sensor, q ReadingQuery, fn func(*Reading) error) error {
	return listReadings(ctx, db.pool, sensor, q, fn)
}

// ListReadings is DB.ListReadings in the transaction.
func (tx *Tx) ListReadings(ctx context.Context, sensor Sensor, q ReadingQuery, fn func(*Reading) error) error {
	return listReadings(ctx, tx.tx, sensor, q, fn)
}

func listReadings(ctx context.Context, db querier, sensor Sensor, q ReadingQuery, fn func(*Reading) error) error {
	query := listReadingsAscSQL
	if q.Desc {
		query = listReadingsDescSQL
	}
	var limit *int // LIMIT NULL is no limit
	if q.Limit > 0 {
		limit = &q.Limit
	}
	if len(q.Without) == 0 {
		return streamReadings(ctx, db, "list readings", fn, query, sensor.ID, q.From, q.To, limit, q.Offset)
	}
	from, to := make([]time.Time, len(q.Without)), make([]time.Time, len(q.Without))
	for i, w := range q.Without {
		from[i], to[i] = w[0], w[1]
	}
	query = strings.Replace(query, "datetime BETWEEN $2 AND $3", "datetime BETWEEN $2 AND $3"+withoutSQL, 1)
	return streamReadings(ctx, db, "list readings", fn, query, sensor.ID, q.From, q.To, limit, q.Offset, from, to)
}

// withoutSQL leaves out the readings in the spans $6 to $7, inclusive.
const withoutSQL = `
  AND NOT EXISTS (SELECT FROM unnest($6::timestamptz[], $7::timestamptz[]) AS w(a, b) WHERE datetime BETWEEN w.a AND w.b)`

// streamReadings runs query and calls fn with each reading as its row
// arrives. fn's own errors (a client gone, say) are returned as they are,
// not as the database's.
func streamReadings(ctx context.Context, db querier, what string, fn func(*Reading) error, query string, args ...any) error {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return dbError(what, err)
	}
	return scanReadings(rows, what, fn)
}

// scanReadings calls fn with each reading of rows (ScanReadings),
// returning fn's errors as they are and the database's as what's.
func scanReadings(rows pgx.Rows, what string, fn func(*Reading) error) error {
	var fnErr error
	err := ScanReadings(rows, func(r *Reading) error {
		fnErr = fn(r)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return dbError(what, err)
}

// InputIDs returns every input id the sensor's readings have had,
// ascending: the set ingest keeps, bounded by the limit on a sensor's
// inputs, so it costs one row whatever the readings.
func (db *DB) InputIDs(ctx context.Context, sensor Sensor) ([]int64, error) {
	var ids []int64
	err := db.pool.QueryRow(ctx, `SELECT coalesce((SELECT input_ids FROM sensor_inputs WHERE sensor_id = $1), '{}')`, sensor.ID).Scan(&ids)
	return ids, dbError("input ids", err)
}

// CountStored splits the instants a write would bring, in microseconds
// since 1970 (the readings' precision), into those new to the sensor and
// those it already has a reading at, as Written counts them: each instant
// once, however often it comes. It sorts micros. The range bounds the
// probe to the chunks that can hold them.
func (db *DB) CountStored(ctx context.Context, sensor Sensor, micros []int64) (Written, error) {
	slices.Sort(micros)
	micros = slices.Compact(micros)
	if len(micros) == 0 {
		return Written{}, nil
	}
	var stored int
	err := db.pool.QueryRow(ctx, `
SELECT count(*) FROM readings r
JOIN unnest($2::bigint[]) AS m(us) ON r.datetime = 'epoch'::timestamptz + m.us * interval '1 microsecond'
WHERE r.sensor_id = $1 AND r.datetime BETWEEN $3 AND $4`,
		sensor.ID, micros, time.UnixMicro(micros[0]), time.UnixMicro(micros[len(micros)-1])).Scan(&stored)
	if err != nil {
		return Written{}, dbError("count stored readings", err)
	}
	return Written{New: len(micros) - stored, Replaced: stored}, nil
}

// Deleted is what a delete of a sensor's readings did.
type Deleted struct {
	Count int64
	// Sensor is the sensor as its lock found it: its ID, ProjectID and
	// Instance.
	Sensor Sensor
	// TookNewest tells that the sensor's newest reading was among those
	// deleted: the newest is now the newest left, or none.
	TookNewest bool
}

// DeleteReadings deletes the sensor's readings from from (inclusive) to to
// (exclusive), a chunk of readings at a time as ingest deletes
// (replaceSQL), queues their hours for the rollups, and keeps the
// sensor's newest reading. Unlike ingest, it excludes the sensor's other
// writers until the transaction ends: the newest reading it recomputes
// must not miss a write that commits meanwhile. It returns NotFound, and
// Conflict when the sensor's project is archived.
func (tx *Tx) DeleteReadings(ctx context.Context, key SensorKey, from, to time.Time) (Deleted, error) {
	d, err := deleteReadings(ctx, tx.tx, key, from, to)
	return d, dbError("delete readings", err)
}

func deleteReadings(ctx context.Context, tx pgx.Tx, key SensorKey, from, to time.Time) (Deleted, error) {
	w, err := lockSensorWrite(ctx, tx, key)
	d := Deleted{Sensor: w.Sensor}
	if err != nil {
		return d, err
	}
	if err := tx.QueryRow(ctx, `SELECT delete_readings($1, $2, $3)`, key.SensorID, from, to).Scan(&d.Count); err != nil || d.Count == 0 {
		return d, err
	}
	if err := queueDeletedHours(ctx, tx, key.SensorID, from, to); err != nil {
		return d, err
	}
	err = tx.QueryRow(ctx, recomputeLatestSQL, key.SensorID, from, to).Scan(&d.TookNewest)
	return d, err
}

// recomputeLatestSQL replaces the sensor's newest reading after a delete
// of [$2, $3) that took it, with the newest before $2 (nothing was after
// it), or removes it when there is none, and says whether the delete took
// it.
const recomputeLatestSQL = `
WITH gone AS (
    DELETE FROM sensor_latest WHERE sensor_id = $1 AND datetime >= $2 AND datetime < $3
    RETURNING sensor_id
), refill AS (
    INSERT INTO sensor_latest (sensor_id, datetime, input_ids, vals)
    SELECT r.sensor_id, r.datetime, r.input_ids, r.vals FROM gone
    CROSS JOIN LATERAL (
        SELECT sensor_id, datetime, input_ids, vals FROM readings
        WHERE sensor_id = gone.sensor_id AND datetime < $2 ORDER BY datetime DESC LIMIT 1
    ) r
)
SELECT EXISTS (SELECT FROM gone)`
