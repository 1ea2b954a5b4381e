package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sensorreadings/readings/apperr"
)

// Reading is a sensor's inputs at one instant: InputIDs[i] had Values[i].
type Reading struct {
	Time     time.Time
	InputIDs []int64
	Values   []float64
}

// ReadingQuery selects a sensor's readings.
type ReadingQuery struct {
	From, To time.Time // inclusive bounds, to the microsecond
	Desc     bool      // newest first
	Limit    int       // 0: all of them
	Offset   int64
}

// The instants a reading can have: RFC 3339's four-digit years.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

const lockSensorSQL = `
SELECT p.state, s.instance, coalesce(si.input_ids, '{}')
FROM sensors s JOIN projects p ON p.id = s.project_id
LEFT JOIN sensor_inputs si ON si.sensor_id = s.id
WHERE s.id = $3 AND s.project_id = $2 AND p.org_id = $1
FOR SHARE OF s`

// InsertReadings stores readings of the sensor in one transaction: all of
// them or none. A reading at the instant of a stored one replaces its
// inputs; of two readings at one instant in readings, the later wins. It
// returns NotFound; Invalid, naming the reading, for an input id that is not
// one of the sensor's instance; Invalid when a sensor without an instance
// would have more distinct input ids than New was given (by default
// DefaultMaxSensorInputs); and Conflict when its project is archived.
func (db *DB) InsertReadings(ctx context.Context, key SensorKey, readings []Reading) error {
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		// The share lock stands in for a foreign key, checked once per batch
		// instead of once per row: the sensor cannot be deleted, with its
		// readings, nor get a new instance until this batch is in.
		var (
			state ProjectState
			inst  *Instance
			known []int64
		)
		err := tx.QueryRow(ctx, lockSensorSQL, key.OrgID, key.ProjectID, key.SensorID).Scan(&state, &inst, &known)
		if err != nil {
			return notFound("lock sensor", err, "sensor")
		}
		if state == Archived {
			return apperr.Errorf(apperr.Conflict, "project %d is archived; restore it before posting readings", key.ProjectID)
		}
		if err := inst.checkInputs(readings); err != nil {
			return err
		}
		if err := db.recordInputs(ctx, tx, key.SensorID, inst == nil, known, readings); err != nil {
			return err
		}
		return insertReadings(ctx, tx, key.SensorID, lastPerInstant(readings))
	})
	return dbError("insert readings", err)
}

const recordInputsSQL = `
INSERT INTO sensor_inputs AS si (sensor_id, input_ids) VALUES ($1, $2)
ON CONFLICT (sensor_id) DO UPDATE
SET input_ids = ARRAY(SELECT DISTINCT u.id FROM unnest(si.input_ids || EXCLUDED.input_ids) AS u(id) ORDER BY 1)
RETURNING cardinality(input_ids)`

