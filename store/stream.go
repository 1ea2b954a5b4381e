package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// ReadingStream yields readings one at a time, as a file is parsed.
type ReadingStream interface {
	// Next returns the next reading, valid until the following call, or
	// nil at the end. An error ends the stream.
	Next() (*Reading, error)
}

// The statements of a streamed write. Readings after the sensor's newest,
// each after the one before (a logger's new data), go straight into
// readings by COPY. Readings in order at or before it (a logger's file
// uploaded again) overwrite a chunk at a time, as a JSON batch does, and
// their instants are noted as the stream's own. From the first reading
// that is not after the one before, the rest is staged in a temporary
// table, numbered in the stream's order, and merged into readings by
// set-based statements: the stream never sits in memory.
const (
	copyReadingsSQL = `COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT binary)`
	createOwnSQL    = `CREATE TEMPORARY TABLE reading_own (datetime timestamptz) ON COMMIT DROP`
	// overwriteChunkSQL deletes the stored readings at a chunk's instants
	// ($4, ascending, from $2 to $3), a chunk of readings at a time as
	// ingest does (storeSQL), returns how many, the chunk's replaced, and
	// notes the instants as the stream's own.
	overwriteChunkSQL = `
WITH own AS (INSERT INTO reading_own SELECT unnest($4::timestamptz[]))
SELECT delete_readings($1, $2, $3::timestamptz + interval '1 microsecond', $4)`
	createStageSQL = `
CREATE TEMPORARY TABLE reading_stage (seq bigint, datetime timestamptz, input_ids bigint[], vals float8[]) ON COMMIT DROP`
	copyStageSQL = `COPY reading_stage (seq, datetime, input_ids, vals) FROM STDIN (FORMAT binary)`
	// lastOfStageSQL is the stage, one reading an instant, the later of the
	// stream winning.
	lastOfStageSQL = `SELECT DISTINCT ON (datetime) datetime, input_ids, vals FROM reading_stage ORDER BY datetime, seq DESC`
	// deleteStagedSQL deletes the stored readings at staged instants: from
	// $2 to $3, those before the straight COPY's first reading, and from $4
	// to $5, the straight COPY's (none where a bound is NULL). It returns how
	// many of each there were, and how many of the first were the
	// overwriting chunks' own instants: the others were stored before the
	// stream.
	deleteStagedSQL = `
SELECT CASE WHEN $2::timestamptz IS NULL THEN 0 ELSE delete_readings($1, $2, $3::timestamptz + interval '1 microsecond', s.instants) END,
       CASE WHEN $4::timestamptz IS NULL THEN 0 ELSE delete_readings($1, $4, $5::timestamptz + interval '1 microsecond', s.instants) END,
       (SELECT count(DISTINCT datetime) FROM reading_stage JOIN reading_own USING (datetime))
FROM (SELECT ARRAY(SELECT datetime FROM reading_stage) AS instants) s`
	insertStagedSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM reading_stage`
	insertLastOfStageSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM (` + lastOfStageSQL + `) s`
	// streamedSQL is the stream's readings as stored, in time order, from
	// %[2]s to %[3]s where %[4]s (those of the straight COPY, the chunks'
	// own instants, the staged ones); the cursor alarm evaluation reads. A
	// cursor takes no parameters, so the values are written in.
	streamedSQL = `
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = %[1]d AND datetime BETWEEN %[2]s AND %[3]s AND (%[4]s)
ORDER BY datetime`
)

// stageChunk is how many readings alarm evaluation holds at a time.
const stageChunk = 5000

