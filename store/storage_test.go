package store_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

const day = 24 * time.Hour

// storageState is what ConfigureStorage sets, read back from TimescaleDB:
// 0 for a policy that does not exist.
type storageState struct {
	ChunkInterval, CompressAfter, Retention time.Duration
	CompressJob, RetentionJob               int64
	SegmentBy, OrderBy                      string
}

func readStorageState(t *testing.T, pool *pgxpool.Pool) storageState {
	t.Helper()
	ctx := t.Context()
	var (
		s     storageState
		chunk int64
	)
	err := pool.QueryRow(ctx, `
SELECT extract(epoch FROM time_interval)::bigint FROM timescaledb_information.dimensions
WHERE hypertable_name = 'readings' AND column_name = 'datetime'`).Scan(&chunk)
	if err != nil {
		t.Fatal(err)
	}
	s.ChunkInterval = time.Duration(chunk) * time.Second
	for _, job := range []struct {
		proc, key string
		after     *time.Duration
		id        *int64
	}{
		{"policy_compression", "compress_after", &s.CompressAfter, &s.CompressJob},
		{"policy_retention", "drop_after", &s.Retention, &s.RetentionJob},
	} {
		var after int64
		err := pool.QueryRow(ctx, `
SELECT coalesce(max(job_id), 0), coalesce(max(extract(epoch FROM (config->>$2)::interval)::bigint), 0), count(*)
FROM timescaledb_information.jobs WHERE proc_name = $1 AND hypertable_name = 'readings'
HAVING count(*) <= 1`, job.proc, job.key).Scan(job.id, &after, new(int64))
		if err != nil {
			t.Fatalf("%s jobs (at most one): %v", job.proc, err)
		}
		*job.after = time.Duration(after) * time.Second
	}
	err = pool.QueryRow(ctx, `
SELECT coalesce(segmentby, ''), coalesce(orderby, '') FROM timescaledb_information.hypertable_compression_settings
WHERE hypertable = 'readings'::regclass`).Scan(&s.SegmentBy, &s.OrderBy)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConfigureStorage applies storage settings in turn to the hypertable
// the migrations made, and reads back what TimescaleDB holds after each:
// settings applied again change nothing (the same jobs stay), changed
// ones are applied, a policy set to 0 is removed. Compression always
// segments by sensor and orders by datetime ascending.
func TestConfigureStorage(t *testing.T) {
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	steps := []struct {
		name      string
		cfg       store.StorageConfig
		unchanged bool // the jobs of the step before stay
	}{
		{name: "Defaults", cfg: store.StorageConfig{ChunkInterval: 7 * day, CompressAfter: 7 * day}},
		{name: "DefaultsAgain", cfg: store.StorageConfig{ChunkInterval: 7 * day, CompressAfter: 7 * day}, unchanged: true},
		{name: "Changed", cfg: store.StorageConfig{ChunkInterval: day, CompressAfter: 2 * day, Retention: 30 * day}},
		{name: "ChangedAgain", cfg: store.StorageConfig{ChunkInterval: day, CompressAfter: 2 * day, Retention: 30 * day}, unchanged: true},
		{name: "PoliciesOff", cfg: store.StorageConfig{ChunkInterval: 12 * time.Hour}},
		{name: "PoliciesOffAgain", cfg: store.StorageConfig{ChunkInterval: 12 * time.Hour}, unchanged: true},
		{name: "PoliciesBack", cfg: store.StorageConfig{ChunkInterval: 7 * day, CompressAfter: 30 * day, Retention: 365 * day}},
	}
	var before storageState
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			var logs bytes.Buffer
			if err := store.ConfigureStorage(t.Context(), pool, step.cfg, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			got := readStorageState(t, pool)
			want := storageState{
				ChunkInterval: step.cfg.ChunkInterval, CompressAfter: step.cfg.CompressAfter, Retention: step.cfg.Retention,
				CompressJob: got.CompressJob, RetentionJob: got.RetentionJob,
				SegmentBy: "sensor_id", OrderBy: "datetime",
			}
			if step.unchanged {
				want.CompressJob, want.RetentionJob = before.CompressJob, before.RetentionJob
				if changed := strings.Contains(logs.String(), "changed"); changed {
					t.Errorf("settings applied again logged a change:\n%s", logs.String())
				}
			}
			if got != want {
				t.Errorf("storage after ConfigureStorage(%+v) = %+v, want %+v", step.cfg, got, want)
			}
			before = got
		})
	}
}

