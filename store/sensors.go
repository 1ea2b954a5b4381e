package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// SensorKey names a sensor by the path that leads to it. A sensor is only
// found when it is in that project and the project in that organization.
type SensorKey struct {
	OrgID     int64
	ProjectID int64
	SensorID  int64
}

// Sensor owns readings, and, when it uses a blueprint, an instance of it.
type Sensor struct {
	ID          int64     `db:"id"`
	ProjectID   int64     `db:"project_id"`
	Name        string    `db:"name"`
	Description string    `db:"description"`
	BlueprintID *int64    `db:"blueprint_id"` // nil without an instance, or when its blueprint was deleted
	Instance    *Instance `db:"instance"`     // nil without a blueprint
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

// Attachment is a new instance of a blueprint for a sensor.
type Attachment struct {
	BlueprintID int64
	Instance    Instance // without ids: the store gives them
}

// SensorPatch holds the changes of an update; nil fields change nothing.
type SensorPatch struct {
	Name        *string
	Description *string
	// Attach replaces the sensor's instance, if any, with a new one.
	Attach *Attachment
	// Instance saves an edit of the sensor's instance, ids unchanged,
	// provided its Version is still the stored one.
	Instance *Instance
}

const sensorColumns = `s.id, s.project_id, s.name, s.description, s.blueprint_id, s.instance, s.created_at, s.updated_at`

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
	return collectPage[Sensor]("list sensors", rows, limit)
}

// CreateSensor creates a sensor in the project, with an instance when
// attach is not nil. It returns NotFound for a project that is not in orgID,
// or a blueprint that is not orgID's, Invalid for a name or description the
// sensors table refuses (a name of 1 to 200 characters, a description of at
// most 2,000), and Conflict when the project is archived or has its
// Limits.Sensors.
func (db *DB) CreateSensor(ctx context.Context, orgID, projectID int64, name, description string, attach *Attachment) (Sensor, error) {
	var sensor Sensor
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		if err := makeRoom(ctx, tx, db.limits, sensorsCap, projectID); err != nil {
			return err
		}
		var blueprintID *int64
		var inst *Instance
		if attach != nil {
			if err := checkBlueprint(ctx, tx, orgID, attach.BlueprintID); err != nil {
				return err
			}
			a := attach.Instance.Clone()
			if err := giveIDs(ctx, tx, &a); err != nil {
				return err
			}
			a.Version = 1
			blueprintID, inst = &attach.BlueprintID, &a
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO sensors AS s (project_id, name, description, blueprint_id, instance)
VALUES ($1, $2, $3, $4, $5)
RETURNING `+sensorColumns, projectID, name, description, blueprintID, inst)
		var err error
		sensor, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
		return err
	})
	return sensor, dbError("create sensor", err)
}

// GetSensor returns the sensor. It returns NotFound.
func (db *DB) GetSensor(ctx context.Context, key SensorKey) (Sensor, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $3 AND `+inOrg,
		key.OrgID, key.ProjectID, key.SensorID)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("get sensor", err, "sensor")
}

// UpdateSensor applies patch to the sensor, all of it or nothing, under
// the sensor's lock (LockSensor), which waits for the writes of readings in
// flight, so a new instance never meets readings checked against the old
// one. A new instance drops the sensor's alarm rules, which watched the
// inputs and outputs it replaced; new formulas or calibrations queue the
// output rollups for a recomputation. It returns the sensor before and
// after, for the domain to recheck its alarms in the same transaction. It
// returns NotFound and Invalid as CreateSensor does, and Conflict when its
// project is archived, when attaching to a sensor with readings, or when
// the edited instance changed meanwhile or is gone.
func (tx *Tx) UpdateSensor(ctx context.Context, key SensorKey, patch SensorPatch) (before, after Sensor, err error) {
	if before, err = tx.LockSensor(ctx, key); err != nil {
		return before, after, err
	}
	after, err = updateSensor(ctx, tx.tx, key, before, patch)
	return before, after, dbError("update sensor", err)
}

func updateSensor(ctx context.Context, tx pgx.Tx, key SensorKey, current Sensor, patch SensorPatch) (Sensor, error) {
	blueprintID, inst, err := nextInstance(ctx, tx, key.OrgID, current, patch)
	if err != nil {
		return Sensor{}, err
	}
	rows, _ := tx.Query(ctx, `
UPDATE sensors s SET
    name = coalesce($2, s.name),
    description = coalesce($3, s.description),
    blueprint_id = $4,
    instance = $5,
    updated_at = now()
WHERE s.id = $1
RETURNING `+sensorColumns, current.ID, patch.Name, patch.Description, blueprintID, inst)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	if err != nil {
		return Sensor{}, err
	}
	if patch.Attach != nil {
		// The rules watched inputs and outputs of the instance replaced.
		if _, err := tx.Exec(ctx, `
WITH parts AS (
    DELETE FROM rate_kept_parts WHERE sensor_id = $1
)
DELETE FROM alarm_rules WHERE sensor_id = $1`, sensor.ID); err != nil {
			return Sensor{}, err
		}
	}
	// New formulas or calibrations take effect on the output rollups at
	// once.
	if sensor.FormulasVersion() != current.FormulasVersion() {
		if err := queueOutputHours(ctx, tx, sensor.ID); err != nil {
			return Sensor{}, err
		}
	}
	return sensor, nil
}

