package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// FormulasVersion is that of the sensor's formulas, constants, calibrations and
// baselines, which its output rollups were computed with; 0 without an
// instance.
func (s Sensor) FormulasVersion() int64 {
	if s.Instance == nil {
		return 0
	}
	return s.Instance.Version
}

// queueHoursSQL queues the hours $2 of a batch of sensor $1, in the
// batch's transaction: one row per hour the batch touches, whatever its
// size.
const queueHoursSQL = `
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT $1, h, true FROM unnest($2::timestamptz[]) AS h
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true, touched_at = now()`

// hourFirsts are the hours of readings, ordered by time, each once, and
// the time of each one's first reading. A reading before the end of the
// hour of the one before is of that hour: one comparison, where
// truncating each reading's time to its hour is a division.
func hourFirsts(readings []Reading) (hours, firsts []time.Time) {
	var end time.Time
	for i := range readings {
		t := readings[i].Time
		if len(hours) > 0 && t.Before(end) {
			continue
		}
		h := t.Truncate(time.Hour)
		hours, firsts, end = append(hours, h), append(firsts, t), h.Add(time.Hour)
	}
	return hours, firsts
}

// batchHoursSQL reads the rollups of the hours $2 of a batch of sensor
// $1, whose first readings of each are at $3, in LockSensorWrite's round
// trip before the batch is stored, and says of each whether the batch's
// readings of it can be merged into its rollup (BatchHour.Mergeable): an
// hour not queued for the maintainer, whose rollup holds exactly its
// stored readings, and which either has none (no rollup) or none after
// the batch's first there (none after the sensor's newest). Only those
// hours' rollups are read whole. Of each hour whose rollup holds exactly
// its stored readings (not queued), it reads how many there are
// (BatchHour.Stored). Nothing unless the sensor is of project
// $4 of organization $5 (sensorOfKeySQL).
var batchHoursSQL = `
SELECT h.hour, m.ok AND (r.sensor_id IS NULL OR r.quarters IS NOT NULL), r.sensor_id IS NOT NULL, r.n, r.version,
       CASE WHEN m.ok THEN r.inputs END, r.outputs IS NOT NULL, CASE WHEN m.ok THEN r.outputs END,
       CASE WHEN m.ok THEN r.edges END, CASE WHEN m.ok THEN r.quarters END,
       CASE WHEN d.sensor_id IS NULL AND (r.sensor_id IS NULL OR r.inputs IS NOT NULL) THEN coalesce(r.n, 0) ELSE -1 END
FROM unnest($2::timestamptz[], $3::timestamptz[]) AS h(hour, first)
LEFT JOIN LATERAL (SELECT d.sensor_id FROM rollup_dirty d WHERE d.sensor_id = $1 AND d.hour = h.hour OFFSET 0) d ON true
LEFT JOIN LATERAL (SELECT * FROM rollup_hours r WHERE r.sensor_id = $1 AND r.hour = h.hour OFFSET 0) r ON true
CROSS JOIN LATERAL (SELECT d.sensor_id IS NULL AND (r.sensor_id IS NULL OR (r.inputs IS NOT NULL
    AND h.first > coalesce((SELECT datetime FROM sensor_latest WHERE sensor_id = $1), '-infinity'))) OFFSET 0) AS m(ok)
WHERE ` + fmt.Sprintf(sensorOfKeySQL, 4, 5)

