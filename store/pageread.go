package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// PageRead is a read of a sensor's readings with the flags in force on
// them, in one round trip (ReadPage).
type PageRead struct {
	Key SensorKey
	// Lookup reads the sensor first, as GetSensor does; without it, the
	// caller has it already.
	Lookup bool
	Query  ReadingQuery // its Without is not used: the flags decide
	AsOf   *time.Time   // the flags in force at that instant; nil: now
	// Rejected keeps the readings a flag rejects whole; without it they
	// are left out, and the query's limit counts the others.
	Rejected bool
	// Links, when set, is given what the outputs of a sensor with linked
	// inputs need, read in the same round trip, before the readings: the
	// links' sources and their readings over the page (LinkedPage). The
	// links are LinksOf's, or, when it is nil, those of the sensor as
	// the read finds it.
	Links   func(LinkedPage) error
	LinksOf *Instance
	// KnownSources are versions of sources' instances the caller holds,
	// by source: a link whose source is at that version comes without
	// its instance (PageLink.Known).
	KnownSources map[int64]int64
	// LinkReadings bounds the readings read of each link's source (see
	// PageLink.Complete).
	LinkReadings int
	// LinksSpacing, when positive, is a guess of the time between two
	// readings of the page: the links' readings are read from the page's
	// first reading (its last, in descending order) over Query.Limit-1
	// times it, rather than to its other end, which the links' statement
	// finds again by walking the page's index: a tenth of PostgreSQL's
	// time for the page. It decides no answer: the readings of the page
	// beyond it are not served by the links read with it (PageLink.Query
	// says where they end).
	LinksSpacing time.Duration
	// Unflagged and NoneRejected say what the caller expects of the
	// sensor's flags in force, as a read of it found them last (Flagged):
	// Unflagged, none at all, and the flags are not read; NoneRejected,
	// none that rejects readings whole, and the readings are read without
	// checking each against such flags, which costs PostgreSQL a tenth of
	// the page. Should the sensor, looked up in the same round trip, or
	// the flags read with it say otherwise, the flags and the readings
	// are read again, in one more round trip, and so are the links'
	// sources and readings, whose page is the readings the flags leave.
	// They count only when the read looks the sensor up, as it is now.
	Unflagged, NoneRejected bool
	// Flagged, if set, is called, when the read looks the sensor up,
	// with whether a flag is in force on it now, and whether one rejects
	// readings whole, over any range.
	Flagged func(flagged, rejecting bool)
}

// LinkedPage is what the outputs of a page of readings of a sensor with
// linked inputs need, read with the page (PageRead.Links) in a snapshot
// of its own: each link's source and its readings over the page's range
// as the statement found that range. Links is empty when the page is.
type LinkedPage struct {
	Links []PageLink
}

// PageLink is the readings of a link's source that serve a page from
// Query.First to Query.To, its first and last instants: those
// ListLinkReadings(Query) reads, unless there are more than
// PageRead.LinkReadings (Complete is false, and Readings holds some), or
// a flag in force at the source rejects a value the link may take there
// (Complete is false, and Readings is empty: read the link with its
// source's flags).
type PageLink struct {
	Input    int   // the linked input, an index of the instance's inputs
	SensorID int64 // its source, a sensor of the page's project
	// Source is the source's instance (nil: it has none), unless Known:
	// it is at the version PageRead.KnownSources gave for it.
	Source   *Instance
	Known    bool
	Query    LinkQuery
	Readings []Reading
	Complete bool
}

// flagInForceSQL is true of a flag in force now or, when $%[1]d is set,
// at that instant.
const flagInForceSQL = `CASE WHEN $%[1]d::timestamptz IS NULL THEN cleared_at IS NULL
      ELSE set_at <= $%[1]d AND (cleared_at IS NULL OR cleared_at > $%[1]d) END`

