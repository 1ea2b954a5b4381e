package sensing

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/store"
)

// A Source yields the readings of one write, as a request brings them.
type Source interface {
	// Next returns the next reading, valid until the following call, or
	// nil after the last. An error ends the source.
	Next() (*store.Reading, error)
	// Where names the reading Next returned last, for an error about it,
	// and gives the error's details: "element 3" and {"index": 3}, "line
	// 12" and {"line": 12}.
	Where() (string, map[string]any)
}

// Batch is a Source of readings a request brought whole: a JSON batch.
type Batch struct {
	readings []store.Reading
	next     int
}

// NewBatch is the Source of readings, which a write may reorder.
func NewBatch(readings []store.Reading) *Batch { return &Batch{readings: readings} }

// Next implements Source.
func (b *Batch) Next() (*store.Reading, error) {
	if b.next == len(b.readings) {
		return nil, nil
	}
	b.next++
	return &b.readings[b.next-1], nil
}

// Where implements Source: a batch names its readings by their index.
func (b *Batch) Where() (string, map[string]any) {
	i := b.next - 1
	return fmt.Sprintf("element %d", i), map[string]any{"index": i}
}

// Ingest stores the readings of src in the sensor, in one transaction: all
// of them or none. A reading at the instant of a stored one replaces it;
// of two readings at one instant, the later wins. Each reading is checked
// (checks), the sensor locked, its readings stored and their hours queued
// for the rollups, its alarm rules stepped with them in time order, and
// the newest reading kept.
//
// A Batch is checked before the transaction begins; the lock's round trip
// (with the BEGIN) also reads the rollups of its hours and keeps its
// newest reading, and stores a batch of up to 100 readings (an upsert); a
// larger one is stored in one COPY (or, where it overlaps stored
// readings, a delete and a COPY). Its readings are merged into the
// rollups of the hours that can take them, the others queued for the
// maintainer, with the COMMIT (rollBatch). Its alarms
// are stepped in memory; a transaction PostgreSQL aborts as a deadlock's
// victim is run again, whole. Any other source streams: the
// sensor is locked from its first reading, each reading is checked and
// written as it comes, so that memory stays bounded whatever its length,
// and its alarms are stepped a chunk at a time as stored; the source is
// read and checked in a goroutine of its own, a few blocks ahead of the
// write (prefetch), so that parsing overlaps with storing; an abort is
// answered Unavailable, since the source cannot be read twice. Taking the
// lock, and the statements after the stream, have the database timeout;
// the stream itself is read under ctx alone.
//
// It returns the source's own errors; NotFound; Invalid, naming the
// reading, for a reading a check refuses or an input id that is not one of
// the sensor's instance; Invalid when a sensor without an instance would
// have more distinct input ids than the store's limit; Invalid for a
// source without readings; Conflict when its project is archived; and
// Unavailable as above.
func (s *Service) Ingest(ctx context.Context, key store.SensorKey, src Source) (store.Written, error) {
	var (
		in      intake
		run     = s.db.InTx
		written store.Written
	)
	check := s.checks()
	if batch, ok := src.(*Batch); ok {
		b, err := newBatchIntake(batch, check)
		if err != nil {
			return written, err
		}
		in = b
	} else {
		st, err := newStreamIntake(src, check)
		if err != nil {
			return written, err
		}
		defer st.src.close()
		in, run = st, s.db.InTxOnce
	}
	var rules []store.AlarmRule // as the last attempt left them
	err := run(ctx, func(tx *store.Tx) error {
		var err error
		written, rules, err = s.write(ctx, tx, key, in)
		return err
	})
	if err == nil {
		s.held.put(key.SensorID, rules) // committed: the stamps of what they keep are stored
	}
	if err == nil && written.Events > 0 && written.Hooked && s.cfg.OnEvents != nil {
		s.cfg.OnEvents()
	}
	return written, err
}