// TestConfigureStorageConcurrently starts replicas' worth of
// ConfigureStorage at once: they take turns, and the policies exist once.
func TestConfigureStorageConcurrently(t *testing.T) {
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	cfg := store.StorageConfig{ChunkInterval: 3 * day, CompressAfter: 10 * day, Retention: 400 * day}
	errs := make(chan error)
	for range 3 {
		go func() { errs <- store.ConfigureStorage(t.Context(), pool, cfg, slog.New(slog.DiscardHandler)) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	got := readStorageState(t, pool)
	if got.ChunkInterval != cfg.ChunkInterval || got.CompressAfter != cfg.CompressAfter || got.Retention != cfg.Retention {
		t.Errorf("storage = %+v, want %+v", got, cfg)
	}
}

// TestConfigureStoragePlain checks that on a plain readings table the
// settings change nothing and the service says so.
func TestConfigureStoragePlain(t *testing.T) {
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.PostgreSQL)
	var logs bytes.Buffer
	cfg := store.StorageConfig{ChunkInterval: day, CompressAfter: day, Retention: 30 * day}
	if err := store.ConfigureStorage(t.Context(), pool, cfg, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "not applied: readings are a plain table") {
		t.Errorf("ConfigureStorage logged:\n%s\nwant it to say the settings were not applied", logs.String())
	}
	if mode, _, err := store.New(pool).StorageMode(t.Context()); err != nil || mode != store.PostgreSQL {
		t.Errorf("StorageMode = %s, %v after ConfigureStorage, want %s", mode, err, store.PostgreSQL)
	}
}

// TestConfigureStorageConverts makes readings a plain table on a server
// with TimescaleDB preloaded, the state of a database migrated before the
// preload was added, and checks that ConfigureStorage makes it a
// hypertable with its rows and the service's settings.
func TestConfigureStorageConverts(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	for _, sql := range []string{
		`ALTER TABLE readings RENAME TO readings_hypertable`,
		`ALTER INDEX readings_pkey RENAME TO readings_hypertable_pkey`,
		`CREATE TABLE readings (LIKE readings_hypertable INCLUDING ALL)`,
		`INSERT INTO readings SELECT 1, t, '{1}', '{1}' FROM generate_series('2024-01-01'::timestamptz, '2024-03-01', '1 hour') t`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	db := store.New(pool)
	if mode, _, err := db.StorageMode(ctx); err != nil || mode != store.PostgreSQL {
		t.Fatalf("StorageMode = %s, %v before ConfigureStorage, want %s", mode, err, store.PostgreSQL)
	}
	cfg := store.StorageConfig{ChunkInterval: 7 * day, CompressAfter: 7 * day}
	if err := store.ConfigureStorage(ctx, pool, cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if mode, _, err := db.StorageMode(ctx); err != nil || mode != store.TimescaleDB {
		t.Fatalf("StorageMode = %s, %v after ConfigureStorage, want %s", mode, err, store.TimescaleDB)
	}
	var rows, chunks int
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM readings), (SELECT count(*) FROM show_chunks('readings'))`).Scan(&rows, &chunks)
	if err != nil {
		t.Fatal(err)
	}
	if want := 60*24 + 1; rows != want || chunks < 8 {
		t.Errorf("readings after the conversion: %d rows in %d chunks, want %d in at least 8", rows, chunks, want)
	}
	got := readStorageState(t, pool)
	want := storageState{ChunkInterval: cfg.ChunkInterval, CompressAfter: cfg.CompressAfter, CompressJob: got.CompressJob, SegmentBy: "sensor_id", OrderBy: "datetime"}
	if got != want {
		t.Errorf("storage = %+v, want %+v", got, want)
	}
}

// TestCompressedChunk compresses the chunks that hold a sensor's readings,
// as the policy does, and checks that they read back the same, then take
// an overwrite, a new reading and a range delete like any other, and that
// the latest value follows.
func TestCompressedChunk(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	db := store.New(pool)
	sensor, key := newPlainSensor(t, db)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	hour := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	var want []store.Reading // ascending
	for h := range 24 * 20 {
		want = append(want, store.Reading{Time: hour(h), InputIDs: []int64{1, 2}, Values: []float64{float64(h), -float64(h) / 3}})
	}
	if _, err := insert(ctx, db, key, want); err != nil {
		t.Fatal(err)
	}
	var compressed int
	err := pool.QueryRow(ctx, `SELECT count(compress_chunk(c)) FROM show_chunks('readings') c`).Scan(&compressed)
	if err != nil {
		t.Fatal(err)
	}
	var uncompressed int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM timescaledb_information.chunks WHERE hypertable_name = 'readings' AND NOT is_compressed`).Scan(&uncompressed)
	if err != nil {
		t.Fatal(err)
	}
	if compressed < 3 || uncompressed != 0 {
		t.Fatalf("%d chunks compressed, %d not, want at least 3 and none", compressed, uncompressed)
	}

	check := func(t *testing.T) {
		t.Helper()
		for _, desc := range []bool{false, true} {
			var got []store.Reading
			err := db.ListReadings(ctx, sensor, store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Desc: desc}, func(r *store.Reading) error {
				got = append(got, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if desc {
				w = slices.Clone(want)
				slices.Reverse(w)
			}
			if len(got) != len(w) {
				t.Fatalf("read %d readings (desc %v), want %d", len(got), desc, len(w))
			}
			for i := range got {
				if g, w := describe(&got[i]), describe(&w[i]); g != w {
					t.Fatalf("reading %d (desc %v) = %s, want %s", i, desc, g, w)
				}
			}
		}
		latest, _, err := db.LatestReadings(ctx, key.OrgID, key.ProjectID, 0, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := describe(latest[0].Reading), describe(&want[len(want)-1]); g != w {
			t.Errorf("latest = %s, want %s", g, w)
		}
	}
	t.Run("ReadBack", check)
	t.Run("Overwrite", func(t *testing.T) {
		batch := []store.Reading{
			{Time: hour(5), InputIDs: []int64{3}, Values: []float64{55}},                        // over a stored one
			{Time: hour(5).Add(30 * time.Minute), InputIDs: []int64{1}, Values: []float64{5.5}}, // between two
			{Time: hour(24*20 - 1), InputIDs: []int64{1, 3}, Values: []float64{-1, 1}},          // over the newest
		}
		if _, err := insert(ctx, db, key, batch); err != nil {
			t.Fatal(err)
		}
		want[5] = batch[0]
		want = slices.Insert(want, 6, batch[1])
		want[len(want)-1] = batch[2]
		check(t)
	})
	t.Run("DeleteRange", func(t *testing.T) {
		deleted, err := deleteReadings(ctx, db, key, hour(24*3), hour(24*10))
		if err != nil {
			t.Fatal(err)
		}
		if deleted != 24*7 {
			t.Errorf("deleted %d readings, want %d", deleted, 24*7)
		}
		want = slices.DeleteFunc(want, func(r store.Reading) bool {
			return !r.Time.Before(hour(24*3)) && r.Time.Before(hour(24*10))
		})
		check(t)
	})
	t.Run("DeleteNewest", func(t *testing.T) {
		if _, err := deleteReadings(ctx, db, key, hour(24*19), store.MaxTime); err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(r store.Reading) bool { return !r.Time.Before(hour(24 * 19)) })
		check(t)
	})
}

var storageConfigTests = []struct {
	name string
	c    store.StorageConfig
	ok   bool
}{
	{"Day", store.StorageConfig{ChunkInterval: 24 * time.Hour, CompressAfter: 7 * 24 * time.Hour}, true},
	{"ChunkUnderAnHour", store.StorageConfig{ChunkInterval: time.Minute}, false},
	{"NegativeCompressAfter", store.StorageConfig{ChunkInterval: time.Hour, CompressAfter: -time.Hour}, false},
	{"NegativeRetention", store.StorageConfig{ChunkInterval: time.Hour, Retention: -time.Hour}, false},
	{"RetentionUnderAChunk", store.StorageConfig{ChunkInterval: 24 * time.Hour, Retention: time.Hour}, false},
	{"RetentionOfChunks", store.StorageConfig{ChunkInterval: 24 * time.Hour, Retention: 30 * 24 * time.Hour}, true},
}

func TestStorageConfig_Validate(t *testing.T) {
	for _, tt := range storageConfigTests {
		if err := tt.c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
