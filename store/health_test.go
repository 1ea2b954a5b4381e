package store_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestStorageMode checks that the tests run on the storage mode they were
// asked for (make test runs the suite on each the machine offers), and what
// the service says of it at start: where TimescaleDB is installed but not
// preloaded, a plain table and one warning that says how to get a
// hypertable.
func TestStorageMode(t *testing.T) {
	ctx := t.Context()
	db := store.New(storetest.NewPool(t))
	mode, available, err := db.StorageMode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := storetest.Storage(); want != "" && mode != want {
		t.Fatalf("StorageMode = %s, want %s (TEST_STORAGE)", mode, want)
	}
	t.Logf("storage mode %s, TimescaleDB available on the server: %v", mode, available)

	var logs bytes.Buffer
	if err := db.LogStorageMode(ctx, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "shared_preload_libraries")
	if got, want := warned, mode == store.PostgreSQL && available; got != want {
		t.Errorf("warned about the missing preload = %v, want %v; logged:\n%s", got, want, logs.String())
	}
}

// TestHypertable checks the hypertable the migrations make on TimescaleDB:
// no index beyond the primary key, compressed by sensor.
func TestHypertable(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	var indexes []string
	rows, err := pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'readings' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(indexes, ","), "readings_pkey"; got != want {
		t.Errorf("indexes on readings = %s, want only %s", got, want)
	}
	var segmentBy string
	err = pool.QueryRow(ctx, `
SELECT attname FROM timescaledb_information.compression_settings
WHERE hypertable_name = 'readings' AND segmentby_column_index = 1`).Scan(&segmentBy)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := segmentBy, "sensor_id"; got != want {
		t.Errorf("compression segments by %s, want %s", got, want)
	}
}

// requireMode skips the test, saying why, unless readings are stored as
// want; it fails it where the run was asked for want (TEST_STORAGE) and
// did not get it.
func requireMode(t *testing.T, pool *pgxpool.Pool, want store.StorageMode) {
	t.Helper()
	mode, _, err := store.New(pool).StorageMode(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if mode == want {
		return
	}
	if storetest.Storage() == want {
		t.Fatalf("StorageMode = %s on a %s test run", mode, want)
	}
	t.Skipf("readings are stored as %s on this run; this test belongs to the %s run", mode, want)
}

// TestReadiness: a migrated database is ready, at the last migration, in
// the storage mode the tests run on; the pool reports its state; the
// operator's figures read.
func TestReadiness(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	r, err := db.Readiness(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mode, _, err := db.StorageMode(ctx)
	if err != nil || r.Pending || r.Version < 49 || r.Storage != mode {
		t.Errorf("Readiness = %+v (%v), want no migration pending, at 49 or later, in mode %s", r, err, mode)
	}
	if s := db.PoolStats(); s.Max != pool.Config().MaxConns || s.Total < 1 || s.Acquires < 1 {
		t.Errorf("PoolStats = %+v, want the pool's limit of %d and the connections opened", s, pool.Config().MaxConns)
	}
	ops, err := db.OpsStats(ctx)
	if err != nil || ops.RollupQueue != 0 || ops.OverdueLag != 0 || len(ops.WebhookBacklog) != 0 {
		t.Errorf("OpsStats of an empty database = %+v, %v; want nothing queued, due or pending", ops, err)
	}
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	mustInsert(t, db, key, one(0, 1), store.Reading{Time: at(0).Add(time.Hour), InputIDs: []int64{1}, Values: []float64{2}})
	if ops, err := db.OpsStats(ctx); err != nil || ops.RollupQueue != 2 {
		t.Errorf("OpsStats after a write of two hours: rollup queue %d, %v; want 2", ops.RollupQueue, err)
	}
}
