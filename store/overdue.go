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

// LockOverdueCheck takes, until the transaction ends, the lock that lets
// one replica at a time check overdue sensors, and says whether it got
// it: a replica that finds it taken leaves the check to the other, so
// every change is made exactly once.
func (tx *Tx) LockOverdueCheck(ctx context.Context) (bool, error) {
	var ours bool
	err := tx.tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, overdueLockKey).Scan(&ours)
	return ours, dbError("lock overdue check", err)
}

// OverdueState is a sensor's overdue rule as the check reads it.
type OverdueState struct {
	SensorID int64
	After    time.Duration
	// Last is the datetime of the sensor's newest reading, or, without
	// one (Reported false), the creation of its rule.
	Last     time.Time
	Reported bool
	Raised   bool // its overdue alarm is raised
}

// OverdueStates returns the overdue rules of the sensors of active
// projects, by sensor.
func (tx *Tx) OverdueStates(ctx context.Context) ([]OverdueState, error) {
	rows, _ := tx.tx.Query(ctx, `
SELECT o.sensor_id, o.after_seconds, coalesce(sl.datetime, o.created_at), sl.datetime IS NOT NULL,
       EXISTS (SELECT 1 FROM alarms a WHERE a.sensor_id = o.sensor_id AND a.target_id = 0)
FROM alarm_overdue o
JOIN sensors s ON s.id = o.sensor_id
JOIN projects p ON p.id = s.project_id AND p.state = 'active'
LEFT JOIN sensor_latest sl ON sl.sensor_id = o.sensor_id
ORDER BY o.sensor_id`)
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OverdueState, error) {
		var (
			st      OverdueState
			seconds int
		)
		err := row.Scan(&st.SensorID, &seconds, &st.Last, &st.Reported, &st.Raised)
		st.After = time.Duration(seconds) * time.Second
		return st, err
	})
	return states, dbError("overdue states", err)
}

// raiseOverdueSQL raises the overdue alarm of each sensor of $2, silent
// since $3, at $1, with an event each, provided its project is still
// active and its alarm not raised: what OverdueStates read may have
// changed since.
const raiseOverdueSQL = `
WITH due AS (
    SELECT s.id AS sensor_id, s.project_id, o.level_id, l.name AS level_name, u.last
    FROM unnest($2::bigint[], $3::timestamptz[]) AS u(sensor_id, last)
    JOIN alarm_overdue o ON o.sensor_id = u.sensor_id
    JOIN sensors s ON s.id = u.sensor_id
    JOIN projects p ON p.id = s.project_id AND p.state = 'active'
    JOIN alarm_levels l ON l.id = o.level_id
    WHERE NOT EXISTS (SELECT 1 FROM alarms a WHERE a.sensor_id = u.sensor_id AND a.target_id = 0)
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
const (
	clearOverdueSQL = `
WITH gone AS (
    DELETE FROM alarms a`
	insertClearedSQL = `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT g.project_id, g.sensor_id, g.target_key, 'cleared', g.level_id, l.name, g.value, g.reading_at
FROM gone g JOIN alarm_levels l ON l.id = g.level_id`

	clearReportedSQL = clearOverdueSQL + ` USING unnest($1::bigint[]) AS u(sensor_id), sensor_latest sl, sensors s, projects p
    WHERE a.target_id = 0 AND a.sensor_id = u.sensor_id AND sl.sensor_id = a.sensor_id
      AND s.id = a.sensor_id AND p.id = s.project_id AND p.state = 'active'
    RETURNING a.*, sl.datetime AS reading_at
)` + insertClearedSQL
)

// RaiseOverdue raises, at now, the overdue alarms of the sensors of due,
// with an event each whose value is the silence in seconds, and returns
// how many it raised: not those whose project was archived, or whose
// alarm was raised, since OverdueStates read them.
func (tx *Tx) RaiseOverdue(ctx context.Context, due []OverdueState, now time.Time) (int64, error) {
	if len(due) == 0 {
		return 0, nil
	}
	ids, lasts := make([]int64, len(due)), make([]time.Time, len(due))
	for i, st := range due {
		ids[i], lasts[i] = st.SensorID, st.Last
	}
	tag, err := tx.tx.Exec(ctx, raiseOverdueSQL, now, ids, lasts)
	return tag.RowsAffected(), dbError("raise overdue alarms", err)
}

// ClearOverdue clears the overdue alarms of the sensors of reported, with
// an event each naming the reading that ended the silence, and returns how
// many it cleared.
func (tx *Tx) ClearOverdue(ctx context.Context, reported []OverdueState) (int64, error) {
	if len(reported) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(reported))
	for i, st := range reported {
		ids[i] = st.SensorID
	}
	tag, err := tx.tx.Exec(ctx, clearReportedSQL, ids)
	return tag.RowsAffected(), dbError("clear overdue alarms", err)
}