var (
	// pageSensorSQL is GetSensor's statement, and whether a flag is in
	// force on the sensor, and one that rejects readings whole (migration
	// 00067's indexes).
	pageSensorSQL = `SELECT ` + sensorColumns + `,
    EXISTS (SELECT FROM reading_flags f WHERE f.sensor_id = s.id AND f.cleared_at IS NULL) AS flagged,
    EXISTS (SELECT FROM reading_flags f WHERE f.sensor_id = s.id AND f.input_id IS NULL AND f.flag = 'rejected' AND f.cleared_at IS NULL) AS rejecting
FROM sensors s WHERE s.id = $3 AND ` + inOrg

	// pageFlagsSQL is flagsInForceSQL with the key's guard.
	pageFlagsSQL = `SELECT ` + flagColumns + ` FROM reading_flags
WHERE sensor_id = $1 AND from_at <= $3 AND to_at >= $2 AND ` + fmt.Sprintf(flagInForceSQL, 4) + `
  AND ` + fmt.Sprintf(sensorOfKeySQL, 5, 6) + `
ORDER BY from_at, id`

	// pageReadingsSQL are listReadings' statements with the key's guard,
	// by order, and by whether they leave out the readings a flag in
	// force rejects whole: the flags' ranges are read once, before the
	// readings, so that a sensor without such flags costs each row a scan
	// of an empty list.
	pageReadingsSQL = [2][2]string{
		{pageReadings("", false), pageReadings("", true)},
		{pageReadings(" DESC", false), pageReadings(" DESC", true)},
	}
)

// rejectedCTE is the list of the ranges that flags in force at $asOf
// (nil: now) reject whole, for withoutRejected.
func rejectedCTE(asOf int) string {
	return `rejected AS MATERIALIZED (
    SELECT from_at, to_at FROM reading_flags
    WHERE sensor_id = $1 AND input_id IS NULL AND flag = 'rejected' AND from_at <= $3 AND to_at >= $2
      AND ` + fmt.Sprintf(flagInForceSQL, asOf) + `)`
}

// withoutRejected leaves out the readings of rejectedCTE's ranges.
const withoutRejected = `
  AND NOT EXISTS (SELECT FROM rejected w WHERE datetime BETWEEN w.from_at AND w.to_at)`

func pageReadings(order string, unrejected bool) string {
	with, without := "", ""
	if unrejected {
		with, without = "WITH "+rejectedCTE(8)+"\n", withoutRejected
	}
	guard := fmt.Sprintf(sensorOfKeySQL, 6, 7)
	return withSensorIDs(with, guard, `
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 AND `+guard+without+`
ORDER BY datetime`+order+` LIMIT $4 OFFSET $5`)
}

// pageSensor is a row of pageSensorSQL.
type pageSensor struct {
	Sensor
	Flagged   bool
	Rejecting bool
}

// scanPageSensor reads pageSensorSQL's row, as pgx.CollectExactlyOneRow
// would, but for the instance, which db.instances decodes from its JSON
// unless it holds what that JSON gives.
func (db *DB) scanPageSensor(rows pgx.Rows) (pageSensor, error) {
	defer rows.Close()
	var (
		got      pageSensor
		instance pgtype.DriverBytes // valid until rows.Next
	)
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return got, err
		}
		return got, pgx.ErrNoRows
	}
	s := &got.Sensor
	err := rows.Scan(&s.ID, &s.ProjectID, &s.Name, &s.Description, &s.BlueprintID, &instance, &s.CreatedAt, &s.UpdatedAt, &got.Flagged, &got.Rejecting)
	if err != nil {
		return got, err
	}
	if s.Instance, err = db.instances.decode(s.ID, instance); err != nil {
		return got, fmt.Errorf("instance: %w", err)
	}
	if rows.Next() {
		return got, pgx.ErrTooManyRows
	}
	return got, rows.Err()
}