// batchHoursSQL's plan is the same for any batch: an index lookup of each
// hour in each table (the OFFSET 0 keeps its subqueries apart, so that
// no plan joins a sensor's every rollup). PostgreSQL's plan cache would
// still plan it for each batch, since a batch's few hours make its custom
// plan look cheaper than the generic one, planned for ten: planning cost
// more than running it (0.3-0.8 ms a batch, pg_stat_statements over row
// 4s of make bench). The lock's round trip runs it with the generic plan,
// and puts the setting back at once.
const (
	genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`
	resetPlansSQL   = `RESET plan_cache_mode`
)

// scanBatchHours scans the rows of batchHoursSQL, ordered by hour.
func scanBatchHours(rows pgx.Rows, n int) ([]BatchHour, error) {
	hours := make([]BatchHour, 0, n)
	for rows.Next() {
		var (
			h                                BatchHour
			exists, hasOutputs               bool
			count, version                   *int64
			inputs, outputs, edges, quarters []byte
		)
		if err := rows.Scan(&h.Hour, &h.Mergeable, &exists, &count, &version, &inputs, &hasOutputs, &outputs, &edges, &quarters, &h.Stored); err != nil {
			return nil, err
		}
		if h.Mergeable && exists {
			r := &HourRollup{Hour: h.Hour, Count: *count, Version: *version, Whole: true}
			if err := unpackHour(inputs, outputs, edges, hasOutputs, true, r); err != nil {
				return nil, err
			}
			if err := unpackQuarters(quarters, &r.Quarters); err != nil {
				return nil, err
			}
			h.Rollup = r
		}
		hours = append(hours, h)
	}
	slices.SortFunc(hours, func(a, b BatchHour) int { return a.Hour.Compare(b.Hour) })
	return hours, rows.Err()
}

// upsertHourRollupsSQL writes the rollups of hours of sensor $1, packed.
const upsertHourRollupsSQL = `
INSERT INTO rollup_hours (sensor_id, hour, n, version, inputs, outputs, edges, quarters)
SELECT $1, * FROM unnest($2::timestamptz[], $3::bigint[], $4::bigint[], $5::bytea[], $6::bytea[], $7::bytea[], $8::bytea[])
ON CONFLICT (sensor_id, hour) DO UPDATE SET n = EXCLUDED.n, version = EXCLUDED.version, inputs = EXCLUDED.inputs,
    outputs = EXCLUDED.outputs, edges = EXCLUDED.edges, quarters = EXCLUDED.quarters`

// StoreBatchRollups writes, with the commit of the batch w locked, the
// rollups of its mergeable hours (w.Hours) with its readings merged in,
// rows, and queues the others, stale, for the maintainer. It sends
// nothing before the commit: its errors are the commit's. Until it is
// called, the commit queues every hour of the batch (LockSensorWrite).
func (tx *Tx) StoreBatchRollups(w SensorWrite, rows []HourRollup, stale []time.Time) {
	b := &pgx.Batch{}
	if len(rows) > 0 {
		at, n, version, inputs, outputs, edges, quarters := packHourRollups(rows)
		b.Queue(upsertHourRollupsSQL, w.Sensor.ID, at, n, version, inputs, outputs, edges, quarters)
	}
	if len(stale) > 0 {
		b.Queue(queueHoursSQL, w.Sensor.ID, stale)
	}
	tx.tx.rollups = b
}

// readingHours are the hours of readings, ordered by time, each once.
func readingHours(readings []Reading) []time.Time {
	var hours []time.Time
	for _, r := range readings {
		h := r.Time.Truncate(time.Hour)
		if n := len(hours); n == 0 || !hours[n-1].Equal(h) {
			hours = append(hours, h)
		}
	}
	return hours
}

// queueDeletedHours queues the hours of [from, to) that have rollups, after
// a delete of their readings; the hours of readings without rollups yet
// are queued already.
func queueDeletedHours(ctx context.Context, tx pgx.Tx, sensorID int64, from, to time.Time) error {
	_, err := tx.Exec(ctx, `
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT sensor_id, hour, true FROM rollup_hours WHERE sensor_id = $1 AND hour >= $2 AND hour < $3
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true, touched_at = now()`, sensorID, from.Truncate(time.Hour), to)
	return err
}

// queueOutputHours queues every hour of the sensor that has rollups for a
// recomputation of its outputs, after an edit of its formulas: until it
// is done, the version of those hours is not the sensor's, and queries
// compute their outputs from the readings.
func queueOutputHours(ctx context.Context, tx pgx.Tx, sensorID int64) error {
	_, err := tx.Exec(ctx, `
INSERT INTO rollup_dirty (sensor_id, hour, inputs, touched_at)
SELECT sensor_id, hour, false, '-infinity' FROM rollup_hours WHERE sensor_id = $1
ON CONFLICT (sensor_id, hour) DO NOTHING`, sensorID)
	return err
}

// settledSQL holds a queued hour that no write has queued for the last
// $%d (an interval): an hour a stream of batches overwrites, the next
// batch queueing it again, is read back and recomputed once they stop,
// not once a round of the maintainer as they come. Until then reads
// compute it from the readings, as any queued hour.
const settledSQL = `touched_at <= now() - $%d::interval`

// NextQueuedSensor returns the first sensor after after, by id, with
// queued hours of rollups that have settled, that no write has queued
// for settle; 0 when there is none.
func (db *DB) NextQueuedSensor(ctx context.Context, after int64, settle time.Duration) (int64, error) {
	var sensorID int64
	err := db.pool.QueryRow(ctx, `SELECT sensor_id FROM rollup_dirty WHERE sensor_id > $1 AND `+fmt.Sprintf(settledSQL, 2)+`
ORDER BY sensor_id LIMIT 1`, after, settle).Scan(&sensorID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return sensorID, dbError("next queued sensor", err)
}

// QueuedHours are queued hours of a sensor's rollups that a transaction
// holds (ClaimQueuedHours), to recompute them.
type QueuedHours struct {
	Sensor Sensor
	Hours  []time.Time // ascending
}

// ClaimQueuedHours holds, until the transaction ends, the sensor against
// writes and edits, and up to limit of its queued hours that no write has
// queued for settle, the newest
// first, against other replicas, which skip them: an hour is recomputed
// once, by one replica. It takes the sensor first, as its writers lock
// it, then the hours: a writer holding the sensor never waits for an hour
// held here. A sensor being written (a file can take a while), or deleted
// with its queue, is skipped, not waited for, so that it holds up no other
// sensor's hours; its own wait for a later round. Hours is empty when
// nothing was held.
func (tx *Tx) ClaimQueuedHours(ctx context.Context, sensorID int64, limit int, settle time.Duration) (QueuedHours, error) {
	q, err := claimQueuedHours(ctx, tx.tx, sensorID, limit, settle)
	return q, dbError("claim queued hours", err)
}

func claimQueuedHours(ctx context.Context, tx pgx.Tx, sensorID int64, limit int, settle time.Duration) (QueuedHours, error) {
	var q QueuedHours
	rows, _ := tx.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $1 FOR SHARE OF s SKIP LOCKED`, sensorID)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	if errors.Is(err, pgx.ErrNoRows) {
		return q, nil
	}
	if err != nil {
		return q, err
	}
	q.Sensor = sensor
	// The newest first: a chart mostly shows the latest hours.
	rows, _ = tx.Query(ctx, `
SELECT hour FROM rollup_dirty WHERE sensor_id = $1 AND `+fmt.Sprintf(settledSQL, 3)+`
ORDER BY hour DESC LIMIT $2 FOR UPDATE SKIP LOCKED`, sensorID, limit, settle)
	if q.Hours, err = pgx.CollectRows(rows, pgx.RowTo[time.Time]); err != nil {
		return q, err
	}
	slices.Reverse(q.Hours)
	return q, nil
}

