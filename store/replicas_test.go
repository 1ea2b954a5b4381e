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

// Two replicas maintaining the rollups at once recompute each queued hour
// once between them: the queue's rows are locked FOR UPDATE SKIP LOCKED.
func TestMaintainRollupsOnce(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	a, b := store.New(pool), store.New(openReplica(t, url))
	org := newOrg(t, a)
	key := newSensor(t, a, newProject(t, a, org), nil)
	const hours = 200
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	readings := make([]store.Reading, 0, hours*6)
	for i := range hours * 6 {
		readings = append(readings, store.Reading{Time: start.Add(time.Duration(i) * 10 * time.Minute), InputIDs: []int64{1}, Values: []float64{float64(i)}})
	}
	if _, err := insert(t.Context(), a, key, readings); err != nil {
		t.Fatal(err)
	}
	noOutputs := func(store.Sensor) store.Outputs { return nil }
	done := make([]int, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, db := range []*store.DB{a, b} {
		wg.Go(func() {
			for {
				n, err := db.MaintainRollups(t.Context(), noOutputs, 7)
				done[i] += n
				if err != nil || n < 7 {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := done[0] + done[1]; got != hours {
		t.Errorf("the replicas recomputed %d + %d hours, want %d between them", done[0], done[1], hours)
	}
	var rolled, queued int
	err := pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM rollup_hours WHERE sensor_id = $1), (SELECT count(*) FROM rollup_dirty WHERE sensor_id = $1)`, key.SensorID).Scan(&rolled, &queued)
	if err != nil {
		t.Fatal(err)
	}
	if rolled != hours || queued != 0 {
		t.Errorf("%d hours rolled up and %d queued, want %d and 0", rolled, queued, hours)
	}
}

// A sensor being written (a slow file upload holds its lock) holds up no
// other sensor's rollups: the maintainer skips it and comes back to it.
func TestMaintainRollupsSkipsASensorBeingWritten(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	db := store.New(pool)
	project := newProject(t, db, newOrg(t, db))
	busy, free := newSensor(t, db, project, nil), newSensor(t, db, project, nil)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, key := range []store.SensorKey{busy, free} {
		if _, err := insert(t.Context(), db, key, []store.Reading{{Time: at, InputIDs: []int64{1}, Values: []float64{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	writer, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(context.WithoutCancel(t.Context()))
	if _, err := writer.Exec(t.Context(), `SELECT FROM sensors WHERE id = $1 FOR NO KEY UPDATE`, busy.SensorID); err != nil {
		t.Fatal(err)
	}
	noOutputs := func(store.Sensor) store.Outputs { return nil }
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	done := 0
	for range 3 { // a round may stop at the busy sensor; the next goes on
		n, err := db.MaintainRollups(ctx, noOutputs, 10)
		if err != nil {
			t.Fatalf("MaintainRollups while a sensor is being written: %v", err)
		}
		done += n
	}
	if done != 1 {
		t.Errorf("recomputed %d hours while the other sensor was being written, want 1 (the free sensor's)", done)
	}
	if err := writer.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err := db.MaintainRollups(t.Context(), noOutputs, 10)
	if err != nil || n != 1 {
		t.Errorf("MaintainRollups after the write = %d, %v; want the busy sensor's 1 hour", n, err)
	}
}
