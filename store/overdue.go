package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// OverdueTarget is the target key of overdue alarms and their events.
const OverdueTarget = "overdue"

// OverdueRule raises an alarm at a level when its sensor has had no
// reading for After.
type OverdueRule struct {
	SensorID  int64
	LevelID   int64
	Level     string // the level's name
	After     time.Duration
	CreatedAt time.Time
}

// Limits of an overdue rule's duration: below a minute the background
// check's own period would blur it; a year is the longest silence worth a
// rule.
const (
	MinOverdue = time.Minute
	MaxOverdue = 366 * 24 * time.Hour
)

// GetOverdueRule returns the sensor's overdue rule. It returns NotFound
// when the sensor or its rule does not exist.
func (db *DB) GetOverdueRule(ctx context.Context, key SensorKey) (OverdueRule, error) {
	if _, err := db.GetSensor(ctx, key); err != nil {
		return OverdueRule{}, err
	}
	r, err := overdueRule(ctx, db.pool, key.SensorID)
	return r, notFound("get overdue rule", err, "overdue rule")
}

// overdueRule reads the sensor's overdue rule; pgx.ErrNoRows when it has
// none.
func overdueRule(ctx context.Context, q querier, sensorID int64) (OverdueRule, error) {
	var r OverdueRule
	var seconds int
	err := q.QueryRow(ctx, `
SELECT o.sensor_id, o.level_id, l.name, o.after_seconds, o.created_at
FROM alarm_overdue o JOIN alarm_levels l ON l.id = o.level_id WHERE o.sensor_id = $1`, sensorID).
		Scan(&r.SensorID, &r.LevelID, &r.Level, &seconds, &r.CreatedAt)
	r.After = time.Duration(seconds) * time.Second
	return r, err
}

// SetOverdueRule gives the sensor an overdue rule at level after after, or
// replaces its rule; a raised overdue alarm stays until the next check. It
// returns NotFound; Invalid for a level that is not the project's or a
// duration out of MinOverdue to MaxOverdue; Conflict when the project is
// archived.
func (db *DB) SetOverdueRule(ctx context.Context, key SensorKey, level string, after time.Duration) (OverdueRule, error) {
	if after < MinOverdue || after > MaxOverdue || after%time.Second != 0 {
		return OverdueRule{}, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("after_seconds must be whole seconds from %d to %d", int(MinOverdue.Seconds()), int(MaxOverdue.Seconds())),
			Details: map[string]any{"field": "after_seconds"}}
	}
	err := db.editSensor(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		levelID, err := projectLevel(ctx, tx, sensor.ProjectID, level)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
INSERT INTO alarm_overdue (sensor_id, level_id, after_seconds) VALUES ($1, $2, $3)
ON CONFLICT (sensor_id) DO UPDATE SET level_id = EXCLUDED.level_id, after_seconds = EXCLUDED.after_seconds`,
			sensor.ID, levelID, int(after.Seconds()))
		return err
	})
	if err != nil {
		return OverdueRule{}, dbError("set overdue rule", err)
	}
	return db.GetOverdueRule(ctx, key)
}

// DeleteOverdueRule deletes the sensor's overdue rule and clears its
// overdue alarm, if raised. It returns NotFound, and Conflict when the
// project is archived.
func (db *DB) DeleteOverdueRule(ctx context.Context, key SensorKey) error {
	return dbError("delete overdue rule", db.editSensor(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		tag, err := tx.Exec(ctx, `DELETE FROM alarm_overdue WHERE sensor_id = $1`, sensor.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("delete overdue rule", pgx.ErrNoRows, "overdue rule")
		}
		_, err = tx.Exec(ctx, clearOverdueSQL+` WHERE a.sensor_id = $1 AND a.target_id = 0 RETURNING a.*, now() AS reading_at
)`+insertClearedSQL, sensor.ID)
		return err
	}))
}

// overdueLockKey names the advisory lock that lets one replica at a time
// check overdue sensors.
const overdueLockKey = 0x616c61726d73 // "alarms"

const (
	raiseOverdueSQL = `
WITH due AS (
    SELECT s.id AS sensor_id, s.project_id, o.level_id, l.name AS level_name,
           coalesce(sl.datetime, o.created_at) AS last
    FROM alarm_overdue o
    JOIN sensors s ON s.id = o.sensor_id
    JOIN projects p ON p.id = s.project_id AND p.state = 'active'
    JOIN alarm_levels l ON l.id = o.level_id
    LEFT JOIN sensor_latest sl ON sl.sensor_id = o.sensor_id
    WHERE coalesce(sl.datetime, o.created_at) + make_interval(secs => o.after_seconds) < $1
      AND NOT EXISTS (SELECT 1 FROM alarms a WHERE a.sensor_id = o.sensor_id AND a.target_id = 0)
    FOR SHARE OF p
), raised AS (
    INSERT INTO alarms (project_id, sensor_id, target_id, target_key, level_id, since, value)
    SELECT project_id, sensor_id, 0, '` + OverdueTarget + `', level_id, $1, extract(epoch FROM $1 - last) FROM due
    RETURNING sensor_id
)
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT project_id, sensor_id, '` + OverdueTarget + `', 'triggered', level_id, level_name, extract(epoch FROM $1 - last), last FROM due`

	// clearOverdueSQL and insertClearedSQL enclose the DELETE of overdue
	// alarms that their callers end with a condition.
	clearOverdueSQL = `
WITH gone AS (
    DELETE FROM alarms a`
	insertClearedSQL = `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT g.project_id, g.sensor_id, g.target_key, 'cleared', g.level_id, l.name, g.value, g.reading_at
FROM gone g JOIN alarm_levels l ON l.id = g.level_id`

	clearRecentSQL = clearOverdueSQL + ` USING alarm_overdue o, sensor_latest sl, sensors s, projects p
    WHERE a.target_id = 0 AND o.sensor_id = a.sensor_id AND sl.sensor_id = a.sensor_id
      AND s.id = a.sensor_id AND p.id = s.project_id AND p.state = 'active'
      AND sl.datetime + make_interval(secs => o.after_seconds) >= $1
    RETURNING a.*, sl.datetime AS reading_at
)` + insertClearedSQL
)

// CheckOverdue raises the overdue alarms of the sensors of active projects
// whose newest reading (or, without one, whose rule) is older than their
// rule allows at now, and clears those whose sensor has reported since.
// Replicas call it on a timer: an advisory lock lets one of them at a
// time check, and a replica that finds the lock taken returns at once, so
// every change is made exactly once. It returns how many alarms it raised
// and cleared.
func (db *DB) CheckOverdue(ctx context.Context, now time.Time) (raised, cleared int64, err error) {
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var ours bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, overdueLockKey).Scan(&ours); err != nil || !ours {
			return err
		}
		tag, err := tx.Exec(ctx, raiseOverdueSQL, now)
		if err != nil {
			return err
		}
		raised = tag.RowsAffected()
		tag, err = tx.Exec(ctx, clearRecentSQL, now)
		cleared = tag.RowsAffected()
		return err
	})
	return raised, cleared, dbError("check overdue", err)
}