// InsertReadingStream stores the readings of stream in the sensor, in one
// transaction, by the rules of InsertReadings: all or none, the later of
// two readings at one instant wins, a reading at a stored instant replaces
// it, alarms are evaluated in time order and the newest reading is kept.
// Memory stays bounded whatever the stream's length: the readings go to
// the database as they come. The sensor is locked from the stream's first
// reading; taking the lock, and the statements after the stream, have
// timeout (0: no limit), the stream itself is read under ctx alone.
//
// Unlike InsertReadings, a transaction PostgreSQL aborts as a deadlock's
// victim or a serialization failure is not run again: the readings it read
// are gone from the stream, which cannot be read twice, and keeping them
// for a retry is what the stream avoids. Nothing of it is stored, and the
// caller gets Unavailable, to send the stream again. Its writes lock each
// chunk of readings to write it before anything reads it, as ingest does,
// so that a compression never makes it a deadlock's victim.
//
// It returns the stream's own error; NotFound; Invalid, naming the input,
// for an input id that is not one of the sensor's instance, or one past
// the limit of a sensor without one; Invalid for an empty stream;
// Conflict when its project is archived; and Unavailable as above.
func (db *DB) InsertReadingStream(ctx context.Context, key SensorKey, stream ReadingStream, timeout time.Duration) (Written, error) {
	var written Written
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		src := &streamSource{stream: stream, sensorID: key.SensorID}
		if err := src.peek(); err != nil {
			return err
		}
		if src.held == nil {
			return apperr.Errorf(apperr.Invalid, "there are no readings to store")
		}
		w := streamWrite{db: db, tx: tx, key: key, src: src, timeout: timeout}
		if err := w.lock(ctx); err != nil {
			return err
		}
		if err := w.copy(ctx); err != nil {
			return err
		}
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		var err error
		written, err = w.merge(ctx)
		return err
	})
	return written, dbError("insert reading stream", err)
}

// streamWrite is one InsertReadingStream.
type streamWrite struct {
	db      *DB
	tx      pgx.Tx
	key     SensorKey
	src     *streamSource
	timeout time.Duration

	sensorWrite // before the stream

	chunked  phase // what overwrote a chunk at a time
	replaced int64 // of the chunked, how many replaced a stored reading
	own      bool  // reading_own exists
	direct   phase // what went straight into readings
	staged   phase // what was staged
}

// phase is a COPY of the stream's: how many readings and their span.
type phase struct {
	count       int64
	first, last time.Time
	ordered     bool // each reading after the one before
}

// lock takes the sensor's lock, as InsertReadings does, and reads what the
// stream is written against.
func (w *streamWrite) lock(ctx context.Context) error {
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	var err error
	w.sensorWrite, err = lockSensorWrite(ctx, w.tx, w.key)
	return err
}

// copy writes the stream: a chunk at a time while it brings readings in
// order that the sensor may hold already, straight into readings while
// it brings new readings in order, then into the stage.
func (w *streamWrite) copy(ctx context.Context) error {
	if w.newest != nil && !w.src.held.Time.After(*w.newest) {
		if err := w.overwrite(ctx); err != nil {
			return err
		}
		if w.src.held == nil {
			return nil
		}
	}
	conn := w.tx.Conn().PgConn()
	if w.newest == nil || w.src.held.Time.After(*w.newest) {
		w.src.begin(true)
		if _, err := conn.CopyFrom(ctx, w.src, copyReadingsSQL); err != nil {
			return w.src.failure(err)
		}
		w.direct = w.src.phase
	}
	if w.src.held == nil {
		return nil
	}
	if err := w.createOwn(ctx); err != nil { // deleteStagedSQL reads it
		return err
	}
	if _, err := w.tx.Exec(ctx, createStageSQL); err != nil {
		return err
	}
	w.src.begin(false)
	if _, err := conn.CopyFrom(ctx, w.src, copyStageSQL); err != nil {
		return w.src.failure(err)
	}
	w.staged = w.src.phase
	return nil
}

