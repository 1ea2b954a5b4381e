package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
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

// The statements of a streamed write. Its readings are staged in a
// temporary table, numbered in the stream's order, then merged into
// readings by a set-based statement: the stream never sits in memory.
const (
	createStageSQL = `
CREATE TEMPORARY TABLE reading_stage (seq bigint, datetime timestamptz, input_ids bigint[], vals float8[]) ON COMMIT DROP`
	copyStageSQL = `COPY reading_stage (seq, datetime, input_ids, vals) FROM STDIN (FORMAT binary)`
	// lastOfStageSQL is the stage, one reading an instant, the later of the
	// stream winning, in time order.
	lastOfStageSQL = `
SELECT DISTINCT ON (datetime) datetime, input_ids, vals FROM reading_stage ORDER BY datetime, seq DESC`
	deleteStagedSQL = `
DELETE FROM readings r USING (SELECT DISTINCT datetime FROM reading_stage) s
WHERE r.sensor_id = $1 AND r.datetime BETWEEN $2 AND $3 AND r.datetime = s.datetime`
	deleteOrderedStagedSQL = `
DELETE FROM readings r USING reading_stage s
WHERE r.sensor_id = $1 AND r.datetime BETWEEN $2 AND $3 AND r.datetime = s.datetime`
	insertStagedSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM reading_stage`
	insertLastOfStageSQL = `
INSERT INTO readings (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM (` + lastOfStageSQL + `) s`
)

// stageChunk is how many staged readings alarm evaluation holds at a time.
const stageChunk = 5000

// InsertReadingStream stores the readings of stream in the sensor, in one
// transaction, by the rules of InsertReadings: all or none, the later of
// two readings at one instant wins, a reading at a stored instant replaces
// it, alarms are evaluated in time order and the newest reading is kept.
// Memory stays bounded whatever the stream's length: the readings go to
// the database as they come. The stream is read under ctx alone; the
// statements after it, which take the sensor's lock, have mergeTimeout
// (0: no limit), so that a slow upload holds no lock.
//
// It returns the stream's own error; NotFound; Invalid, naming the input,
// for an input id that is not one of the sensor's instance, or one past
// the limit of a sensor without one; Invalid for an empty stream; and
// Conflict when its project is archived.
func (db *DB) InsertReadingStream(ctx context.Context, key SensorKey, stream ReadingStream, mergeTimeout time.Duration) (Written, error) {
	var written Written
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, createStageSQL); err != nil {
			return err
		}
		src := &stageSource{stream: stream}
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, src, copyStageSQL); err != nil {
			if src.err != nil {
				return src.err // the stream's, which the COPY passed on
			}
			return err
		}
		if src.count == 0 {
			return apperr.Errorf(apperr.Invalid, "there are no readings to store")
		}
		if mergeTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, mergeTimeout)
			defer cancel()
		}
		var err error
		written, err = db.mergeStage(ctx, tx, key, src)
		return err
	})
	return written, dbError("insert reading stream", err)
}

// mergeStage moves the staged readings into readings under the sensor's
// lock, as InsertReadings stores a batch.
func (db *DB) mergeStage(ctx context.Context, tx pgx.Tx, key SensorKey, src *stageSource) (Written, error) {
	var (
		written Written
		state   ProjectState
		inst    *Instance
		known   []int64
	)
	err := tx.QueryRow(ctx, lockSensorWriteSQL, key.OrgID, key.ProjectID, key.SensorID).Scan(&state, &inst, &known)
	if err != nil {
		return written, notFound("lock sensor", err, "sensor")
	}
	if err := writable(key.ProjectID, state); err != nil {
		return written, err
	}
	if err := inst.checkInputIDs(src.ids); err != nil {
		return written, err
	}
	if err := db.recordInputs(ctx, tx, key.SensorID, inst == nil, known, freshInputs(known, slices.Values(src.ids))); err != nil {
		return written, err
	}
	var stored bool
	if err := tx.QueryRow(ctx, probeReadingsSQL, key.SensorID, src.first, src.last).Scan(&stored); err != nil {
		return written, err
	}
	if stored {
		del := deleteStagedSQL
		if src.ordered {
			del = deleteOrderedStagedSQL
		}
		tag, err := tx.Exec(ctx, del, key.SensorID, src.first, src.last)
		if err != nil {
			return written, err
		}
		written.Replaced = int(tag.RowsAffected())
	}
	insert := insertLastOfStageSQL
	if src.ordered {
		insert = insertStagedSQL // one reading an instant already, and no sort to pay
	}
	tag, err := tx.Exec(ctx, insert, key.SensorID)
	if err != nil {
		return written, err
	}
	written.New = int(tag.RowsAffected()) - written.Replaced
	sensor := Sensor{ID: key.SensorID, ProjectID: key.ProjectID, Instance: inst}
	if err := db.evaluateStage(ctx, tx, sensor); err != nil {
		return written, err
	}
	return written, keepLatest(ctx, tx, key.SensorID, []Reading{src.newest})
}

// evaluateStage evaluates the sensor's rules with the staged readings, in
// time order, a chunk at a time through a cursor. Each chunk reads the
// rules again, with the states and current alarms the chunk before left,
// so that the chunks evaluate as one batch would.
func (db *DB) evaluateStage(ctx context.Context, tx pgx.Tx, sensor Sensor) error {
	if db.alarms == nil {
		return nil
	}
	rules, err := sensorRules(ctx, tx, sensor.ID)
	if err != nil || len(rules) == 0 {
		return err
	}
	var newest *time.Time
	if err := tx.QueryRow(ctx, `SELECT datetime FROM sensor_latest WHERE sensor_id = $1`, sensor.ID).Scan(&newest); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if _, err := tx.Exec(ctx, `DECLARE stage_cursor NO SCROLL CURSOR FOR `+lastOfStageSQL); err != nil {
		return err
	}
	chunk := make([]Reading, 0, stageChunk)
	for first := true; ; first = false {
		rows, _ := tx.Query(ctx, fmt.Sprintf(`FETCH %d FROM stage_cursor`, stageChunk))
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
		if !first {
			if rules, err = sensorRules(ctx, tx, sensor.ID); err != nil {
				return err
			}
		}
		if err := applyAlarms(ctx, tx, sensor, rules, db.alarms.Evaluate(sensor, rules, chunk, newest)); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `CLOSE stage_cursor`)
	return err
}

// stageSource encodes the stream's readings as COPY reads them, numbered
// in order, and notes what the merge needs to know of them.
type stageSource struct {
	stream      ReadingStream
	err         error // the stream's
	count       int64
	ids         []int64 // every input id, ascending, once
	first, last time.Time
	ordered     bool    // each reading after the one before
	newest      Reading // of the latest instant, the last there; its own copy
	started     bool
	done        bool
	buf         []byte
	pending     []byte
}

func (s *stageSource) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.pending) == 0 {
			if s.done {
				break
			}
			if err := s.encode(); err != nil {
				s.err = err
				return n, err
			}
		}
		c := copy(p[n:], s.pending)
		s.pending = s.pending[c:]
		n += c
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// encode fills pending with the next readings, the header before the first
// and the trailer after the last.
func (s *stageSource) encode() error {
	b := s.buf[:0]
	if !s.started {
		b = append(b, copySignature...)
		s.started = true
	}
	for len(b) < copyChunk {
		r, err := s.stream.Next()
		if err != nil {
			return err
		}
		if r == nil {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
			s.done = true
			break
		}
		s.note(r)
		b = appendCopyRow(b, s.count, r)
	}
	s.buf, s.pending = b, b
	return nil
}

// note counts r and keeps what the merge needs of it.
func (s *stageSource) note(r *Reading) {
	s.count++
	if s.count == 1 {
		s.first, s.last, s.ordered = r.Time, r.Time, true
	}
	s.ordered = s.ordered && (s.count == 1 || r.Time.After(s.last))
	if r.Time.Before(s.first) {
		s.first = r.Time
	}
	if !r.Time.Before(s.last) {
		s.last = r.Time
		s.newest = Reading{Time: r.Time, InputIDs: append(s.newest.InputIDs[:0], r.InputIDs...), Values: append(s.newest.Values[:0], r.Values...)}
	}
	for _, id := range r.InputIDs {
		if i, found := slices.BinarySearch(s.ids, id); !found {
			s.ids = slices.Insert(s.ids, i, id)
		}
	}
}
