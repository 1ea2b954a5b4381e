package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// SensorStatus is what a status board shows of a sensor: its most severe
// current alarm, how many alarms it has and how many nobody acknowledged,
// whether it is overdue, and its newest reading.
type SensorStatus struct {
	Sensor         Sensor
	Level          *AlarmLevel // nil when every target is at rest
	Alarms         int
	Unacknowledged int
	Overdue        bool
	OverdueAfter   *time.Duration // nil without an overdue rule
	Reading        *Reading       // nil without readings
}

// missingSensorSQL is the first of the ids $2 that is no sensor of
// project $1, if any.
const missingSensorSQL = `
SELECT min(id) FROM unnest($2::bigint[]) AS asked(id)
WHERE NOT EXISTS (SELECT FROM sensors s WHERE s.id = asked.id AND s.project_id = $1)`

// StatusQuery selects the sensors of SensorStatuses: those of project
// ProjectID of OrgID, or with ProjectID 0 those of every project of OrgID;
// with ActiveOnly, of active projects only; with SensorIDs not nil, only
// those (none when it is empty). A page is up to Limit sensors with ids
// above After.
type StatusQuery struct {
	OrgID      int64
	ProjectID  int64
	ActiveOnly bool
	SensorIDs  []int64
	After      int64
	Limit      int
}

// sensorStatusSQL reads a page of sensors with everything their status
// needs in one statement: each sensor's newest reading from sensor_latest
// and its alarms through the alarms' (sensor_id, target_id) key, an index
// probe a sensor however many readings and alarms the project has.
// Overdue is the condition the background check raises its alarm on
// (raiseOverdueSQL), so the board says it as soon as it holds.
const sensorStatusSQL = `
SELECT ` + sensorColumns + `, sl.datetime, sl.input_ids, sl.vals,
       w.id, w.name, w.rank, w.colour, a.alarms, a.unacknowledged, o.after_seconds,
       coalesce(p.state = 'active' AND coalesce(sl.datetime, o.created_at) + make_interval(secs => o.after_seconds) < now(), false)
FROM sensors s
JOIN projects p ON p.id = s.project_id
LEFT JOIN sensor_latest sl ON sl.sensor_id = s.id
LEFT JOIN alarm_overdue o ON o.sensor_id = s.id
CROSS JOIN LATERAL (
    SELECT count(*) AS alarms, count(*) FILTER (WHERE acknowledged_at IS NULL) AS unacknowledged
    FROM alarms WHERE sensor_id = s.id
) a
LEFT JOIN LATERAL (
    SELECT l.id, l.name, l.rank, l.colour FROM alarms x JOIN alarm_levels l ON l.id = x.level_id
    WHERE x.sensor_id = s.id ORDER BY l.rank DESC LIMIT 1
) w ON true
WHERE p.org_id = $1
  AND ($2::bigint = 0 OR s.project_id = $2)
  AND (NOT $3::boolean OR p.state = 'active')
  AND ($4::bigint[] IS NULL OR s.id = ANY($4))
  AND s.id > $5
ORDER BY s.id LIMIT $6`

// SensorStatuses returns a page of the status of the sensors q selects, in
// id order, and whether more follow. It returns NotFound for a project
// that is not in the organization, and for a sensor of q.SensorIDs that is
// not in the project.
func (db *DB) SensorStatuses(ctx context.Context, q StatusQuery) ([]SensorStatus, bool, error) {
	if q.ProjectID != 0 {
		if _, err := db.GetProject(ctx, q.OrgID, q.ProjectID); err != nil {
			return nil, false, err
		}
		var missing *int64
		if err := db.pool.QueryRow(ctx, missingSensorSQL, q.ProjectID, q.SensorIDs).Scan(&missing); err != nil {
			return nil, false, dbError("sensor statuses", err)
		}
		if missing != nil {
			return nil, false, &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf("sensor %d not found", *missing), Details: map[string]any{"parameter": "sensor_id"}}
		}
	}
	rows, err := db.pool.Query(ctx, sensorStatusSQL, q.OrgID, q.ProjectID, q.ActiveOnly, q.SensorIDs, q.After, q.Limit+1)
	if err != nil {
		return nil, false, dbError("sensor statuses", err)
	}
	statuses, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SensorStatus, error) {
		var (
			st      SensorStatus
			s       = &st.Sensor
			when    *time.Time
			r       Reading
			levelID *int64
			level   AlarmLevel
			name    *string
			rank    *int
			colour  *string
			after   *int
		)
		err := row.Scan(&s.ID, &s.ProjectID, &s.Name, &s.Description, &s.BlueprintID, &s.Instance, &s.CreatedAt, &s.UpdatedAt,
			&when, &r.InputIDs, &r.Values,
			&levelID, &name, &rank, &colour, &st.Alarms, &st.Unacknowledged, &after, &st.Overdue)
		if when != nil {
			r.Time = *when
			st.Reading = &r
		}
		if levelID != nil {
			level = AlarmLevel{ID: *levelID, ProjectID: s.ProjectID, Name: *name, Rank: *rank, Colour: *colour}
			st.Level = &level
		}
		if after != nil {
			d := time.Duration(*after) * time.Second
			st.OverdueAfter = &d
		}
		return st, err
	})
	if err != nil {
		return nil, false, dbError("sensor statuses", err)
	}
	statuses, more := pageOf(statuses, q.Limit)
	return statuses, more, nil
}