// write is the pipeline of every write of readings, in its transaction.
// Its locks follow one order: the project and the sensor
// (LockSensorWrite), then the chunks of readings, each locked to write it
// before anything reads it.
//
// It returns the sensor's rules too, as the write left them, for what
// their rate rules keep to be held once it commits (heldWindows).
func (s *Service) write(ctx context.Context, tx *store.Tx, key store.SensorKey, in intake) (store.Written, []store.AlarmRule, error) {
	var written store.Written
	bounded, cancel := in.bound(s, ctx)
	w, err := tx.LockSensorWrite(bounded, key, in.ahead())
	cancel()
	if err != nil {
		return written, nil, err
	}
	s.held.take(key.SensorID, w.Rules)
	if err := in.stage(ctx, tx, w); err != nil {
		return written, nil, err
	}
	ctx, cancel = in.bound(s, ctx)
	defer cancel()
	if err := in.checkInputs(w.Sensor.Instance); err != nil {
		return written, nil, err
	}
	if err := tx.RecordInputs(ctx, w, in.inputIDs()); err != nil {
		return written, nil, err
	}
	if written, err = in.store(ctx, tx, w); err != nil {
		return written, nil, err
	}
	var pre *batchOutputs // the outputs the rollups computed, for the rules
	if w.Hours != nil {
		pre = s.rollBatch(tx, w, in.ahead(), written.Replaced)
		defer pre.giveBack(s.outputMemory) // the rules read it, and nothing after them
	}
	chunks := func(fn func([]store.Reading) error) error { return in.chunks(ctx, fn) }
	if written.Replaced > 0 {
		if err := auditOverwrite(ctx, tx, key, written, in.span); err != nil {
			return written, nil, err
		}
	}
	flagged, stale := w.Flagged, false
	if len(w.Checks) > 0 {
		checks, err := store.ParseChecks(w.Checks)
		if err != nil {
			return written, nil, fmt.Errorf("read checks: %w", err)
		}
		set, rejectedStored, err := s.runChecks(ctx, tx, w.Sensor, checks, chunks)
		if err != nil {
			return written, nil, err
		}
		flagged, stale = flagged || set, rejectedStored
	}
	if written.Events, err = s.stepAlarms(ctx, tx, w.Sensor, w.Rules, w.Newest, flagged, stale, pre, chunks); err != nil {
		return written, nil, err
	}
	written.Hooked = w.Hooked
	if in.ahead() != nil {
		return written, w.Rules, nil // the lock kept the newest reading
	}
	return written, w.Rules, tx.KeepLatest(ctx, w.Sensor.ID, in.newest())
}

// intake is how a write's readings reach the pipeline: whole, or as they
// stream.
type intake interface {
	// bound bounds ctx for a statement of the write, when its request is
	// not bounded.
	bound(s *Service, ctx context.Context) (context.Context, context.CancelFunc)
	// ahead is the readings, ordered and one per instant, when they are
	// known before the lock: the lock's round trip then queues their hours
	// and keeps the newest (store.Tx.LockSensorWrite). nil for a stream.
	ahead() []store.Reading
	// stage writes what must be written before the input ids are known:
	// a stream's readings.
	stage(ctx context.Context, tx *store.Tx, w store.SensorWrite) error
	// checkInputs refuses, Invalid, an input id that is not one of inst's
	// (nil accepts any).
	checkInputs(inst *store.Instance) error
	// inputIDs yields the input ids of the readings, in any order,
	// repeated or not.
	inputIDs() iter.Seq[int64]
	// store stores the readings and queues their hours for the rollups.
	store(ctx context.Context, tx *store.Tx, w store.SensorWrite) (store.Written, error)
	// chunks gives fn the readings as stored, ordered and one per
	// instant, a chunk at a time.
	chunks(ctx context.Context, fn func([]store.Reading) error) error
	// newest is the newest reading: of the latest instant, the last there.
	newest() *store.Reading
	// span is the first and last instant of the readings.
	span() (first, last time.Time)
}

// batchIntake is a Batch, ordered and one per instant.
type batchIntake struct {
	all     []store.Reading // as the request brought them, for errors
	ordered []store.Reading
}

// newBatchIntake checks every reading of b before any transaction begins.
func newBatchIntake(b *Batch, check checks) (*batchIntake, error) {
	for r, err := b.Next(); r != nil || err != nil; r, err = b.Next() {
		if err == nil {
			err = check.reading(r, b)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(b.readings) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "there are no readings to store")
	}
	return &batchIntake{all: b.readings, ordered: store.LastPerInstant(b.readings)}, nil
}

func (*batchIntake) bound(_ *Service, ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {} // the server bounds the request
}

func (b *batchIntake) ahead() []store.Reading { return b.ordered }

func (*batchIntake) stage(context.Context, *store.Tx, store.SensorWrite) error { return nil }

func (b *batchIntake) checkInputs(inst *store.Instance) error { return inst.CheckInputs(b.all) }

func (b *batchIntake) inputIDs() iter.Seq[int64] { return store.InputIDsOf(b.all) }

func (b *batchIntake) store(ctx context.Context, tx *store.Tx, w store.SensorWrite) (store.Written, error) {
	return tx.WriteReadings(ctx, w, b.ordered)
}

func (b *batchIntake) chunks(_ context.Context, fn func([]store.Reading) error) error {
	return fn(b.ordered)
}

