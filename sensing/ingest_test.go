package sensing_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestIngestChecks: every reading is checked whatever brings it, and a
// refusal names it as its source does; a batch is checked before any
// lock, so a bad batch for an archived project is the client's mistake,
// not a conflict.
func TestIngestChecks(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	future := time.Now().Add(48 * time.Hour)
	now := time.Now().Truncate(time.Second)
	t.Run("Batch", func(t *testing.T) {
		_, err := core.Ingest(ctx, f.plain, sensing.NewBatch([]store.Reading{
			{Time: now, InputIDs: []int64{1}, Values: []float64{1}},
			{Time: future, InputIDs: []int64{1}, Values: []float64{2}},
		}))
		wantCode(t, err, apperr.Invalid)
		if e, _ := err.(*apperr.Error); !strings.HasPrefix(e.Message, "element 1: datetime") || e.Details["index"] != 1 {
			t.Errorf("error %q %v, want it to name element 1", e.Message, e.Details)
		}
	})
	t.Run("Stream", func(t *testing.T) {
		_, err := core.Ingest(ctx, f.plain, &sliceSource{readings: []store.Reading{
			{Time: now, InputIDs: []int64{1}, Values: []float64{1}},
			{Time: future, InputIDs: []int64{1}, Values: []float64{2}},
		}})
		wantCode(t, err, apperr.Invalid)
		if e, _ := err.(*apperr.Error); !strings.HasPrefix(e.Message, "reading 1: datetime") {
			t.Errorf("error %q, want it to name reading 1 as the source does", e.Message)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		_, err := core.Ingest(ctx, f.plain, sensing.NewBatch(nil))
		wantCode(t, err, apperr.Invalid)
		_, err = core.Ingest(ctx, f.plain, &sliceSource{})
		wantCode(t, err, apperr.Invalid)
	})
	if got := readingsOf(t, db, f.plain); len(got) != 0 {
		t.Errorf("%d readings stored by refused writes, want none", len(got))
	}
	t.Run("BeforeAnyLock", func(t *testing.T) {
		if _, err := db.UpdateProject(ctx, f.key.OrgID, f.key.ProjectID, store.ProjectPatch{State: ptr(store.Archived)}); err != nil {
			t.Fatal(err)
		}
		_, err := core.Ingest(ctx, f.plain, sensing.NewBatch([]store.Reading{{Time: future, InputIDs: []int64{1}, Values: []float64{1}}}))
		wantCode(t, err, apperr.Invalid)
		_, err = core.Ingest(ctx, f.plain, sensing.NewBatch([]store.Reading{{Time: now, InputIDs: []int64{1}, Values: []float64{1}}}))
		wantCode(t, err, apperr.Conflict)
	})
}

// TestIngestStreamMatchesBatch writes the same flapping readings to two
// sensors with the same rules, one as a batch and one as a stream (whose
// alarms are stepped a chunk of 5,000 at a time, the chunks' events
// coalesced as they come): the readings, the current alarms and the events
// are the same, and the write says it raised them. Only the write to the
// project with a webhook wakes the outbox.
func TestIngestStreamMatchesBatch(t *testing.T) {
	var raised atomic.Int64
	db := store.New(storetest.NewPool(t))
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{OnEvents: func() { raised.Add(1) }})
	ctx := t.Context()
	batchSensor, streamSensor := newFixture(t, db), newFixture(t, db)
	if _, err := db.CreateWebhook(ctx, batchSensor.key.OrgID, batchSensor.key.ProjectID, "https://hooks.example.com/alarms", "a-secret-of-16-chars"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []fixture{batchSensor, streamSensor} {
		for _, spec := range []store.AlarmRuleSpec{
			{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 100, Persistence: 2},
			{TargetKey: "p", Level: "Alarm", Direction: "above", Threshold: 150, Deadband: 5},
		} {
			spec.Persistence = max(spec.Persistence, 1)
			if _, err := core.CreateAlarmRule(ctx, f.key, spec); err != nil {
				t.Fatal(err)
			}
		}
		ingest(t, core, f.key, store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}})
	}
	readings := func(f fixture) []store.Reading {
		out := make([]store.Reading, 12_001)
		for n := range out {
			p := float64(n%7) * 30 // u * i * k: 0 to 180, across both thresholds
			out[n] = store.Reading{Time: minute(1).Add(time.Duration(n) * time.Second), InputIDs: []int64{f.u(), f.i()}, Values: []float64{p / 2, 1}}
		}
		out[12_000].Time = minute(0).Add(-time.Second) // late
		return out
	}
	batch := ingest(t, core, batchSensor.key, readings(batchSensor)...)
	stream, err := core.Ingest(ctx, streamSensor.key, &sliceSource{readings: readings(streamSensor)})
	if err != nil {
		t.Fatal(err)
	}
	if batch.Events != stream.Events || batch.New != stream.New || batch.Replaced != stream.Replaced || batch.Events == 0 || batch.New != 12_001 {
		t.Errorf("batch wrote %+v, stream %+v; want the same, 12,001 new, with events", batch, stream)
	}
	if got := raised.Load(); got != 1 {
		t.Errorf("OnEvents called %d times, want once: for the write to the project with a webhook", got)
	}
	type event struct {
		kind, level string
		at          time.Time
		value       float64
		coalesced   int
	}
	eventsOf := func(f fixture) []event {
		list, _, err := db.ListAlarmEvents(ctx, f.key.OrgID, f.key.ProjectID, store.AlarmEventQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []event
		for _, e := range list {
			var (
				at    time.Time
				value float64
			)
			if e.ReadingAt != nil {
				at = *e.ReadingAt
			}
			if e.Value != nil {
				value = *e.Value
			}
			out = append(out, event{e.Kind, e.LevelName, at, value, e.Coalesced})
		}
		return out
	}
	if b, s := eventsOf(batchSensor), eventsOf(streamSensor); !slices.Equal(b, s) || len(b) < 3 {
		t.Errorf("events of the batch %+v\nof the stream %+v\nwant the same, at least 3", b, s)
	}
	alarmsOf := func(f fixture) string {
		var out []string
		for _, a := range currentAlarms(t, db, f.key) {
			out = append(out, fmt.Sprintf("%s %s %v", a.LevelName, a.Since, a.Value))
		}
		return strings.Join(out, ";")
	}
	if b, s := alarmsOf(batchSensor), alarmsOf(streamSensor); b != s {
		t.Errorf("alarms after the batch %s, after the stream %s; want the same", b, s)
	}
}

