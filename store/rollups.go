package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/stats"
)

// version is that of the sensor's formulas, constants, calibrations and
// baselines, which its output rollups were computed with; 0 without an
// instance.
func (s Sensor) version() int64 {
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
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true WHERE NOT d.inputs`

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
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true WHERE NOT d.inputs`, sensorID, from.Truncate(time.Hour), to)
	return err
}

// queueOutputHours queues every hour of the sensor that has rollups for a
// recomputation of its outputs, after an edit of its formulas: until it
// is done, the version of those hours is not the sensor's, and queries
// compute their outputs from the readings.
func queueOutputHours(ctx context.Context, tx pgx.Tx, sensorID int64) error {
	_, err := tx.Exec(ctx, `
INSERT INTO rollup_dirty (sensor_id, hour, inputs)
SELECT sensor_id, hour, false FROM rollup_hours WHERE sensor_id = $1
ON CONFLICT (sensor_id, hour) DO NOTHING`, sensorID)
	return err
}

// NextQueuedSensor returns the first sensor after after, by id, with
// queued hours of rollups; 0 when there is none.
func (db *DB) NextQueuedSensor(ctx context.Context, after int64) (int64, error) {
	var sensorID int64
	err := db.pool.QueryRow(ctx, `SELECT sensor_id FROM rollup_dirty WHERE sensor_id > $1 ORDER BY sensor_id LIMIT 1`, after).Scan(&sensorID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return sensorID, dbError("next queued sensor", err)
}

// The statements of the rollups' recomputation take $1 the sensor and $2
// the hours to recompute, whose readings are read a range scan an hour
// (see spansSQL).
const (
	hoursReadingsSQL = `unnest($2::timestamptz[]) AS h(hour)
CROSS JOIN LATERAL (
    SELECT * FROM readings r WHERE r.sensor_id = $1 AND r.datetime >= h.hour AND r.datetime < h.hour + interval '1 hour' OFFSET 0
) r`
	rollupHoursSQL = `
INSERT INTO rollup_hours (sensor_id, hour, n, version)
SELECT $1, h.hour, count(*), $3 FROM ` + hoursReadingsSQL + ` GROUP BY h.hour`
	rollupInputsSQL = `
INSERT INTO rollup_inputs (sensor_id, hour, id, n, sum_lo, sum_hi, min, max, first, first_at, last, last_at)
SELECT $1, h.hour, u.id, count(*), coalesce(sum(u.v) FILTER (WHERE abs(u.v) < $3), 0),
       coalesce(sum(u.v * $4) FILTER (WHERE abs(u.v) >= $3), 0), min(u.v), max(u.v),
       (array_agg(u.v ORDER BY r.datetime))[1], min(r.datetime), (array_agg(u.v ORDER BY r.datetime DESC))[1], max(r.datetime)
FROM ` + hoursReadingsSQL + ` CROSS JOIN LATERAL unnest(r.input_ids, r.vals) AS u(id, v)
GROUP BY h.hour, u.id`
	rollupOutputsSQL = `
INSERT INTO rollup_outputs (sensor_id, hour, id, n, sum_lo, sum_hi, min, max, first, first_at, last, last_at)
SELECT $1, * FROM unnest($2::timestamptz[], $3::bigint[], $4::bigint[], $5::float8[], $6::float8[], $7::float8[], $8::float8[],
    $9::float8[], $10::timestamptz[], $11::float8[], $12::timestamptz[])`
)

// QueuedHours are queued hours of a sensor's rollups that a transaction
// holds (ClaimQueuedHours), to recompute them.
type QueuedHours struct {
	Sensor     Sensor
	Hours      []time.Time // ascending
	inputHours []time.Time // of Hours, those whose inputs are queued too
}

// ClaimQueuedHours holds, until the transaction ends, the sensor against
// writes and edits, and up to limit of its queued hours against other
// replicas, which skip them: an hour is recomputed once, by one replica.
// It takes the sensor first, as its writers lock it, then the hours: a
// writer holding the sensor never waits for an hour held here. A sensor
// being written (a file can take a while), or deleted with its queue, is
// skipped, not waited for, so that it holds up no other sensor's hours;
// its own wait for a later round. Hours is empty when nothing was held.
func (tx *Tx) ClaimQueuedHours(ctx context.Context, sensorID int64, limit int) (QueuedHours, error) {
	q, err := claimQueuedHours(ctx, tx.tx, sensorID, limit)
	return q, dbError("claim queued hours", err)
}

func claimQueuedHours(ctx context.Context, tx pgx.Tx, sensorID int64, limit int) (QueuedHours, error) {
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
	rows, _ = tx.Query(ctx, `
SELECT hour, inputs FROM rollup_dirty WHERE sensor_id = $1 ORDER BY hour LIMIT $2 FOR UPDATE SKIP LOCKED`, sensorID, limit)
	var (
		hour   time.Time
		inputs bool
	)
	_, err = pgx.ForEachRow(rows, []any{&hour, &inputs}, func() error {
		q.Hours = append(q.Hours, hour)
		if inputs {
			q.inputHours = append(q.inputHours, hour)
		}
		return nil
	})
	return q, err
}

// theseHours bounds the statements of held hours: the bounds let
// TimescaleDB skip the chunks of other hours.
const theseHours = `sensor_id = $1 AND hour = ANY($2) AND hour >= $3 AND hour <= $4`

// RecomputeHours recomputes from the readings the held hours' counts, with
// the version of the sensor's formulas, and the inputs' statistics of the
// hours whose inputs are queued, and deletes the hours' output rollups,
// for StoreOutputRollups to write again.
func (tx *Tx) RecomputeHours(ctx context.Context, q QueuedHours) error {
	return dbError("recompute hours", recomputeHours(ctx, tx.tx, q))
}

func recomputeHours(ctx context.Context, tx pgx.Tx, q QueuedHours) error {
	sensorID, hours := q.Sensor.ID, q.Hours
	first, last := hours[0], hours[len(hours)-1]
	if _, err := tx.Exec(ctx, `DELETE FROM rollup_hours WHERE `+theseHours, sensorID, hours, first, last); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, rollupHoursSQL, sensorID, hours, q.Sensor.version()); err != nil {
		return err
	}
	if in := q.inputHours; len(in) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM rollup_inputs WHERE `+theseHours, sensorID, in, in[0], in[len(in)-1]); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, rollupInputsSQL, sensorID, in, stats.SplitAt, 1/stats.SplitAt); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `DELETE FROM rollup_outputs WHERE `+theseHours, sensorID, hours, first, last)
	return err
}

// HourReadings gives fn each reading of the held hours, in time order,
// with its hour, as the rows arrive; fn must not keep the reading. fn's
// errors are returned as they are.
func (tx *Tx) HourReadings(ctx context.Context, q QueuedHours, fn func(hour time.Time, r *Reading) error) error {
	query := `SELECT h.hour, r.datetime, r.input_ids, r.vals FROM ` + hoursReadingsSQL + ` ORDER BY r.datetime`
	return eachReading(ctx, tx.tx, "hour readings", query, []any{q.Sensor.ID, q.Hours}, fn)
}

// OutputRollup is an output's statistics over an hour.
type OutputRollup struct {
	Hour     time.Time
	OutputID int64
	stats.Partial
}

// StoreOutputRollups stores the outputs' statistics of the held hours, in
// one statement.
func (tx *Tx) StoreOutputRollups(ctx context.Context, q QueuedHours, rows []OutputRollup) error {
	if len(rows) == 0 {
		return nil
	}
	var c outputRollups
	for i := range rows {
		c.add(&rows[i])
	}
	_, err := tx.tx.Exec(ctx, rollupOutputsSQL, q.Sensor.ID, c.hour, c.id, c.n, c.lo, c.hi, c.min, c.max, c.first, c.firstAt, c.last, c.lastAt)
	return dbError("store output rollups", err)
}

// FinishQueuedHours takes the held hours off the queue.
func (tx *Tx) FinishQueuedHours(ctx context.Context, q QueuedHours) error {
	_, err := tx.tx.Exec(ctx, `DELETE FROM rollup_dirty WHERE sensor_id = $1 AND hour = ANY($2)`, q.Sensor.ID, q.Hours)
	return dbError("finish queued hours", err)
}

// outputRollups are the rows of rollup_outputs, as columns.
type outputRollups struct {
	hour             []time.Time
	id, n            []int64
	lo, hi, min, max []float64
	first, last      []float64
	firstAt, lastAt  []time.Time
}

func (o *outputRollups) add(r *OutputRollup) {
	p := &r.Partial
	o.hour, o.id, o.n = append(o.hour, r.Hour), append(o.id, r.OutputID), append(o.n, p.Count)
	o.lo, o.hi = append(o.lo, p.Sums.Lo), append(o.hi, p.Sums.Hi)
	o.min, o.max = append(o.min, p.Min), append(o.max, p.Max)
	o.first, o.firstAt = append(o.first, p.First), append(o.firstAt, p.FirstAt)
	o.last, o.lastAt = append(o.last, p.Last), append(o.lastAt, p.LastAt)
}