// rejectsWhole tells whether f rejects the readings it covers whole.
func rejectsWhole(f Flag) bool { return f.InputID == nil && f.Flag == Rejected }

// ReadPage reads, in one round trip, the sensor r.Key names when
// r.Lookup, the flags in force on its readings over r.Query's range, and
// the readings r.Query selects, without those a flag in force rejects
// whole unless r.Rejected: what a page of readings needs, which took three
// round trips in turn. It gives head the sensor (nil without r.Lookup) and
// the flags, then fn each reading, in order, as its row arrives; fn must
// not keep it. Every statement is guarded by the key (sensorOfKeySQL), so
// that none reads anything of a sensor beyond the key's project and
// organization, whether or not the sensor is looked up. It returns
// NotFound, and head's and fn's errors as they are.
func (db *DB) ReadPage(ctx context.Context, r PageRead, head func(*Sensor, []Flag) error, fn func(*Reading) error) error {
	key, q := r.Key, r.Query
	var limit *int // LIMIT NULL is no limit
	if q.Limit > 0 {
		limit = &q.Limit
	}
	hinted := r.Lookup && r.AsOf == nil
	unflagged := hinted && r.Unflagged
	unchecked := hinted && (r.Unflagged || r.NoneRejected) && !r.Rejected
	b := &pgx.Batch{}
	if r.Lookup {
		b.Queue(pageSensorSQL, key.OrgID, key.ProjectID, key.SensorID)
	}
	if !unflagged {
		b.Queue(pageFlagsSQL, key.SensorID, q.From, q.To, r.AsOf, key.ProjectID, key.OrgID)
	}
	args := []any{key.SensorID, q.From, q.To, limit, q.Offset, key.ProjectID, key.OrgID}
	order, unrejected := 0, 0
	if q.Desc {
		order = 1
	}
	if !r.Rejected && !unchecked {
		unrejected = 1
		args = append(args, r.AsOf)
	}
	if r.Links != nil {
		queuePageLinks(b, r, args, order, unrejected)
	}
	b.Queue(pageReadingsSQL[order][unrejected], args...)

	br := db.pool.SendBatch(ctx, b)
	defer br.Close()
	var (
		sensor             *Sensor
		flagged, rejecting bool
		flags              []Flag
	)
	if r.Lookup {
		rows, _ := br.Query()
		got, err := db.scanPageSensor(rows)
		if err != nil {
			return notFound("get sensor", err, "sensor")
		}
		sensor, flagged, rejecting = &got.Sensor, got.Flagged, got.Rejecting
		if r.Flagged != nil {
			r.Flagged(flagged, rejecting)
		}
	}
	if !unflagged {
		rows, _ := br.Query()
		var err error
		if flags, err = pgx.CollectRows(rows, pgx.RowToStructByName[Flag]); err != nil {
			return readError("sensor flags", err)
		}
	}
	if unflagged && flagged || unchecked && (rejecting || slices.ContainsFunc(flags, rejectsWhole)) {
		// Read by hints that no longer hold: the flags, the links and
		// the readings again, checked, the sensor and its links as read.
		if err := br.Close(); err != nil {
			return dbError("list readings", err)
		}
		again := r
		again.Lookup, again.Unflagged, again.NoneRejected, again.Flagged = false, false, false, nil
		if r.Links != nil && r.LinksOf == nil {
			again.LinksOf = sensor.Instance
		}
		return db.ReadPage(ctx, again, func(_ *Sensor, flags []Flag) error { return head(sensor, flags) }, fn)
	}
	if err := head(sensor, flags); err != nil {
		return err
	}
	if r.Links != nil {
		linked, err := readPageLinks(br, r.LinkReadings)
		if err != nil {
			return err
		}
		if err := r.Links(linked); err != nil {
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return dbError("list readings", err)
	}
	if err := scanReadings(rows, "list readings", fn); err != nil {
		return err
	}
	return dbError("list readings", br.Close())
}