// recordInputs adds the batch's input ids that the sensor's readings never
// had to its set (sensor_inputs), and, when limited, refuses the batch if
// the set would exceed db.maxSensorInputs. A batch with no new id, the
// common case, costs no statement. known is the set as the batch found it;
// the upsert takes the set's row lock, so batches bringing new ids take
// turns and the last one counts every id of the others.
func (db *DB) recordInputs(ctx context.Context, tx pgx.Tx, sensorID int64, limited bool, known []int64, readings []Reading) error {
	var fresh []int64
	for _, r := range readings {
		for _, id := range r.InputIDs {
			if _, found := slices.BinarySearch(known, id); !found {
				fresh = append(fresh, id)
			}
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	slices.Sort(fresh)
	fresh = slices.Compact(fresh)
	total := len(known) + len(fresh)
	if !limited || total <= db.maxSensorInputs {
		if err := tx.QueryRow(ctx, recordInputsSQL, sensorID, fresh).Scan(&total); err != nil {
			return err
		}
	}
	if limited && total > db.maxSensorInputs {
		return &apperr.Error{
			Code: apperr.Invalid,
			Message: fmt.Sprintf("the batch would give the sensor %d distinct input ids; a sensor without a blueprint has at most %d "+
				"(it has %d): reuse its input ids, or give it a blueprint", total, db.maxSensorInputs, len(known)),
			Details: map[string]any{"limit": db.maxSensorInputs},
		}
	}
	return nil
}

const (
	createIncomingSQL = `CREATE TEMP TABLE readings_incoming (LIKE readings) ON COMMIT DROP`
	upsertIncomingSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals)
SELECT sensor_id, datetime, input_ids, vals FROM readings_incoming
ON CONFLICT (sensor_id, datetime) DO UPDATE SET input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals`
)

// insertReadings tries the fast path first: new readings, the common case,
// go straight in with COPY, as fast as PostgreSQL ingests. Only when one of
// them exists already does the batch pay for conflict handling: COPY into a
// temporary table, then one INSERT … ON CONFLICT DO UPDATE. The savepoint
// lets the batch start over without losing the transaction or its lock.
func insertReadings(ctx context.Context, tx pgx.Tx, sensorID int64, readings []Reading) error {
	savepoint, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	err = copyReadings(ctx, savepoint, "readings", sensorID, readings)
	if err == nil {
		return savepoint.Commit(ctx)
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != "23505" {
		return err
	}
	if err := savepoint.Rollback(ctx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, createIncomingSQL); err != nil {
		return err
	}
	if err := copyReadings(ctx, tx, "readings_incoming", sensorID, readings); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, upsertIncomingSQL)
	return err
}

// lastPerInstant orders readings by time and keeps, of those at one
// instant, the one that came last. ON CONFLICT DO UPDATE may touch a row
// only once per statement, and the rule is that the later reading wins.
func lastPerInstant(readings []Reading) []Reading {
	ordered := true
	for i := 1; i < len(readings) && ordered; i++ {
		ordered = readings[i-1].Time.Before(readings[i].Time)
	}
	if ordered {
		return readings
	}
	readings = slices.Clone(readings)
	slices.SortStableFunc(readings, func(a, b Reading) int { return a.Time.Compare(b.Time) })
	kept := readings[:0]
	for i, r := range readings {
		if i+1 < len(readings) && readings[i+1].Time.Equal(r.Time) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

const (
	listReadingsAscSQL = `
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3
ORDER BY datetime LIMIT $4 OFFSET $5`
	listReadingsDescSQL = `
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3
ORDER BY datetime DESC LIMIT $4 OFFSET $5`
)

// ListReadings calls fn with each reading of sensor that q selects, in
// order, as the rows arrive. fn must not keep the Reading it is given.
func (db *DB) ListReadings(ctx context.Context, sensor Sensor, q ReadingQuery, fn func(*Reading) error) error {
	query := listReadingsAscSQL
	if q.Desc {
		query = listReadingsDescSQL
	}
	var limit *int // LIMIT NULL is no limit
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, err := db.pool.Query(ctx, query, sensor.ID, q.From, q.To, limit, q.Offset)
	if err != nil {
		return dbError("list readings", err)
	}
	// fn's own errors (a client gone, say) are not the database's.
	var fnErr error
	err = ScanReadings(rows, func(r *Reading) error {
		fnErr = fn(r)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return dbError("list readings", err)
}

// InputIDs returns the input ids that readings of sensor from to to
// (inclusive) use, ascending.
func (db *DB) InputIDs(ctx context.Context, sensor Sensor, from, to time.Time) ([]int64, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT DISTINCT u.id FROM readings r CROSS JOIN LATERAL unnest(r.input_ids) AS u(id)
WHERE r.sensor_id = $1 AND r.datetime BETWEEN $2 AND $3
ORDER BY 1`, sensor.ID, from, to)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, dbError("input ids", err)
}

// DeleteReadings deletes the sensor's readings from from (inclusive) to to
// (exclusive) and returns how many there were. It returns NotFound, and
// Conflict when the sensor's project is archived.
func (db *DB) DeleteReadings(ctx context.Context, key SensorKey, from, to time.Time) (int64, error) {
	var deleted int64
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var (
			state ProjectState
			inst  *Instance
		)
		if err := tx.QueryRow(ctx, lockSensorSQL, key.OrgID, key.ProjectID, key.SensorID).Scan(&state, &inst, nil); err != nil {
			return notFound("lock sensor", err, "sensor")
		}
		if state == Archived {
			return apperr.Errorf(apperr.Conflict, "project %d is archived, so read-only; restore it before deleting readings", key.ProjectID)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM readings WHERE sensor_id = $1 AND datetime >= $2 AND datetime < $3`, key.SensorID, from, to)
		deleted = tag.RowsAffected()
		return err
	})
	return deleted, dbError("delete readings", err)
}

// Latest is a sensor and its newest reading, if it has one.
type Latest struct {
	Sensor  Sensor
	Reading *Reading
}

// LatestReadings returns, for up to limit sensors of the project with ids
// above after, each sensor's newest reading, and whether more sensors
// follow. Each sensor costs one probe of the readings' primary key, backward
// from its newest entry. It returns NotFound for a project not in orgID.
func (db *DB) LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int) ([]Latest, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	rows, err := db.pool.Query(ctx, `
SELECT `+sensorColumns+`, r.datetime, r.input_ids, r.vals
FROM sensors s
LEFT JOIN LATERAL (
    SELECT datetime, input_ids, vals FROM readings
    WHERE sensor_id = s.id ORDER BY datetime DESC LIMIT 1
) r ON true
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
