package sensing_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// openReplica opens a pool of a replica of its own on the database of url.
func openReplica(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(t.Context(), url, store.PoolConfig{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newCore is the domain on db, with the service's default checks.
func newCore(db *store.DB) *sensing.Service {
	return sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour})
}

// Two replicas maintaining the rollups at once recompute each queued hour
// once between them: the queue's rows are locked FOR UPDATE SKIP LOCKED.
func TestRollupsOnce(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	a, b := store.New(pool), store.New(openReplica(t, url))
	key := newFixture(t, a).plain
	const hours = 200
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	readings := make([]store.Reading, 0, hours*6)
	for i := range hours * 6 {
		readings = append(readings, store.Reading{Time: start.Add(time.Duration(i) * 10 * time.Minute), InputIDs: []int64{1}, Values: []float64{float64(i)}})
	}
	// As a file, whose hours are queued for the maintainer.
	if _, err := newCore(a).Ingest(t.Context(), key, &sliceSource{readings: readings}); err != nil {
		t.Fatal(err)
	}
	done := make([]int, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, db := range []*store.DB{a, b} {
		core := newCore(db)
		wg.Go(func() {
			for {
				n, err := core.RecomputeRollups(t.Context())
				done[i] += n
				if err != nil || n == 0 {
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
func TestRollupsSkipASensorBeingWritten(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	pool := openReplica(t, url)
	db := store.New(pool)
	core := newCore(db)
	f := newFixture(t, db)
	busy, free := f.plain, f.key
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	// As files, whose hours are queued for the maintainer.
	for _, w := range []struct {
		key store.SensorKey
		id  int64
	}{{busy, 1}, {free, f.u()}} {
		if _, err := core.Ingest(t.Context(), w.key, &sliceSource{readings: []store.Reading{{Time: at, InputIDs: []int64{w.id}, Values: []float64{1}}}}); err != nil {
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
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	done := 0
	for range 3 { // a round may stop at the busy sensor; the next goes on
		n, err := core.RecomputeRollups(ctx)
		if err != nil {
			t.Fatalf("RecomputeRollups while a sensor is being written: %v", err)
		}
		done += n
	}
	if done != 1 {
		t.Errorf("recomputed %d hours while the other sensor was being written, want 1 (the free sensor's)", done)
	}
	if err := writer.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, err := core.RecomputeRollups(t.Context())
	if err != nil || n != 1 {
		t.Errorf("RecomputeRollups after the write = %d, %v; want the busy sensor's 1 hour", n, err)
	}
}

// The maintainer leaves an hour a write queued until no write has queued
// it for an interval, but takes at once the hours an edit of the formulas
// queued for their outputs alone.
func TestRollupsSettle(t *testing.T) {
	t.Parallel()
	core, db := newService(t)
	f := newFixture(t, db)
	ctx := t.Context()
	reading := store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 2}}
	// As a file, whose hours are queued for the maintainer.
	if _, err := core.Ingest(ctx, f.key, &sliceSource{readings: []store.Reading{reading}}); err != nil {
		t.Fatal(err)
	}
	// Hours that wait to settle are not hours left at the round's limits:
	// the maintainer would go round again at once, and again.
	if n, more, err := core.RecomputeSettledRollups(ctx, time.Hour); err != nil || n != 0 || more {
		t.Errorf("hours recomputed right after the write, settling for 1h = %d (more %t), %v; want 0, none left for now", n, more, err)
	}
	if n, err := core.RecomputeRollups(ctx); err != nil || n != 1 {
		t.Fatalf("RecomputeRollups = %d, %v; want the 1 hour written", n, err)
	}
	if _, err := core.UpdateSensor(ctx, f.key, sensing.SensorEdit{BlueprintID: f.sensor.BlueprintID, Constants: map[string]float64{"k": 3}}); err != nil {
		t.Fatal(err)
	}
	if n, more, err := core.RecomputeSettledRollups(ctx, time.Hour); err != nil || n != 1 || more {
		t.Errorf("hours recomputed right after an edit of the formulas, settling for 1h = %d (more %t), %v; want its 1 hour, none left", n, more, err)
	}
}
