package store_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// Several replicas of the service share one database: each has a pool of
// its own, as here.

func openReplica(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(t.Context(), url, store.PoolConfig{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Replicas that start at once all migrate: goose's session lock makes them
// take turns, so each migration is applied exactly once and every replica
// finds the schema complete.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := storetest.NewEmptyDatabase(t)
	const replicas = 4
	pools := make([]*pgxpool.Pool, replicas)
	for i := range pools {
		pools[i] = openReplica(t, url)
	}
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() { errs[i] = store.Migrate(t.Context(), pool, slog.New(slog.DiscardHandler)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for i, pool := range pools {
		if _, pending, err := store.MigrationState(t.Context(), pool); err != nil || pending {
			t.Errorf("replica %d: MigrationState pending=%v err=%v, want complete", i, pending, err)
		}
	}
	var applied, distinct int
	err := pools[0].QueryRow(t.Context(),
		`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if applied != distinct {
		t.Errorf("goose_db_version has %d rows for %d versions: a migration was applied more than once", applied, distinct)
	}
}

func TestRunJob(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	a, b := store.New(openReplica(t, url)), store.New(openReplica(t, url))

	t.Run("OneReplicaAtATime", func(t *testing.T) {
		running, release := make(chan struct{}), make(chan struct{})
		var ranA bool
		var errA error
		done := make(chan struct{})
		go func() {
			defer close(done)
			ranA, errA = a.RunJob(t.Context(), "exclusive", time.Hour, func(context.Context) error {
				close(running)
				<-release
				return nil
			})
		}()
		<-running
		ranB, err := b.RunJob(t.Context(), "exclusive", time.Hour, func(context.Context) error {
			t.Error("replica b ran the job while replica a was running it")
			return nil
		})
		if err != nil || ranB {
			t.Errorf("b.RunJob while a runs = %v, %v; want false, nil", ranB, err)
		}
		close(release)
		<-done
		if errA != nil || !ranA {
			t.Errorf("a.RunJob = %v, %v; want true, nil", ranA, errA)
		}
	})

	t.Run("OnceAnInterval", func(t *testing.T) {
		var runs int
		job := func(context.Context) error { runs++; return nil }
		for i, db := range []*store.DB{a, b, a, b} {
			if _, err := db.RunJob(t.Context(), "hourly", time.Hour, job); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if got, want := runs, 1; got != want {
			t.Errorf("an hourly job called 4 times by two replicas ran %d times, want %d", got, want)
		}
		ran, err := b.RunJob(t.Context(), "hourly", 0, job)
		if err != nil || !ran {
			t.Errorf("RunJob with no interval = %v, %v; want true, nil", ran, err)
		}
	})

	t.Run("FailureRetried", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := a.RunJob(t.Context(), "flaky", time.Hour, func(context.Context) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("RunJob = %v, want %v", err, boom)
		}
		ran, err := b.RunJob(t.Context(), "flaky", time.Hour, func(context.Context) error { return nil })
		if err != nil || !ran {
			t.Errorf("RunJob after a failure = %v, %v; want true, nil (a failed run is not recorded)", ran, err)
		}
	})
}

func TestCaughtUp(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	lsn, err := db.WALPosition(t.Context())
	if err != nil || lsn == "" {
		t.Fatalf("WALPosition = %q, %v; want a position", lsn, err)
	}
	// A primary is not in recovery: it has every write.
	for _, at := range []string{"", lsn, "FFFFFFFF/0"} {
		if ok, err := db.CaughtUp(t.Context(), at); err != nil || !ok {
			t.Errorf("CaughtUp(%q) on the primary = %v, %v; want true, nil", at, ok, err)
		}
	}
	if _, err := db.CaughtUp(t.Context(), "yesterday"); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("CaughtUp(%q) = %v, want Invalid", "yesterday", err)
	}
}

// ClaimQueuedHours holds a sensor's queued hours against the transactions
// of other replicas, which skip them, and skips a sensor being written;
// the hours recomputed and taken off the queue are rolled up.
func TestClaimQueuedHours(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	db := store.New(pool)
	ctx := t.Context()
	project := newProject(t, db, newOrg(t, db))
	key := newSensor(t, db, project, nil)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	mustInsert(t, db, key,
		store.Reading{Time: at, InputIDs: []int64{1}, Values: []float64{1}},
		store.Reading{Time: at.Add(time.Hour), InputIDs: []int64{1}, Values: []float64{2}},
		store.Reading{Time: at.Add(2 * time.Hour), InputIDs: []int64{1}, Values: []float64{3}})
	if got, err := db.NextQueuedSensor(ctx, 0, 0); err != nil || got != key.SensorID {
		t.Fatalf("NextQueuedSensor(0) = %d, %v; want %d", got, err, key.SensorID)
	}
	if got, err := db.NextQueuedSensor(ctx, key.SensorID, 0); err != nil || got != 0 {
		t.Fatalf("NextQueuedSensor(%d) = %d, %v; want 0", key.SensorID, got, err)
	}

	held := make(chan struct{})
	release := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.InTx(ctx, func(tx *store.Tx) error {
			q, err := tx.ClaimQueuedHours(ctx, key.SensorID, 2, 0)
			if err != nil {
				return err
			}
			if len(q.Hours) != 2 || !q.Hours[0].Equal(at.Add(time.Hour)) || q.Sensor.ID != key.SensorID {
				t.Errorf("first claim %+v, want the newest 2 hours of sensor %d", q, key.SensorID)
			}
			close(held)
			<-release
			var rows []store.HourRollup
			err = tx.HourReadings(ctx, q, func(hour time.Time, r *store.Reading) error {
				rows = append(rows, store.HourRollup{Hour: hour, Count: 1, Outputs: []store.Series{{ID: 99, Partial: stats.Partial{Count: 1, Min: r.Values[0], Max: r.Values[0]}}}})
				return nil
			})
			if err != nil || len(rows) != 2 {
				t.Errorf("HourReadings gave %d readings (%v), want the 2 of the hours held", len(rows), err)
			}
			return tx.StoreHourRollups(ctx, q, rows)
		})
	}()
	<-held
	err := db.InTx(ctx, func(tx *store.Tx) error {
		q, err := tx.ClaimQueuedHours(ctx, key.SensorID, 10, 0)
		if err == nil && (len(q.Hours) != 1 || !q.Hours[0].Equal(at)) {
			t.Errorf("second claim %v, want the first hour alone: the others are held", q.Hours)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	var rolled, outputs, queued int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rollup_hours WHERE sensor_id = $1), (SELECT count(*) FROM rollup_hours WHERE sensor_id = $1 AND length(outputs) > 0),
       (SELECT count(*) FROM rollup_dirty WHERE sensor_id = $1)`, key.SensorID).Scan(&rolled, &outputs, &queued)
	if err != nil || rolled != 2 || outputs != 2 || queued != 1 {
		t.Errorf("%d hours and %d outputs rolled up, %d queued (%v); want 2, 2 and 1", rolled, outputs, queued, err)
	}

	writer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(context.WithoutCancel(ctx))
	if _, err := writer.Exec(ctx, `SELECT FROM sensors WHERE id = $1 FOR NO KEY UPDATE`, key.SensorID); err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		q, err := tx.ClaimQueuedHours(ctx, key.SensorID, 10, 0)
		if err == nil && len(q.Hours) != 0 {
			t.Errorf("claim of a sensor being written = %v, want none", q.Hours)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An hour a write queued is left to the maintainer once no write has
// queued it for the settle interval; a write that queues it again starts
// the wait over, and a settle of 0 takes it at once.
func TestClaimSettledHours(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	db := store.New(pool)
	ctx := t.Context()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	reading := store.Reading{Time: at, InputIDs: []int64{1}, Values: []float64{1}}
	claimed := func(settle time.Duration) int {
		t.Helper()
		next, err := db.NextQueuedSensor(ctx, 0, settle)
		if err != nil {
			t.Fatal(err)
		}
		var q store.QueuedHours
		err = db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			q, err = tx.ClaimQueuedHours(ctx, key.SensorID, 10, settle)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if found := next == key.SensorID; found != (len(q.Hours) > 0) {
			t.Fatalf("NextQueuedSensor(%v) = %d, but ClaimQueuedHours held %v", settle, next, q.Hours)
		}
		return len(q.Hours)
	}
	age := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE rollup_dirty SET touched_at = now() - interval '2 hours' WHERE sensor_id = $1`, key.SensorID); err != nil {
			t.Fatal(err)
		}
	}

	mustInsert(t, db, key, reading)
	if got, want := claimed(time.Hour), 0; got != want {
		t.Errorf("hours claimed right after the write, settle 1h = %d, want %d", got, want)
	}
	if got, want := claimed(0), 1; got != want {
		t.Errorf("hours claimed right after the write, settle 0 = %d, want %d", got, want)
	}
	age()
	if got, want := claimed(time.Hour), 1; got != want {
		t.Errorf("hours claimed 2h after the write, settle 1h = %d, want %d", got, want)
	}
	reading.Values = []float64{2}
	mustInsert(t, db, key, reading) // an overwrite queues the hour again
	if got, want := claimed(time.Hour), 0; got != want {
		t.Errorf("hours claimed right after an overwrite of a settled hour, settle 1h = %d, want %d", got, want)
	}
}