// TestRetryAbortedTransactions makes PostgreSQL abort the transactions of
// the domain's writes as a deadlock's victim or a serialization failure,
// once more than the attempts allow (a trigger raises the error; a
// sequence, which no rollback undoes, counts the attempts): a batch and a
// range delete are run again, whole, up to the limit, then answer
// Unavailable with nothing stored; a stream, which cannot be read twice,
// answers Unavailable at once.
func TestRetryAbortedTransactions(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	_, err := pool.Exec(ctx, `
CREATE SEQUENCE test_attempts;
CREATE FUNCTION test_abort() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('test_attempts') <= TG_ARGV[0]::int THEN
        RAISE EXCEPTION 'aborted by the test' USING ERRCODE = TG_ARGV[1];
    END IF;
    RETURN NULL;
END;
$$`)
	if err != nil {
		t.Fatal(err)
	}
	batch := []store.Reading{
		{Time: minute(0), InputIDs: []int64{1}, Values: []float64{1}},
		{Time: minute(1), InputIDs: []int64{1}, Values: []float64{2}},
	}
	for _, w := range []struct {
		name     string
		write    func(store.SensorKey) error
		stored   []store.Reading // before it
		attempts int
	}{
		{"Batch", func(key store.SensorKey) error {
			_, err := core.Ingest(ctx, key, sensing.NewBatch(batch))
			return err
		}, nil, store.DefaultTxAttempts},
		{"DeleteReadings", func(key store.SensorKey) error {
			_, err := core.DeleteReadings(ctx, key, minute(0), minute(1))
			return err
		}, batch, store.DefaultTxAttempts},
		{"Stream", func(key store.SensorKey) error {
			_, err := core.Ingest(ctx, key, &sliceSource{readings: batch})
			return err
		}, nil, 1},
	} {
		t.Run(w.name, func(t *testing.T) {
			key := newFixture(t, db).plain
			if w.stored != nil {
				ingest(t, core, key, w.stored...)
			}
			_, err := pool.Exec(ctx, fmt.Sprintf(`ALTER SEQUENCE test_attempts RESTART;
CREATE TRIGGER test_abort AFTER INSERT ON rollup_dirty FOR EACH STATEMENT EXECUTE FUNCTION test_abort('%d', '40P01');
CREATE TRIGGER test_abort AFTER INSERT ON rollup_hours FOR EACH STATEMENT EXECUTE FUNCTION test_abort('%[1]d', '40P01')`, w.attempts))
			if err != nil {
				t.Fatal(err)
			}
			err = w.write(key)
			if _, err := pool.Exec(ctx, `DROP TRIGGER test_abort ON rollup_dirty; DROP TRIGGER test_abort ON rollup_hours`); err != nil {
				t.Fatal(err)
			}
			wantCode(t, err, apperr.Unavailable)
			var attempts int
			if err := pool.QueryRow(ctx, `SELECT last_value FROM test_attempts`).Scan(&attempts); err != nil {
				t.Fatal(err)
			}
			if attempts != w.attempts {
				t.Errorf("attempts = %d, want %d", attempts, w.attempts)
			}
			if got := readingsOf(t, db, key); len(got) != len(w.stored) {
				t.Errorf("%d readings, want the %d stored before", len(got), len(w.stored))
			}
		})
	}
}

