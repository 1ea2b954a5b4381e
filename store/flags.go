package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The quality a flag gives the values it covers.
const (
	Suspect  = "suspect"
	Rejected = "rejected"
)

// Flag marks a sensor's readings from From to To (both inclusive) as
// suspect or rejected: the whole reading when InputID is nil, else one
// input. A check sets it (Check names the check's kind) or a user (SetBy).
// It is never changed but to be cleared. Its JSON, which the audit trail
// records, names the fields as the API's Flag does.
type Flag struct {
	ID          int64      `db:"id" json:"id"`
	SensorID    int64      `db:"sensor_id" json:"sensor_id"`
	InputID     *int64     `db:"input_id" json:"input,omitempty,string"`
	Flag        string     `db:"flag" json:"flag"`
	From        time.Time  `db:"from_at" json:"from"`
	To          time.Time  `db:"to_at" json:"to"`
	Reason      string     `db:"reason" json:"reason"`
	Check       *string    `db:"check_kind" json:"check,omitempty"`
	SetBy       *int64     `db:"set_by" json:"set_by,omitempty"`
	SetAt       time.Time  `db:"set_at" json:"set_at"`
	ClearedAt   *time.Time `db:"cleared_at" json:"cleared_at,omitempty"`
	ClearedBy   *int64     `db:"cleared_by" json:"cleared_by,omitempty"`
	ClearReason *string    `db:"clear_reason" json:"clear_reason,omitempty"`
}

// FlagSpec is a flag to set.
type FlagSpec struct {
	InputID  *int64
	Flag     string
	From, To time.Time
	Reason   string
	Check    *string
	SetBy    *int64
}

const flagColumns = `id, sensor_id, input_id, flag, from_at, to_at, reason, check_kind, set_by, set_at, cleared_at, cleared_by, clear_reason`

// SetFlag sets a flag a person gives on the sensor's readings, and
// returns it. It returns Conflict when the sensor has its Limits.Flags.
func (tx *Tx) SetFlag(ctx context.Context, sensorID int64, spec FlagSpec) ([]Flag, error) {
	if err := makeRoom(ctx, tx.tx, tx.limits, flagsCap, sensorID); err != nil {
		return nil, dbError("set flag", err)
	}
	return tx.InsertFlags(ctx, sensorID, []FlagSpec{spec})
}

// InsertFlags sets the flags on the sensor's readings, in one statement,
// and returns those set: a check's flag already in force on the value is
// not set twice.
func (tx *Tx) InsertFlags(ctx context.Context, sensorID int64, specs []FlagSpec) ([]Flag, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	var (
		inputs   = make([]*int64, len(specs))
		flags    = make([]string, len(specs))
		from, to = make([]time.Time, len(specs)), make([]time.Time, len(specs))
		reasons  = make([]string, len(specs))
		checks   = make([]*string, len(specs))
		setBy    = make([]*int64, len(specs))
	)
	for i, s := range specs {
		inputs[i], flags[i], from[i], to[i], reasons[i], checks[i], setBy[i] = s.InputID, s.Flag, s.From, s.To, s.Reason, s.Check, s.SetBy
	}
	rows, _ := tx.tx.Query(ctx, `
INSERT INTO reading_flags (sensor_id, input_id, flag, from_at, to_at, reason, check_kind, set_by)
SELECT $1, u.input_id, u.flag, u.from_at, u.to_at, u.reason, u.check_kind, u.set_by
FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[], $8::bigint[])
    AS u(input_id, flag, from_at, to_at, reason, check_kind, set_by)
ON CONFLICT DO NOTHING
RETURNING `+flagColumns, sensorID, inputs, flags, from, to, reasons, checks, setBy)
	set, err := pgx.CollectRows(rows, pgx.RowToStructByName[Flag])
	return set, dbError("insert flags", err)
}

// ClearFlags clears the flags in force on the sensor's readings from from
// to to (inclusive), of input inputID or, when it is nil, of every input
// and whole readings, and returns those cleared. A flag reaching beyond
// the range is cleared whole and set again, by whom it was, on what lies
// outside: so a flag stays in force at every past instant as it was.
func (tx *Tx) ClearFlags(ctx context.Context, sensorID int64, inputID *int64, from, to time.Time, by *int64, reason string) ([]Flag, error) {
	rows, _ := tx.tx.Query(ctx, `
UPDATE reading_flags SET cleared_at = clock_timestamp(), cleared_by = $5, clear_reason = $6
WHERE sensor_id = $1 AND cleared_at IS NULL AND from_at <= $4 AND to_at >= $3
  AND ($2::bigint IS NULL OR input_id = $2)
RETURNING `+flagColumns, sensorID, inputID, from, to, by, reason)
	cleared, err := pgx.CollectRows(rows, pgx.RowToStructByName[Flag])
	if err != nil {
		return nil, dbError("clear flags", err)
	}
	var rest []FlagSpec
	for _, f := range cleared {
		kept := FlagSpec{InputID: f.InputID, Flag: f.Flag, Reason: f.Reason, Check: f.Check, SetBy: f.SetBy}
		if f.From.Before(from) {
			kept.From, kept.To = f.From, from.Add(-time.Microsecond)
			rest = append(rest, kept)
		}
		if f.To.After(to) {
			kept.From, kept.To = to.Add(time.Microsecond), f.To
			rest = append(rest, kept)
		}
	}
	if _, err := tx.InsertFlags(ctx, sensorID, rest); err != nil {
		return nil, err
	}
	return cleared, nil
}

