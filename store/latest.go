package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorreadings/readings/apperr"
)

// Latest is a sensor and its newest reading, if it has one.
type Latest struct {
	Sensor  Sensor
	Reading *Reading
	// Flagged says whether a flag in force covers the reading.
	Flagged bool
}

// latestReadingsSQL reads the newest readings of the sensors of project
// $2 of organization $1 with ids above $3, and whether a flag in force
// covers each, as FlaggedAt tells; the sensors' instances only when $5.
//
// The sensors are those of sensors_project_id_idx from ($2, $3) on, up to
// the last of project $2: the same sensors as project_id = $2 AND id > $3,
// in the same order, but said so that the plan cannot walk sensors_pkey
// instead. With project_id = $2 the generic plan, which PostgreSQL keeps
// from the sixth run on and which sizes a project from the number of
// projects alone, read the primary key from $3 on and filtered out every
// other project's sensor with a higher id: 10,000 of them a request in
// the bench, where a fleet's project follows the project read
// (TestLatestReadingsPlan).
//
// Each sensor's newest reading is looked up by its key, in a subquery
// that OFFSET 0 keeps from being joined as a table: joined, the custom
// plans of the statement's first five runs on a connection hashed all of
// sensor_latest, every project's, for a project of a hundred sensors.
const latestReadingsSQL = `
SELECT s.id, s.project_id, s.name, s.description, s.blueprint_id, CASE WHEN $5 THEN s.instance END, s.created_at, s.updated_at,
       r.datetime, r.input_ids, r.vals,
       EXISTS (SELECT FROM reading_flags f
               WHERE f.sensor_id = s.id AND r.datetime BETWEEN f.from_at AND f.to_at AND f.cleared_at IS NULL)
FROM sensors s LEFT JOIN LATERAL (SELECT r.datetime, r.input_ids, r.vals FROM sensor_latest r WHERE r.sensor_id = s.id OFFSET 0) r ON true
WHERE (s.project_id, s.id) > ($2, $3) AND s.project_id <= $2
  AND EXISTS (SELECT FROM projects p WHERE p.id = $2 AND p.org_id = $1)
ORDER BY s.project_id, s.id LIMIT $4`

// LatestReadings returns, for up to limit sensors of the project with ids
// above after, each sensor's newest reading and whether a flag covers it,
// and whether more sensors follow, in one round trip; each sensor's
// Instance only with instances (decoding them was a sixth of the
// service's CPU per request for callers that need neither outputs nor
// names). It reads the newest readings the writes keep in sensor_latest,
// never the readings table, so its cost does not grow with the table or
// its chunks. It returns NotFound for a project not in orgID.
func (db *DB) LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int, instances bool) ([]Latest, bool, error) {
	b := &pgx.Batch{}
	var found bool
	b.Queue(`SELECT EXISTS (SELECT FROM projects WHERE id = $2 AND org_id = $1)`, orgID, projectID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&found)
	})
	var latest []Latest
	b.Queue(latestReadingsSQL, orgID, projectID, after, limit+1, instances).Query(func(rows pgx.Rows) error {
		var err error
		latest, err = pgx.CollectRows(rows, latestScanner(rows))
		return err
	})
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, dbError("latest readings", err)
	}
	if !found {
		return nil, false, apperr.Errorf(apperr.NotFound, "project not found")
	}
	latest, more := pageOf(latest, limit)
	return latest, more, nil
}

// latestScanner scans a row of latestReadingsSQL. The reading's columns
// are decoded as the pages' are (decodeReading) when the server sent them
// in binary: pgx's generic arrays and a pointer for a datetime that may
// be null were most of the allocations of a request for a project's
// latest values.
func latestScanner(rows pgx.Rows) pgx.RowToFunc[Latest] {
	fields := rows.FieldDescriptions()
	binary := len(fields) == 12
	for _, f := range fields[8:min(len(fields), 11)] {
		binary = binary && f.Format == pgtype.BinaryFormatCode
	}
	if !binary {
		return func(row pgx.CollectableRow) (Latest, error) {
			var (
				l    Latest
				s    = &l.Sensor
				when *time.Time
				r    Reading
			)
			err := row.Scan(&s.ID, &s.ProjectID, &s.Name, &s.Description, &s.BlueprintID, &s.Instance, &s.CreatedAt, &s.UpdatedAt,
				&when, &r.InputIDs, &r.Values, &l.Flagged)
			if when != nil {
				r.Time = *when
				l.Reading = &r
			}
			return l, err
		}
	}
	// One row's destinations, reused: a new list of them for each row was
	// another two allocations a sensor.
	var l Latest
	s := &l.Sensor
	dest := []any{&s.ID, &s.ProjectID, &s.Name, &s.Description, &s.BlueprintID, &s.Instance, &s.CreatedAt, &s.UpdatedAt, nil, nil, nil, &l.Flagged}
	// The readings and their arrays are cut from blocks shared by the
	// rows: three allocations a sensor were half of a request's.
	var (
		readings []Reading
		ids      []int64
		values   []float64
	)
	return func(row pgx.CollectableRow) (Latest, error) {
		l = Latest{}
		if err := row.Scan(dest...); err != nil {
			return l, err
		}
		raw := row.RawValues()[8:11]
		if raw[0] == nil {
			return l, nil
		}
		elements, err := arrayElements(raw[1])
		if err != nil {
			return l, fmt.Errorf("input_ids: %w", err)
		}
		n := len(elements) / 12
		r := cut(&readings, 1, 32)[:1]
		r[0].InputIDs, r[0].Values = cut(&ids, n, 256), cut(&values, n, 256)
		l.Reading = &r[0]
		return l, decodeReading(raw, l.Reading, nil, false)
	}
}

// cut returns an empty slice with room for n from the block *free, which
// it replaces with a new one of at least block when it has less room left.
func cut[T any](free *[]T, n, block int) []T {
	if cap(*free)-len(*free) < n {
		*free = make([]T, 0, max(n, block))
	}
	start := len(*free)
	*free = (*free)[:start+n]
	return (*free)[start : start : start+n]
}