// TestIngestRoundTrips counts the statements a batch costs, each a round
// trip (the COPY, through pgconn, is not traced and costs one more): the
// lock's round trip, with the transaction's BEGIN (the lock, the sensor's
// state and rules, its hours' rollups read, its newest reading kept and,
// for a small batch, its readings stored), then its rollups (merged, or
// queued) with the COMMIT, and a batch over stored readings its entry in
// the audit trail with the COMMIT too. A large batch over stored readings
// pays one more for the delete; a batch that changes a target's level, one
// more for the alarms.
func TestIngestRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		size int
		over int64 // the statements of a batch over stored readings
	}{
		{"Small", 10, 2},
		{"Large", 1000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, db, tracer := newCountedService(t)
			ctx := t.Context()
			f := newFixture(t, db)
			at := 0
			batch := func(v float64) []store.Reading {
				readings := make([]store.Reading, tt.size)
				for n := range readings {
					readings[n] = store.Reading{Time: minute(at).Add(time.Duration(n) * time.Second), InputIDs: []int64{f.u(), f.i()}, Values: []float64{v, 1}}
				}
				at += 20
				return readings
			}
			count := func(readings []store.Reading) int64 {
				t.Helper()
				before := tracer.n.Load()
				if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(readings)); err != nil {
					t.Fatal(err)
				}
				return tracer.n.Load() - before
			}
			count(batch(1)) // the sensor's first inputs, recorded once
			const base = 2
			if got := count(batch(1)); got != base {
				t.Errorf("a batch to a sensor without rules: %d statements, want %d", got, base)
			}
			at -= 20 // the instants of the batch before
			if got := count(batch(1)); got != tt.over {
				t.Errorf("a batch over stored readings: %d statements, want %d (the audit entry of the overwrite with the COMMIT)", got, tt.over)
			}
			if _, err := core.CreateAlarmRule(ctx, f.key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 10, Persistence: 1}); err != nil {
				t.Fatal(err)
			}
			if got := count(batch(1)); got != base {
				t.Errorf("a batch that changes no alarm: %d statements, want %d", got, base)
			}
			if got := count(batch(20)); got != base {
				t.Errorf("a batch that raises an alarm: %d statements, want %d (states, alarm and event with the commit)", got, base)
			}
			rate := store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 1e9, Persistence: 1, Window: 60, Per: 60}
			if _, err := core.CreateAlarmRule(ctx, f.key, rate); err != nil {
				t.Fatal(err)
			}
			count(batch(1)) // reads its window back once, to keep it
			if got := count(batch(1)); got != base {
				t.Errorf("a batch to a sensor with a rate rule: %d statements, want %d (the window it keeps written with the states and the commit, no reading read)", got, base)
			}
		})
	}
}

// newCountedService is the domain on a fresh database whose statements
// (and batches of statements) the tracer counts.
func newCountedService(t *testing.T) (*sensing.Service, *store.DB, *countingTracer) {
	t.Helper()
	tracer := &countingTracer{}
	pool, err := store.Open(t.Context(), storetest.NewDatabase(t), store.PoolConfig{Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	return sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{}), db, tracer
}

// countingTracer counts the statements and batches of statements sent
// (n, round trips), and the statements, those of batches each (queries).
type countingTracer struct{ n, queries atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.queries.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.queries.Add(1)
}

func (c *countingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