// flagsInForceSQL are the sensor's flags that cover readings from $2 to
// $3 (inclusive), in force now or, when $4 is set, at that instant.
const flagsInForceSQL = `SELECT ` + flagColumns + ` FROM reading_flags
WHERE sensor_id = $1 AND from_at <= $3 AND to_at >= $2
  AND CASE WHEN $4::timestamptz IS NULL THEN cleared_at IS NULL
      ELSE set_at <= $4 AND (cleared_at IS NULL OR cleared_at > $4) END
ORDER BY from_at, id`

// SensorFlags returns the sensor's flags that cover readings from from to
// to (inclusive), in force now or, when asOf is not nil, at that instant.
func (db *DB) SensorFlags(ctx context.Context, sensorID int64, from, to time.Time, asOf *time.Time) ([]Flag, error) {
	return sensorFlags(ctx, db.pool, sensorID, from, to, asOf)
}

// SensorFlags is DB.SensorFlags in the transaction.
func (tx *Tx) SensorFlags(ctx context.Context, sensorID int64, from, to time.Time, asOf *time.Time) ([]Flag, error) {
	return sensorFlags(ctx, tx.tx, sensorID, from, to, asOf)
}

func sensorFlags(ctx context.Context, q querier, sensorID int64, from, to time.Time, asOf *time.Time) ([]Flag, error) {
	rows, _ := q.Query(ctx, flagsInForceSQL, sensorID, from, to, asOf)
	flags, err := pgx.CollectRows(rows, pgx.RowToStructByName[Flag])
	return flags, readError("sensor flags", err)
}

// FlagQuery selects the flags of a sensor listed.
type FlagQuery struct {
	From, To time.Time // the readings they cover, inclusive
	Cleared  bool      // the cleared ones too
	After    int64     // the last id of the page before
	Limit    int
}

// ListFlags returns up to q.Limit flags of the sensor, by id, and whether
// more follow. It returns NotFound.
func (db *DB) ListFlags(ctx context.Context, key SensorKey, q FlagQuery) ([]Flag, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+flagColumns+` FROM reading_flags
WHERE sensor_id = (SELECT s.id FROM sensors s WHERE s.id = $3 AND `+inOrg+`)
  AND from_at <= $5 AND to_at >= $4 AND ($6 OR cleared_at IS NULL) AND id > $7
ORDER BY id LIMIT $8`, key.OrgID, key.ProjectID, key.SensorID, q.From, q.To, q.Cleared, q.After, q.Limit+1)
	flags, err := pgx.CollectRows(rows, pgx.RowToStructByName[Flag])
	if err != nil {
		return nil, false, dbError("list flags", err)
	}
	if len(flags) == 0 {
		if _, err := db.GetSensor(ctx, key); err != nil {
			return nil, false, err
		}
	}
	more := len(flags) > q.Limit
	return flags[:min(len(flags), q.Limit)], more, nil
}

// CountReadings counts the sensor's readings from from to to, inclusive.
func (tx *Tx) CountReadings(ctx context.Context, sensorID int64, from, to time.Time) (int64, error) {
	var n int64
	err := tx.tx.QueryRow(ctx, `SELECT count(*) FROM readings WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3`, sensorID, from, to).Scan(&n)
	return n, dbError("count readings", err)
}

// FlaggedAt tells which of the sensors have a flag in force on their
// reading at at[i]: of sensorIDs[i].
func (db *DB) FlaggedAt(ctx context.Context, sensorIDs []int64, at []time.Time) (map[int64]bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT DISTINCT u.s FROM unnest($1::bigint[], $2::timestamptz[]) AS u(s, t)
JOIN reading_flags f ON f.sensor_id = u.s AND u.t BETWEEN f.from_at AND f.to_at AND f.cleared_at IS NULL`, sensorIDs, at)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, readError("flagged at", err)
	}
	flagged := make(map[int64]bool, len(ids))
	for _, id := range ids {
		flagged[id] = true
	}
	return flagged, nil
}
