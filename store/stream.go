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
// their instants are noted as the stream's own, each chunk's as one array
// (a row an instant cost PostgreSQL about 1 µs a reading, a sixth of the
// overwrite: a temporary table's rows are inserted one at a time). From
// the first reading that is not after the one before, the rest is staged
// in a temporary table, numbered in the stream's order, and merged into
// readings by set-based statements: the stream never sits in memory.
const (
	copyReadingsSQL = `COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT binary)`
	createOwnSQL    = `CREATE TEMPORARY TABLE reading_own (instants timestamptz[]) ON COMMIT DROP`
	ownSQL          = `SELECT unnest(instants) AS datetime FROM reading_own`
	// overwriteChunkSQL deletes the stored readings at a chunk's instants
	// ($4, ascending, from $2 to $3), a chunk of readings at a time as
	// ingest does (storeSQL), returns how many, the chunk's replaced, and
	// notes the instants as the stream's own.
	overwriteChunkSQL = `
WITH own AS (INSERT INTO reading_own VALUES ($4::timestamptz[]))
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
       (SELECT count(DISTINCT datetime) FROM reading_stage JOIN (` + ownSQL + `) o USING (datetime))
FROM (SELECT ARRAY(SELECT datetime FROM reading_stage) AS instants) s`
	insertStagedSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM reading_stage`
	insertLastOfStageSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM (` + lastOfStageSQL + `) s`
	// streamedSQL is the stream's readings as stored, in time order, from
	// %[2]s to %[3]s where %[4]s (those of the straight COPY, the chunks'
	// own instants, the staged ones); the cursor Readings reads. A cursor
	// takes no parameters, so the values are written in.
	streamedSQL = `
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = %[1]d AND datetime BETWEEN %[2]s AND %[3]s AND (%[4]s)
ORDER BY datetime`
)

// CopyReadingStream writes the readings of stream into the sensor w
// locked, as they come, by the rules of WriteReadings: the later of two
// readings at one instant wins, a reading at a stored instant replaces it.
// Memory stays bounded whatever the stream's length: the readings go to
// the database as they come, straight into readings while they are new
// and in order, else into a stage that Merge moves into readings. Its
// writes lock each chunk of readings to write it before anything reads
// it, as ingest does, so that a compression never makes it a deadlock's
// victim. It returns the stream's own errors as they are.
func (tx *Tx) CopyReadingStream(ctx context.Context, w SensorWrite, stream ReadingStream) (*StreamWrite, error) {
	sw := &StreamWrite{tx: tx.tx, w: w, src: &streamSource{stream: stream, sensorID: w.Sensor.ID}}
	if err := sw.src.peek(); err != nil {
		return nil, err
	}
	if sw.src.held == nil {
		return nil, apperr.Errorf(apperr.Invalid, "there are no readings to store")
	}
	if err := sw.copy(ctx); err != nil {
		return nil, dbError("copy readings", err)
	}
	return sw, nil
}