// overwrite writes the stream, while each reading is after the one before
// and not after the sensor's newest, in chunks the way insertReadings
// writes a batch: the stored readings at the chunk's instants deleted,
// then one COPY. A chunk holds each instant once and comes after the
// chunk before, so each DELETE counts exactly the readings it replaces,
// and each reading is written once. The chunks' instants are noted for
// the stage's counting and for alarm evaluation.
func (w *streamWrite) overwrite(ctx context.Context) error {
	if err := w.createOwn(ctx); err != nil {
		return err
	}
	conn := w.tx.Conn().PgConn()
	chunk := make([]Reading, 0, stageChunk)
	instants := make([]time.Time, 0, stageChunk)
	w.src.begin(false)
	for full := true; full; {
		var err error
		if chunk, err = w.src.chunk(chunk[:0], *w.newest); err != nil {
			return err
		}
		if full = len(chunk) == cap(chunk); len(chunk) == 0 {
			break
		}
		instants = instants[:0]
		for _, r := range chunk {
			instants = append(instants, r.Time)
		}
		// delete_readings plans each DELETE for these instants (EXECUTE),
		// which joins them as their number deserves; a cached generic plan
		// would search the array once for every stored row.
		var replaced int64
		if err := w.tx.QueryRow(ctx, overwriteChunkSQL, w.key.SensorID, instants[0], instants[len(instants)-1], instants).Scan(&replaced); err != nil {
			return err
		}
		w.replaced += replaced
		if err := copyReadings(ctx, conn, w.key.SensorID, chunk); err != nil {
			return err
		}
	}
	w.chunked = w.src.phase
	return nil
}

// createOwn creates reading_own, once.
func (w *streamWrite) createOwn(ctx context.Context) error {
	if w.own {
		return nil
	}
	_, err := w.tx.Exec(ctx, createOwnSQL)
	w.own = err == nil
	return err
}

// merge checks the stream's inputs, moves the staged readings into
// readings, evaluates alarms and keeps the newest reading.
func (w *streamWrite) merge(ctx context.Context) (Written, error) {
	written := Written{New: int(w.direct.count + w.chunked.count - w.replaced), Replaced: int(w.replaced)}
	if err := w.inst.checkInputIDs(w.src.ids); err != nil {
		return written, err
	}
	err := w.db.recordInputs(ctx, w.tx, w.key.SensorID, w.inst == nil, w.known, freshInputs(w.known, slices.Values(w.src.ids)))
	if err != nil {
		return written, err
	}
	if w.staged.count > 0 {
		// Stored readings at staged instants are replaced: those stored
		// before the stream count as replaced; those the straight COPY
		// or the chunks wrote were counted already. Nothing was stored
		// from the straight COPY's first reading on before the stream.
		var beforeLo, beforeHi, straightLo, straightHi *time.Time
		first, last := w.staged.first, w.staged.last
		switch {
		case w.direct.count == 0 || last.Before(w.direct.first):
			beforeLo, beforeHi = &first, &last
		case !first.Before(w.direct.first):
			straightLo, straightHi = &first, &last
		default:
			below := w.direct.first.Add(-time.Microsecond)
			beforeLo, beforeHi, straightLo, straightHi = &first, &below, &w.direct.first, &last
		}
		var beforeDeleted, straightDeleted, own int
		err := w.tx.QueryRow(ctx, deleteStagedSQL, w.key.SensorID, beforeLo, beforeHi, straightLo, straightHi).Scan(&beforeDeleted, &straightDeleted, &own)
		if err != nil {
			return written, err
		}
		deleted, replaced := beforeDeleted+straightDeleted, beforeDeleted-own
		insert := insertLastOfStageSQL
		if w.staged.ordered { // one reading an instant already, and no sort to pay
			insert = insertStagedSQL
		}
		tag, err := w.tx.Exec(ctx, insert, w.key.SensorID)
		if err != nil {
			return written, err
		}
		written.New += int(tag.RowsAffected()) - deleted
		written.Replaced += replaced
	}
	if err := w.queueHours(ctx); err != nil {
		return written, err
	}
	if written.Events, err = w.evaluateAlarms(ctx); err != nil {
		return written, err
	}
	return written, keepLatest(ctx, w.tx, w.key.SensorID, []Reading{w.src.newest})
}