// LockSensor reads the sensor and locks it as its writers of readings do,
// under its project's lock, until the transaction ends: the writes of its
// readings wait for tx, and tx for them. It returns NotFound, and Conflict
// when the project is archived.
func (tx *Tx) LockSensor(ctx context.Context, key SensorKey) (Sensor, error) {
	if err := lockWritableProject(ctx, tx.tx, key.OrgID, key.ProjectID); err != nil {
		return Sensor{}, dbError("lock sensor", err)
	}
	sensor, err := lockSensor(ctx, tx.tx, key)
	return sensor, dbError("lock sensor", err)
}

// lockSensor reads the sensor and locks it as ingest does, so that its
// batches wait for tx. It returns NotFound.
func lockSensor(ctx context.Context, tx pgx.Tx, key SensorKey) (Sensor, error) {
	rows, _ := tx.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $3 AND `+inOrg+` FOR NO KEY UPDATE OF s`,
		key.OrgID, key.ProjectID, key.SensorID)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("lock sensor", err, "sensor")
}

// editSensor runs edit in a transaction, with the sensor locked as its
// writers lock it, under its project's lock: NotFound for a sensor not
// there, Conflict for an archived project.
func (db *DB) editSensor(ctx context.Context, key SensorKey, edit func(pgx.Tx, Sensor) error) error {
	return db.inTx(ctx, pgx.TxOptions{}, func(t *Tx) error {
		tx := t.tx
		if err := lockWritableProject(ctx, tx, key.OrgID, key.ProjectID); err != nil {
			return err
		}
		sensor, err := lockSensor(ctx, tx, key)
		if err != nil {
			return err
		}
		return edit(tx, sensor)
	})
}

// nextInstance is the blueprint and instance a sensor of orgID has after
// patch.
func nextInstance(ctx context.Context, tx pgx.Tx, orgID int64, current Sensor, patch SensorPatch) (*int64, *Instance, error) {
	version := int64(0)
	if current.Instance != nil {
		version = current.Instance.Version
	}
	switch {
	case patch.Attach != nil:
		if err := checkBlueprint(ctx, tx, orgID, patch.Attach.BlueprintID); err != nil {
			return nil, nil, err
		}
		var hasReadings bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM readings WHERE sensor_id = $1)`, current.ID).Scan(&hasReadings); err != nil {
			return nil, nil, err
		}
		if hasReadings {
			return nil, nil, apperr.Errorf(apperr.Conflict,
				"sensor %d has readings, whose input ids would lose their meaning under another blueprint; create a new sensor instead", current.ID)
		}
		inst := patch.Attach.Instance.Clone()
		if err := giveIDs(ctx, tx, &inst); err != nil {
			return nil, nil, err
		}
		inst.Version = version + 1 // never reused, so caches keyed by version stay right
		return &patch.Attach.BlueprintID, &inst, nil
	case patch.Instance != nil:
		if current.Instance == nil || patch.Instance.Version != version {
			return nil, nil, apperr.Errorf(apperr.Conflict, "the sensor's formulas changed while this request was made; retry it")
		}
		inst := patch.Instance.Clone()
		inst.Version = version + 1
		return current.BlueprintID, &inst, nil
	}
	return current.BlueprintID, current.Instance, nil
}

// checkBlueprint returns NotFound unless blueprint blueprintID is orgID's.
// The foreign key only knows that the blueprint exists: without this, a
// sensor could name another organization's blueprint.
func checkBlueprint(ctx context.Context, q querier, orgID, blueprintID int64) error {
	var ours bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blueprints WHERE id = $1 AND org_id = $2)`, blueprintID, orgID).Scan(&ours)
	if err != nil {
		return err
	}
	if !ours {
		return apperr.Errorf(apperr.NotFound, "blueprint %d is not a blueprint of this organization", blueprintID)
	}
	return nil
}

// DeleteSensor deletes the sensor and its readings. It returns NotFound,
// and Conflict when its project is archived or other sensors have inputs
// linked to it (listed: remove those links first).
func (db *DB) DeleteSensor(ctx context.Context, key SensorKey) error {
	return dbError("delete sensor", pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, key.OrgID, key.ProjectID); err != nil {
			return err
		}
		// Locked first, so that links being set to it (SetSensorLinks locks
		// the project's sensors) are committed before dependants looks.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM sensors s WHERE s.id = $3 AND `+inOrg+` FOR UPDATE OF s`,
			key.OrgID, key.ProjectID, key.SensorID); err != nil {
			return err
		}
		if err := refuseDependants(ctx, tx, key); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sensors s WHERE s.id = $3 AND `+inOrg,
			key.OrgID, key.ProjectID, key.SensorID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("delete sensor", pgx.ErrNoRows, "sensor")
		}
		return nil
	}))
}
