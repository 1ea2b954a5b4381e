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

// OutputsOf returns the Outputs that compute a sensor's outputs, or nil for
// a sensor without any.
type OutputsOf func(Sensor) Outputs

// MaintainRollups recomputes from the readings the rollups of up to
// maxHours queued hours, of one sensor after another, and tells how many
// it recomputed: fewer than maxHours when the queue is empty. Each sensor's
// hours are recomputed in a transaction that holds the sensor against
// writes and edits, and the queued hours' rows against other replicas,
// which skip them: an hour is recomputed once, by one replica. outputsOf
// computes the outputs as a read of the API does.
func (db *DB) MaintainRollups(ctx context.Context, outputsOf OutputsOf, maxHours int) (int, error) {
	done := 0
	for done < maxHours {
		after := db.rollupCursor.Load()
		var sensorID int64
		err := db.pool.QueryRow(ctx, `SELECT sensor_id FROM rollup_dirty WHERE sensor_id > $1 ORDER BY sensor_id LIMIT 1`, after).Scan(&sensorID)
		if errors.Is(err, pgx.ErrNoRows) {
			if after == 0 {
				return done, nil
			}
			db.rollupCursor.Store(0) // round again, from the first sensor
			continue
		}
		if err != nil {
			return done, dbError("maintain rollups", err)
		}
		n, err := db.rollupSensor(ctx, sensorID, outputsOf, maxHours-done)
		if err != nil {
			return done, dbError("maintain rollups", err)
		}
		db.rollupCursor.Store(sensorID)
		done += n
		if n == 0 && after == 0 {
			return done, nil // every queued hour is another replica's
		}
	}
	return done, nil
}

// The statements of rollupSensor take $1 the sensor and $2 the hours to
// recompute, whose readings are read a range scan an hour (see spansSQL).
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

// rollupSensor recomputes up to limit queued hours of the sensor, and
// tells how many.
func (db *DB) rollupSensor(ctx context.Context, sensorID int64, outputsOf OutputsOf, limit int) (int, error) {
	var n int
	err := db.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		n = 0
		// The sensor first, as its writers lock it, then the hours: a
		// writer holding the sensor never waits for an hour held here. A
		// sensor being written (a file can take a while) is skipped, not
		// waited for, so that it holds up no other sensor's hours; its own
		// wait for a later round.
		rows, _ := tx.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $1 FOR SHARE OF s SKIP LOCKED`, sensorID)
		sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // being written, or deleted and its queue with it
		}
		if err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `
SELECT hour, inputs FROM rollup_dirty WHERE sensor_id = $1 ORDER BY hour LIMIT $2 FOR UPDATE SKIP LOCKED`, sensorID, limit)
		var (
			hours, inputHours []time.Time
			hour              time.Time
			inputs            bool
		)
		_, err = pgx.ForEachRow(rows, []any{&hour, &inputs}, func() error {
			hours = append(hours, hour)
			if inputs {
				inputHours = append(inputHours, hour)
			}
			return nil
		})
		if err != nil || len(hours) == 0 {
			return err
		}
		n = len(hours)
		first, last := hours[0], hours[len(hours)-1]
		// The bounds let TimescaleDB skip the chunks of other hours.
		const these = `sensor_id = $1 AND hour = ANY($2) AND hour >= $3 AND hour <= $4`
		if _, err := tx.Exec(ctx, `DELETE FROM rollup_hours WHERE `+these, sensorID, hours, first, last); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, rollupHoursSQL, sensorID, hours, sensor.version()); err != nil {
			return err
		}
		if len(inputHours) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM rollup_inputs WHERE `+these, sensorID, inputHours, inputHours[0], inputHours[len(inputHours)-1]); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, rollupInputsSQL, sensorID, inputHours, stats.SplitAt, 1/stats.SplitAt); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rollup_outputs WHERE `+these, sensorID, hours, first, last); err != nil {
			return err
		}
		if outputsOf != nil {
			if out := outputsOf(sensor); out != nil && len(out.IDs()) > 0 {
				if err := rollupOutputs(ctx, tx, sensorID, hours, out); err != nil {
					return err
				}
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM rollup_dirty WHERE sensor_id = $1 AND hour = ANY($2)`, sensorID, hours)
		return err
	})
	return n, err
}

// outputRollups are the rows of rollup_outputs, as columns.
type outputRollups struct {
	hour             []time.Time
	id, n            []int64
	lo, hi, min, max []float64
	first, last      []float64
	firstAt, lastAt  []time.Time
}

func (o *outputRollups) add(hour time.Time, id int64, p *stats.Partial) {
	o.hour, o.id, o.n = append(o.hour, hour), append(o.id, id), append(o.n, p.Count)
	o.lo, o.hi = append(o.lo, p.Sums.Lo), append(o.hi, p.Sums.Hi)
	o.min, o.max = append(o.min, p.Min), append(o.max, p.Max)
	o.first, o.firstAt = append(o.first, p.First), append(o.firstAt, p.FirstAt)
	o.last, o.lastAt = append(o.last, p.Last), append(o.lastAt, p.LastAt)
}

// rollupOutputs computes the outputs of the readings of hours, as they
// stream in time order, and stores their statistics per hour.
func rollupOutputs(ctx context.Context, tx pgx.Tx, sensorID int64, hours []time.Time, out Outputs) error {
	ids := out.IDs()
	parts := make([]stats.Partial, len(ids))
	var rolled outputRollups
	flush := func(hour time.Time) {
		for k := range parts {
			if parts[k].Count > 0 {
				rolled.add(hour, ids[k], &parts[k])
			}
			parts[k] = stats.Partial{}
		}
	}
	query := `SELECT h.hour, r.datetime, r.input_ids, r.vals FROM ` + hoursReadingsSQL + ` ORDER BY r.datetime`
	add := func(k int, t time.Time, v float64) { parts[k].Add(t, v) }
	err := eachReading(ctx, tx, query, []any{sensorID, hours}, flush, func(_ time.Time, r *Reading) { addOutputs(out, r, add) })
	if err != nil {
		return err
	}
	if len(rolled.id) == 0 {
		return nil
	}
	_, err = tx.Exec(ctx, rollupOutputsSQL, sensorID, rolled.hour, rolled.id, rolled.n, rolled.lo, rolled.hi, rolled.min, rolled.max,
		rolled.first, rolled.firstAt, rolled.last, rolled.lastAt)
	return err
}