func (b *batchIntake) newest() *store.Reading { return &b.ordered[len(b.ordered)-1] }

func (b *batchIntake) span() (first, last time.Time) {
	return b.ordered[0].Time, b.ordered[len(b.ordered)-1].Time
}

// streamIntake is a Source that streams, checked reading by reading as it
// is read, ahead of the write (prefetch).
type streamIntake struct {
	src   *prefetch
	first *store.Reading // read before the sensor is locked; nil once given
	sw    *store.StreamWrite
}

// newStreamIntake starts reading src and waits for its first reading, so
// that the sensor is locked only once a reading has come. The caller
// closes the intake's src unless it returns an error.
func newStreamIntake(src Source, check checks) (*streamIntake, error) {
	in := &streamIntake{src: startPrefetch(src, check)}
	r, err := in.src.Next()
	if err == nil && r == nil {
		err = apperr.Errorf(apperr.Invalid, "there are no readings to store")
	}
	if err != nil {
		in.src.close()
		return nil, err
	}
	in.first = &store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)}
	return in, nil
}

// Next is the stream as the store reads it: the first reading, then the
// source's, each checked.
func (in *streamIntake) Next() (*store.Reading, error) {
	if r := in.first; r != nil {
		in.first = nil
		return r, nil
	}
	return in.src.Next()
}

func (*streamIntake) bound(s *Service, ctx context.Context) (context.Context, context.CancelFunc) {
	return s.bounded(ctx)
}

func (*streamIntake) ahead() []store.Reading { return nil }

func (in *streamIntake) stage(ctx context.Context, tx *store.Tx, w store.SensorWrite) error {
	var err error
	in.sw, err = tx.CopyReadingStream(ctx, w, in)
	return err
}

func (in *streamIntake) checkInputs(inst *store.Instance) error {
	return inst.CheckInputIDs(in.sw.InputIDs())
}

func (in *streamIntake) inputIDs() iter.Seq[int64] { return slices.Values(in.sw.InputIDs()) }

func (in *streamIntake) store(ctx context.Context, _ *store.Tx, _ store.SensorWrite) (store.Written, error) {
	return in.sw.Merge(ctx)
}

// streamChunk is how many readings a stream's alarm evaluation holds at a
// time.
const streamChunk = 5000

func (in *streamIntake) chunks(ctx context.Context, fn func([]store.Reading) error) error {
	return in.sw.Readings(ctx, streamChunk, fn)
}

func (in *streamIntake) newest() *store.Reading { return in.sw.Newest() }

func (in *streamIntake) span() (first, last time.Time) { return in.sw.Span() }

// checks are what every reading must pass, whatever brings it, before it
// is stored: its datetime no further after the server's clock than
// MaxFuture. A logger whose clock is wrong is the commonest bad data in
// the field, and a reading from next year would stand as the sensor's
// latest until then.
type checks struct {
	now, limit time.Time
	margin     time.Duration // 0: no limit
}

// checks are the checks of a write arriving now.
func (s *Service) checks() checks {
	now := time.Now()
	return checks{now: now, limit: now.Add(s.cfg.MaxFuture), margin: s.cfg.MaxFuture}
}

// reading returns Invalid, naming it as src does, for a reading that does
// not pass.
func (c checks) reading(r *store.Reading, src Source) error {
	if c.margin == 0 || !r.Time.After(c.limit) {
		return nil
	}
	where, details := src.Where()
	return &apperr.Error{Code: apperr.Invalid, Details: details, Message: fmt.Sprintf(
		"%s: datetime %s is more than %s after the server's clock (%s); check the clock of the device that sent it",
		where, datetime.FormatExact(r.Time), shortDuration(c.margin), c.now.UTC().Format(time.RFC3339))}
}

// shortDuration writes 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	text := d.String()
	if strings.HasSuffix(text, "m0s") {
		text = strings.TrimSuffix(text, "0s")
	}
	if strings.HasSuffix(text, "h0m") {
		text = strings.TrimSuffix(text, "0m")
	}
	return text
}

// auditOverwrite records in the audit trail that a write replaced stored
// readings: how many, and the range of the write; the entry goes with the
// COMMIT.
func auditOverwrite(ctx context.Context, tx *store.Tx, key store.SensorKey, written store.Written, span func() (first, last time.Time)) error {
	first, last := span()
	return tx.AuditAtCommit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID, Kind: store.AuditOverwrite, Action: "write",
		After: map[string]any{"replaced": written.Replaced, "new": written.New, "from": datetime.FormatExact(first), "to": datetime.FormatExact(last)}})
}