// evaluateAlarms evaluates the sensor's rules with the stream's readings
// as stored, in time order, a chunk at a time through a cursor. Each chunk
// reads the rules again, with the states and current alarms the chunk
// before left, so that the chunks evaluate as one batch would. The events
// are coalesced as one batch's, chunk after chunk keeping only what the
// file so far raises, and written at the end. It returns how many events
// the readings raised.
func (w *streamWrite) evaluateAlarms(ctx context.Context) (int, error) {
	if w.db.alarms == nil {
		return 0, nil
	}
	tx, sensorID := w.tx, w.key.SensorID
	rules, err := sensorRules(ctx, tx, sensorID)
	if err != nil || len(rules) == 0 {
		return 0, err
	}
	literal := func(t time.Time) string {
		return "'" + t.UTC().Format("2006-01-02T15:04:05.999999Z") + "'::timestamptz"
	}
	var from, to time.Time
	var which []string
	for _, p := range []struct {
		phase
		which string
	}{
		{w.chunked, "datetime IN (SELECT datetime FROM reading_own)"},
		{w.direct, ""},
		{w.staged, "datetime IN (SELECT datetime FROM reading_stage)"},
	} {
		if p.count == 0 {
			continue
		}
		if p.which == "" {
			p.which = fmt.Sprintf("datetime BETWEEN %s AND %s", literal(p.first), literal(p.last))
		}
		which = append(which, p.which)
		if from.IsZero() || p.first.Before(from) {
			from = p.first
		}
		if p.last.After(to) {
			to = p.last
		}
	}
	query := fmt.Sprintf(streamedSQL, sensorID, literal(from), literal(to), strings.Join(which, " OR "))
	if _, err := tx.Exec(ctx, `DECLARE streamed NO SCROLL CURSOR FOR `+query); err != nil {
		return 0, err
	}
	sensor := Sensor{ID: sensorID, ProjectID: w.key.ProjectID, Instance: w.inst}
	chunk := make([]Reading, 0, stageChunk)
	var raised []AlarmChange // the changes that raise events, of the chunks so far
	for first := true; ; first = false {
		rows, _ := tx.Query(ctx, fmt.Sprintf(`FETCH %d FROM streamed`, stageChunk))
		chunk = chunk[:0]
		err := ScanReadings(rows, func(r *Reading) error {
			chunk = append(chunk, Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
			return nil
		})
		if err != nil {
			return 0, err
		}
		if len(chunk) == 0 {
			break
		}
		if !first {
			if rules, err = sensorRules(ctx, tx, sensorID); err != nil {
				return 0, err
			}
		}
		before := ruleStates(rules)
		changes, err := w.db.alarms.Evaluate(ctx, txLinks{tx}, sensor, rules, chunk, w.newest)
		if err != nil {
			return 0, err
		}
		if err := applyAlarms(ctx, tx, sensor, rules, before, changes, nil); err != nil {
			return 0, err
		}
		raised = append(raised, changes...)
		w.db.alarms.Coalesce(raised)
		raised = slices.DeleteFunc(raised, func(c AlarmChange) bool { return c.Folded })
	}
	if _, err = tx.Exec(ctx, `CLOSE streamed`); err != nil {
		return 0, err
	}
	write := &pgx.Batch{}
	queueEvents(write, sensor, rules, raised)
	if write.Len() > 0 {
		err = tx.SendBatch(ctx, write).Close()
	}
	return len(raised), err
}

// queueHours queues for the rollups the hours the stream wrote, read back
// from the readings of its spans, since the stream keeps none of them. A
// span may hold stored readings the stream left alone (between a chunk's
// instants, or a stage's): their hours are recomputed for nothing.
func (w *streamWrite) queueHours(ctx context.Context) error {
	for _, span := range []phase{w.chunked, w.direct, w.staged} {
		if span.count == 0 {
			continue
		}
		_, err := w.tx.Exec(ctx, `
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT DISTINCT $1::bigint, date_trunc('hour', datetime, 'UTC'), true FROM readings WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true WHERE NOT d.inputs`, w.key.SensorID, span.first, span.last)
		if err != nil {
			return fmt.Errorf("queue the stream's hours: %w", err)
		}
	}
	return nil
}
