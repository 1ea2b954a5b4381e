package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Latest is a sensor and its newest reading, if it has one.
type Latest struct {
	Sensor  Sensor
	Reading *Reading
}

// LatestReadings returns, for up to limit sensors of the project with ids
// above after, each sensor's newest reading, and whether more sensors
// follow. It reads the newest readings the writes keep in sensor_latest,
// never the readings table, so its cost does not grow with the table or
// its chunks. It returns NotFound for a project not in orgID.
func (db *DB) LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int) ([]Latest, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	rows, err := db.pool.Query(ctx, `
SELECT `+sensorColumns+`, r.datetime, r.input_ids, r.vals
FROM sensors s LEFT JOIN sensor_latest r ON r.sensor_id = s.id
WHERE `+inOrg+` AND s.id > $3 ORDER BY s.id LIMIT $4`, orgID, projectID, after, limit+1)
	if err != nil {
		return nil, false, dbError("latest readings", err)
	}
	latest, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Latest, error) {
		var (
			l    Latest
			s    = &l.Sensor
			when *time.Time
			r    Reading
		)
		err := row.Scan(&s.ID, &s.ProjectID, &s.Name, &s.Description, &s.BlueprintID, &s.Instance, &s.CreatedAt, &s.UpdatedAt,
			&when, &r.InputIDs, &r.Values)
		if when != nil {
			r.Time = *when
			l.Reading = &r
		}
		return l, err
	})
	if err != nil {
		return nil, false, dbError("latest readings", err)
	}
	latest, more := pageOf(latest, limit)
	return latest, more, nil
}
