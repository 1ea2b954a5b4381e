package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SensorKey names a sensor by the path that leads to it. A sensor is only
// found when it is in that project and the project in that organization.
type SensorKey struct {
	OrgID     int64
	ProjectID int64
	SensorID  int64
}

// Sensor owns readings.
type Sensor struct {
	ID          int64     `db:"id"`
	ProjectID   int64     `db:"project_id"`
	Name        string    `db:"name"`
	Description string    `db:"description"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

// SensorPatch holds the fields of an update; nil fields keep their value.
type SensorPatch struct {
	Name        *string
	Description *string
}

const sensorColumns = `s.id, s.project_id, s.name, s.description, s.created_at, s.updated_at`

// inOrg restricts sensors s to project $2 of organization $1.
const inOrg = `s.project_id = $2 AND EXISTS (SELECT 1 FROM projects p WHERE p.id = s.project_id AND p.org_id = $1)`

// ListSensors returns up to limit sensors of the project with ids above
// after, in id order, and whether more follow. It returns NotFound for a
// project that is not in orgID.
func (db *DB) ListSensors(ctx context.Context, orgID, projectID, after int64, limit int) ([]Sensor, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	rows, _ := db.pool.Query(ctx, `
SELECT `+sensorColumns+` FROM sensors s
WHERE `+inOrg+` AND s.id > $3 ORDER BY s.id LIMIT $4`, orgID, projectID, after, limit+1)
	sensors, err := pgx.CollectRows(rows, pgx.RowToStructByName[Sensor])
	if err != nil {
		return nil, false, dbError("list sensors", err)
	}
	if len(sensors) > limit {
		return sensors[:limit], true, nil
	}
	return sensors, false, nil
}

// CreateSensor creates a sensor in the project. It returns NotFound for a
// project that is not in orgID.
func (db *DB) CreateSensor(ctx context.Context, orgID, projectID int64, name, description string) (Sensor, error) {
	rows, _ := db.pool.Query(ctx, `
INSERT INTO sensors AS s (project_id, name, description)
SELECT p.id, $3, $4 FROM projects p WHERE p.id = $2 AND p.org_id = $1
RETURNING `+sensorColumns, orgID, projectID, name, description)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("create sensor", err, "project")
}

// GetSensor returns the sensor. It returns NotFound.
func (db *DB) GetSensor(ctx context.Context, key SensorKey) (Sensor, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $3 AND `+inOrg,
		key.OrgID, key.ProjectID, key.SensorID)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("get sensor", err, "sensor")
}

// UpdateSensor applies patch to the sensor. It returns NotFound.
func (db *DB) UpdateSensor(ctx context.Context, key SensorKey, patch SensorPatch) (Sensor, error) {
	rows, _ := db.pool.Query(ctx, `
UPDATE sensors s SET
    name = coalesce($4, s.name),
    description = coalesce($5, s.description),
    updated_at = now()
WHERE s.id = $3 AND `+inOrg+`
RETURNING `+sensorColumns, key.OrgID, key.ProjectID, key.SensorID, patch.Name, patch.Description)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("update sensor", err, "sensor")
}

// DeleteSensor deletes the sensor and its readings. It returns NotFound.
func (db *DB) DeleteSensor(ctx context.Context, key SensorKey) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM sensors s WHERE s.id = $3 AND `+inOrg,
		key.OrgID, key.ProjectID, key.SensorID)
	if err != nil {
		return dbError("delete sensor", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("delete sensor", pgx.ErrNoRows, "sensor")
	}
	return nil
}
