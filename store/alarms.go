package store

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Alarm is the current alarm of a target not at rest.
type Alarm struct {
	ID             int64      `db:"id"`
	ProjectID      int64      `db:"project_id"`
	SensorID       int64      `db:"sensor_id"`
	TargetID       int64      `db:"target_id"`
	TargetKey      string     `db:"target_key"`
	LevelID        int64      `db:"level_id"`
	LevelName      string     `db:"level_name"`
	Rank           int        `db:"rank"`
	Colour         string     `db:"colour"`
	Since          time.Time  `db:"since"` // the datetime of the reading that raised the level
	Value          float64    `db:"value"`
	AcknowledgedAt *time.Time `db:"acknowledged_at"`
	AcknowledgedBy *int64     `db:"acknowledged_by"`
	Note           string     `db:"note"`
}

// AlarmEvent is an entry of a project's alarm history.
type AlarmEvent struct {
	ID        int64      `db:"id"`
	ProjectID int64      `db:"project_id"`
	SensorID  int64      `db:"sensor_id"`
	TargetKey string     `db:"target_key"`
	Kind      string     `db:"kind"` // triggered, escalated, de-escalated, cleared, acknowledged, late
	LevelID   *int64     `db:"level_id"`
	LevelName string     `db:"level_name"`
	Value     *float64   `db:"value"`
	ReadingAt *time.Time `db:"reading_at"`
	UserID    *int64     `db:"user_id"`
	Note      string     `db:"note"`
	CreatedAt time.Time  `db:"created_at"`
}

// AlarmEventQuery selects events of a project; zero fields select all.
type AlarmEventQuery struct {
	SensorID, LevelID int64
	From, To          time.Time // of the event's creation, inclusive
	Desc              bool      // newest first
	After             int64     // the cursor: events past this id in the order, 0 from the start
	Limit             int
}

const alarmColumns = `a.id, a.project_id, a.sensor_id, a.target_id, a.target_key, a.level_id, l.name AS level_name, l.rank, l.colour,
a.since, a.value, a.acknowledged_at, a.acknowledged_by, a.note`

// AlarmKey is where an alarm stands in its project's list: most severe
// first, then oldest first, then by id. An alarm's rank cannot change while
// it stands: a level in use keeps its rank.
type AlarmKey struct {
	Rank  int
	Since time.Time
	ID    int64
}

// Key is the alarm's place in its project's list.
func (a Alarm) Key() AlarmKey { return AlarmKey{Rank: a.Rank, Since: a.Since, ID: a.ID} }

// ListAlarms returns up to limit current alarms of the project after after
// (the zero key: from the first), most severe first, and whether more
// follow. It returns NotFound for a project not in orgID.
func (db *DB) ListAlarms(ctx context.Context, orgID, projectID int64, after AlarmKey, limit int) ([]Alarm, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	// Ranks are 1 to 100, so a zero key's rank of 0 means from the first.
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmColumns+` FROM alarms a JOIN alarm_levels l ON l.id = a.level_id
WHERE a.project_id = $1 AND ($2 = 0 OR l.rank < $2 OR (l.rank = $2 AND (a.since, a.id) > ($3, $4)))
ORDER BY l.rank DESC, a.since, a.id LIMIT $5`, projectID, after.Rank, after.Since, after.ID, limit+1)
	return collectPage[Alarm]("list alarms", rows, limit)
}

// AcknowledgeAlarm records that userID has seen the alarm, with a note,
// and appends the event. It returns NotFound, and Conflict when the
// project is archived.
func (db *DB) AcknowledgeAlarm(ctx context.Context, orgID, projectID, alarmID, userID int64, note string) (Alarm, error) {
	var alarm Alarm
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
WITH a AS (
    UPDATE alarms SET acknowledged_at = now(), acknowledged_by = $3, note = $4
    WHERE id = $1 AND project_id = $2 RETURNING *
)
SELECT `+alarmColumns+` FROM a JOIN alarm_levels l ON l.id = a.level_id`, alarmID, projectID, userID, note)
		var err error
		alarm, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Alarm])
		if err != nil {
			return notFound("acknowledge alarm", err, "alarm")
		}
		_, err = tx.Exec(ctx, `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at, user_id, note)
VALUES ($1, $2, $3, 'acknowledged', $4, $5, $6, $7, $8, $9)`,
			projectID, alarm.SensorID, alarm.TargetKey, alarm.LevelID, alarm.LevelName, alarm.Value, alarm.Since, userID, note)
		return err
	})
	return alarm, dbError("acknowledge alarm", err)
}

// alarmEventFiltersSQL tells whether the project is orgID's, and whether
// the sensor and level an events query filters on (0 for none) are its.
const alarmEventFiltersSQL = `
SELECT ($3::bigint = 0 OR EXISTS (SELECT 1 FROM sensors WHERE id = $3 AND project_id = p.id)),
       ($4::bigint = 0 OR EXISTS (SELECT 1 FROM alarm_levels WHERE id = $4 AND project_id = p.id))
FROM projects p WHERE p.id = $2 AND p.org_id = $1`

// ListAlarmEvents returns up to q.Limit events of the project that q
// selects, oldest first (newest first with q.Desc), and whether more
// follow. It returns NotFound for a project not in orgID, and for a sensor
// or level to filter on that is not the project's: a filter naming
// another's is refused as the same id in a path would be, not answered
// with nothing.
func (db *DB) ListAlarmEvents(ctx context.Context, orgID, projectID int64, q AlarmEventQuery) ([]AlarmEvent, bool, error) {
	var sensorOK, levelOK bool
	err := db.pool.QueryRow(ctx, alarmEventFiltersSQL, orgID, projectID, q.SensorID, q.LevelID).Scan(&sensorOK, &levelOK)
	switch {
	case err != nil:
		return nil, false, notFound("list alarm events", err, "project")
	case !sensorOK:
		return nil, false, apperr.Errorf(apperr.NotFound, "sensor %d is not a sensor of this project", q.SensorID)
	case !levelOK:
		return nil, false, apperr.Errorf(apperr.NotFound, "level %d is not an alarm level of this project", q.LevelID)
	}
	sql, after := listAlarmEventsAsc, q.After
	if q.Desc {
		sql = listAlarmEventsDesc
		if after == 0 {
			after = math.MaxInt64
		}
	}
	rows, _ := db.pool.Query(ctx, sql, projectID, after, q.SensorID, q.LevelID, q.From, q.To, q.Limit+1)
	return collectPage[AlarmEvent]("list alarm events", rows, q.Limit)
}

// The two orders are two statements rather than one with a CASE, so that
// each walks the (project_id, id) index in its direction.
const (
	listAlarmEventsSelect = `
SELECT id, project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at, user_id, note, created_at
FROM alarm_events
WHERE project_id = $1 AND ($3::bigint = 0 OR sensor_id = $3) AND ($4::bigint = 0 OR level_id = $4)
  AND created_at BETWEEN $5 AND $6`
	listAlarmEventsAsc  = listAlarmEventsSelect + ` AND id > $2 ORDER BY id LIMIT $7`
	listAlarmEventsDesc = listAlarmEventsSelect + ` AND id < $2 ORDER BY id DESC LIMIT $7`
)