// theseHours bounds the statements of held hours: the bounds let
// TimescaleDB skip the chunks of other hours.
const theseHours = `sensor_id = $1 AND hour = ANY($2) AND hour >= $3 AND hour <= $4`

// HourReadings gives fn each reading of the held hours, with its hour, as
// the rows arrive, in time order within each run of consecutive hours;
// fn must not keep the reading. A run is one range scan: read an hour at
// a time, each batch of a compressed chunk (a thousand readings) would be
// decompressed once an hour it spans. fn's errors are returned as they
// are.
func (tx *Tx) HourReadings(ctx context.Context, q QueuedHours, fn func(hour time.Time, r *Reading) error) error {
	var from, to []time.Time
	for _, h := range q.Hours {
		if n := len(to); n > 0 && to[n-1].Equal(h) {
			to[n-1] = h.Add(time.Hour)
			continue
		}
		from, to = append(from, h), append(to, h.Add(time.Hour))
	}
	return tx.SpanReadings(ctx, q.Sensor.ID, from, to, q.Sensor.Instance.InputIDs(), func(r *Reading) error { return fn(r.Time.Truncate(time.Hour), r) })
}

// StoreHourRollups replaces the rollups of the held hours with rows, the
// held hours' with readings, and takes the held hours off the queue.
func (tx *Tx) StoreHourRollups(ctx context.Context, q QueuedHours, rows []HourRollup) error {
	hours := q.Hours
	if len(hours) == 0 {
		return nil
	}
	at, n, version, inputs, output, edges, quar := packHourRollups(rows)
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM rollup_hours WHERE `+theseHours, q.Sensor.ID, hours, hours[0], hours[len(hours)-1])
	batch.Queue(`
INSERT INTO rollup_hours (sensor_id, hour, n, version, inputs, outputs, edges, quarters)
SELECT $1, * FROM unnest($2::timestamptz[], $3::bigint[], $4::bigint[], $5::bytea[], $6::bytea[], $7::bytea[], $8::bytea[])`,
		q.Sensor.ID, at, n, version, inputs, output, edges, quar)
	batch.Queue(`DELETE FROM rollup_dirty WHERE sensor_id = $1 AND hour = ANY($2)`, q.Sensor.ID, hours)
	return dbError("store hour rollups", tx.tx.SendBatch(ctx, batch).Close())
}

// packHourRollups are rows as the columns of rollup_hours.
func packHourRollups(rows []HourRollup) (at []time.Time, n, version []int64, inputs, output, edges, quar [][]byte) {
	at = make([]time.Time, len(rows))
	n, version = make([]int64, len(rows)), make([]int64, len(rows))
	inputs, output = make([][]byte, len(rows)), make([][]byte, len(rows))
	edges, quar = make([][]byte, len(rows)), make([][]byte, len(rows))
	for i := range rows {
		r := &rows[i]
		series := len(r.Inputs) + len(r.Outputs)
		at[i], n[i], version[i] = r.Hour, r.Count, r.Version
		inputs[i] = packCore(make([]byte, 0, len(r.Inputs)*coreBytes), r.Inputs)
		if r.Outputs != nil {
			output[i] = packCore(make([]byte, 0, len(r.Outputs)*coreBytes), r.Outputs)
		}
		edges[i] = packEdges(packEdges(make([]byte, 0, series*edgesBytes), r.Inputs), r.Outputs)
		quar[i] = packQuarters(make([]byte, 0, 4*(quarterHeader+series*seriesBytes)), &r.Quarters)
	}
	return at, n, version, inputs, output, edges, quar
}