// StreamWrite is a stream CopyReadingStream wrote, in its transaction.
type StreamWrite struct {
	tx  pgx.Tx
	w   SensorWrite
	src *streamSource

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

// InputIDs is every input id the stream's readings had, ascending, once.
func (sw *StreamWrite) InputIDs() []int64 { return sw.src.ids }

// Newest is the stream's newest reading: of its latest instant, the last
// there.
func (sw *StreamWrite) Newest() *Reading { return &sw.src.newest }

// Span is the stream's first and last instant.
func (sw *StreamWrite) Span() (first, last time.Time) {
	for _, p := range []phase{sw.chunked, sw.direct, sw.staged} {
		if p.count == 0 {
			continue
		}
		if first.IsZero() || p.first.Before(first) {
			first = p.first
		}
		if p.last.After(last) {
			last = p.last
		}
	}
	return first, last
}

// copy writes the stream: a chunk at a time while it brings readings in
// order that the sensor may hold already, straight into readings while
// it brings new readings in order, then into the stage.
func (sw *StreamWrite) copy(ctx context.Context) error {
	newest := sw.w.Newest
	if newest != nil && !sw.src.held.Time.After(*newest) {
		if err := sw.overwrite(ctx); err != nil {
			return err
		}
		if sw.src.held == nil {
			return nil
		}
	}
	if err := beginOn(ctx, sw.tx); err != nil {
		return err
	}
	conn := sw.tx.Conn().PgConn()
	if newest == nil || sw.src.held.Time.After(*newest) {
		sw.src.begin(true)
		if _, err := conn.CopyFrom(ctx, sw.src, copyReadingsSQL); err != nil {
			return sw.src.failure(err)
		}
		sw.direct = sw.src.phase
	}
	if sw.src.held == nil {
		return nil
	}
	if err := sw.createOwn(ctx); err != nil { // deleteStagedSQL reads it
		return err
	}
	if _, err := sw.tx.Exec(ctx, createStageSQL); err != nil {
		return err
	}
	sw.src.begin(false)
	if _, err := conn.CopyFrom(ctx, sw.src, copyStageSQL); err != nil {
		return sw.src.failure(err)
	}
	sw.staged = sw.src.phase
	return nil
}

// overwrite writes the stream, while each reading is after the one before
// and not after the sensor's newest, in chunks the way insertReadings
// writes a batch: the stored readings at the chunk's instants deleted,
// then one COPY. A chunk holds each instant once and comes after the
// chunk before, so each DELETE counts exactly the readings it replaces,
// and each reading is written once. The chunks' instants are noted for
// the stage's counting and for Readings.
func (sw *StreamWrite) overwrite(ctx context.Context) error {
	if err := sw.createOwn(ctx); err != nil {
		return err
	}
	if err := beginOn(ctx, sw.tx); err != nil {
		return err
	}
	conn := sw.tx.Conn().PgConn()
	chunk := make([]Reading, 0, streamChunk)
	instants := make([]time.Time, 0, streamChunk)
	sw.src.begin(false)
	for full := true; full; {
		var err error
		if chunk, err = sw.src.chunk(chunk[:0], *sw.w.Newest); err != nil {
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
		if err := sw.tx.QueryRow(ctx, overwriteChunkSQL, sw.w.Sensor.ID, instants[0], instants[len(instants)-1], instants).Scan(&replaced); err != nil {
			return err
		}
		sw.replaced += replaced
		if err := copyReadings(ctx, conn, sw.w.Sensor.ID, chunk); err != nil {
			return err
		}
	}
	sw.chunked = sw.src.phase
	return nil
}

// streamChunk is how many readings a stream's overwrite, and Readings,
// hold at a time.
const streamChunk = 5000

// createOwn creates reading_own, once.
func (sw *StreamWrite) createOwn(ctx context.Context) error {
	if sw.own {
		return nil
	}
	_, err := sw.tx.Exec(ctx, createOwnSQL)
	sw.own = err == nil
	return err
}

// Merge moves the staged readings into readings, replacing the stored
// ones at their instants, and queues the hours the stream wrote for the
// rollups. It returns how many of the stream's instants were new to the
// sensor and how many replaced a stored reading.
func (sw *StreamWrite) Merge(ctx context.Context) (Written, error) {
	written, err := sw.merge(ctx)
	return written, dbError("merge readings", err)
}

func (sw *StreamWrite) merge(ctx context.Context) (Written, error) {
	written := Written{New: int(sw.direct.count + sw.chunked.count - sw.replaced), Replaced: int(sw.replaced)}
	if sw.staged.count > 0 {
		// Stored readings at staged instants are replaced: those stored
		// before the stream count as replaced; those the straight COPY
		// or the chunks wrote were counted already. Nothing was stored
		// from the straight COPY's first reading on before the stream.
		var beforeLo, beforeHi, straightLo, straightHi *time.Time
		first, last := sw.staged.first, sw.staged.last
		switch {
		case sw.direct.count == 0 || last.Before(sw.direct.first):
			beforeLo, beforeHi = &first, &last
		case !first.Before(sw.direct.first):
			straightLo, straightHi = &first, &last
		default:
			below := sw.direct.first.Add(-time.Microsecond)
			beforeLo, beforeHi, straightLo, straightHi = &first, &below, &sw.direct.first, &last
		}
		var beforeDeleted, straightDeleted, own int
		err := sw.tx.QueryRow(ctx, deleteStagedSQL, sw.w.Sensor.ID, beforeLo, beforeHi, straightLo, straightHi).Scan(&beforeDeleted, &straightDeleted, &own)
		if err != nil {
			return written, err
		}
		deleted, replaced := beforeDeleted+straightDeleted, beforeDeleted-own
		insert := insertLastOfStageSQL
		if sw.staged.ordered { // one reading an instant already, and no sort to pay
			insert = insertStagedSQL
		}
		tag, err := sw.tx.Exec(ctx, insert, sw.w.Sensor.ID)
		if err != nil {
			return written, err
		}
		written.New += int(tag.RowsAffected()) - deleted
		written.Replaced += replaced
	}
	return written, sw.queueHours(ctx)
}

// Readings gives fn the stream's readings as stored, after Merge: in time
// order, one per instant, a chunk of at most size at a time read through
// a cursor, so that memory stays bounded. fn must not keep the chunk.
func (sw *StreamWrite) Readings(ctx context.Context, size int, fn func([]Reading) error) error {
	return dbError("read the stream's readings", sw.readings(ctx, size, fn))
}

func (sw *StreamWrite) readings(ctx context.Context, size int, fn func([]Reading) error) error {
	literal := func(t time.Time) string {
		return "'" + t.UTC().Format("2006-01-02T15:04:05.999999Z") + "'::timestamptz"
	}
	var from, to time.Time
	var which []string
	for _, p := range []struct {
		phase
		which string
	}{
		{sw.chunked, "datetime IN (" + ownSQL + ")"},
		{sw.direct, ""},
		{sw.staged, "datetime IN (SELECT datetime FROM reading_stage)"},
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
	query := fmt.Sprintf(streamedSQL, sw.w.Sensor.ID, literal(from), literal(to), strings.Join(which, " OR "))
	// The chunks the stream just wrote have no statistics yet: PostgreSQL
	// expects a handful of the sensor's rows there and joins them to the
	// stream's instants by a nested loop, a scan of every instant for
	// every row (20 s for a file of 100,000 lines written again). A hash
	// join costs the same whatever the estimate. The cursor's plan is made
	// by DECLARE, so the setting is put back at once.
	if _, err := sw.tx.Exec(ctx, `SET LOCAL enable_nestloop = off`); err != nil {
		return err
	}
	if _, err := sw.tx.Exec(ctx, `DECLARE streamed NO SCROLL CURSOR FOR `+query); err != nil {
		return err
	}
	if _, err := sw.tx.Exec(ctx, `RESET enable_nestloop`); err != nil {
		return err
	}
	chunk := make([]Reading, 0, size)
	for {
		rows, _ := sw.tx.Query(ctx, fmt.Sprintf(`FETCH %d FROM streamed`, size))
		chunk = chunk[:0]
		err := ScanReadings(rows, func(r *Reading) error {
			chunk = append(chunk, Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
			return nil
		})
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			break
		}
		if err := fn(chunk); err != nil {
			return err
		}
	}
	_, err := sw.tx.Exec(ctx, `CLOSE streamed`)
	return err
}

// queueHours queues for the rollups the hours the stream wrote: those it
// noted as they passed, or, for a stream of readings hours apart, those
// read back from the readings of its spans. A span may hold stored
// readings the stream left alone (between a chunk's instants, or a
// stage's): their hours are recomputed for nothing.
func (sw *StreamWrite) queueHours(ctx context.Context) error {
	if hours, ok := sw.src.hours.list(); ok {
		if _, err := sw.tx.Exec(ctx, queueHoursSQL, sw.w.Sensor.ID, hours); err != nil {
			return fmt.Errorf("queue the stream's hours: %w", err)
		}
		return nil
	}
	for _, span := range []phase{sw.chunked, sw.direct, sw.staged} {
		if span.count == 0 {
			continue
		}
		_, err := sw.tx.Exec(ctx, `
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT DISTINCT $1::bigint, date_trunc('hour', datetime, 'UTC'), true FROM readings WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true, touched_at = now()`, sw.w.Sensor.ID, span.first, span.last)
		if err != nil {
			return fmt.Errorf("queue the stream's hours: %w", err)
		}
	}
	return nil
}
