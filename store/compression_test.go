package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestCompressionMeetsAnOverwrite compresses a chunk while a batch that
// overwrites readings in it is half way through its transaction, the
// meeting that made valid POSTs answer 500 (deadlock detected): a small
// batch, which the lock's round trip upserts, and a large one, deleted and
// COPYed. The batch is held once its readings are written; then
// compress_chunk runs, and must wait for the batch; then the batch goes on.
//
// Before, the batch's first statement read the chunk (AccessShareLock),
// compress_chunk took the chunk (ExclusiveLock, which a reader does not
// stop) and asked to truncate it (AccessExclusiveLock, which waits for
// the reader), and the batch's DELETE asked to write the chunk
// (RowExclusiveLock, which waits for compress_chunk): a deadlock, and one
// of the two aborted. Now the batch's first lock on the chunk is the one
// to write it, so compress_chunk waits for the batch, and both succeed.
// The store's retry of a deadlock's victim is turned off here: no
// deadlock may happen at all.
func TestCompressionMeetsAnOverwrite(t *testing.T) {
	pool, db := newCompressionDB(t)
	db.SetTxAttempts(1)
	for i, size := range []int{3, store.UpsertMax + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			ctx := t.Context()
			at := time.Date(2024, 3, 4+28*i, 10, 0, 0, 0, time.UTC) // a chunk of its own
			reading := func(d time.Duration, v float64) store.Reading {
				return store.Reading{Time: at.Add(d), InputIDs: []int64{1}, Values: []float64{v}}
			}
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			mustInsert(t, db, key, reading(0, 1), reading(time.Minute, 2))
			chunk := chunkOf(t, pool, at)
			overwrite := make([]store.Reading, size)
			for i := range overwrite {
				overwrite[i] = reading(time.Duration(i)*time.Minute, float64(10*(i+1)))
			}

			written, release, batch := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				batch <- db.InTx(ctx, func(tx *store.Tx) error {
					w, err := tx.LockSensorWrite(ctx, key, overwrite)
					if err != nil {
						return err
					}
					if err := tx.RecordInputs(ctx, w, store.InputIDsOf(overwrite)); err != nil {
						return err
					}
					if _, err := tx.WriteReadings(ctx, w, overwrite); err != nil {
						return err
					}
					close(written)
					<-release
					return nil
				})
			}()
			select {
			case <-written:
			case err := <-batch:
				t.Fatalf("the batch ended (error %v) before it was held", err)
			}

			compressor := connect(t, pool)
			compressed := make(chan error, 1)
			go func() {
				_, err := compressor.Exec(ctx, `SELECT compress_chunk($1::regclass)`, chunk)
				compressed <- err
			}()
			watch := connect(t, pool)
			waitForLockWaitOf(t, watch, compressor.PgConn().PID(), compressed)
			select {
			case err := <-compressed:
				t.Errorf("compress_chunk ended (error %v) without waiting for the batch that wrote its chunk", err)
				compressed <- err
			default:
			}

			close(release)
			if err := <-batch; err != nil {
				t.Errorf("InsertReadings during compress_chunk: %v", err)
			}
			if err := <-compressed; err != nil {
				t.Errorf("compress_chunk during InsertReadings: %v", err)
			}
			if got := readAll(t, db, key); !equalReadings(got, overwrite) {
				t.Errorf("readings = %v, want %v", got, overwrite)
			}
			var isCompressed bool
			if err := watch.QueryRow(ctx, `SELECT is_compressed FROM timescaledb_information.chunks
WHERE format('%I.%I', chunk_schema, chunk_name) = $1`, chunk).Scan(&isCompressed); err != nil {
				t.Fatal(err)
			}
			if !isCompressed {
				t.Errorf("chunk %s is not compressed", chunk)
			}
		})
	}
}

// TestWritesWaitOnlyForTheirChunks holds a chunk as compress_chunk holds
// it for as long as it compresses (ExclusiveLock: compress_chunk_impl in
// TimescaleDB's tsl/src/compression/api.c), and makes each write of
// readings in another chunk: none may wait for it. Before, an overwrite,
// a file that overwrites and a range delete each ran a DELETE on the
// hypertable, which locks every chunk of it, and waited for the
// compression of a chunk they did not touch.
func TestWritesWaitOnlyForTheirChunks(t *testing.T) {
	ctx := t.Context()
	pool, db := newCompressionDB(t)
	compressing := time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC)
	at := time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC) // seven-day chunks: another one
	reading := func(t time.Time, v float64) store.Reading {
		return store.Reading{Time: t, InputIDs: []int64{1}, Values: []float64{v}}
	}
	writes := []struct {
		name  string
		write func(store.SensorKey) error
	}{
		{"InsertReadings/New", func(key store.SensorKey) error {
			_, err := insert(ctx, db, key, []store.Reading{reading(at.Add(time.Hour), 2)})
			return err
		}},
		{"InsertReadings/Overwrite", func(key store.SensorKey) error {
			_, err := insert(ctx, db, key, []store.Reading{reading(at, 2)})
			return err
		}},
		{"InsertReadings/OverwriteLarge", func(key store.SensorKey) error { // deleted and COPYed, not upserted
			batch := make([]store.Reading, store.UpsertMax+1)
			for i := range batch {
				batch[i] = reading(at.Add(time.Duration(i)*time.Second), 2)
			}
			_, err := insert(ctx, db, key, batch)
			return err
		}},
		{"InsertReadingStream/Overwrite", func(key store.SensorKey) error {
			_, err := insertStream(ctx, db, key, &sliceStream{readings: []store.Reading{reading(at, 2)}})
			return err
		}},
		{"InsertReadingStream/Staged", func(key store.SensorKey) error {
			stream := &sliceStream{readings: []store.Reading{reading(at.Add(time.Hour), 2), reading(at, 2)}}
			_, err := insertStream(ctx, db, key, stream)
			return err
		}},
		{"DeleteReadings", func(key store.SensorKey) error {
			_, err := deleteReadings(ctx, db, key, at, at.Add(time.Second))
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			mustInsert(t, db, key, reading(compressing, 1), reading(at, 1))
			hold := connect(t, pool)
			tx, err := hold.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `LOCK TABLE `+chunkOf(t, pool, compressing)+` IN EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.write(key) }()
			watch := connect(t, pool)
			for {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					return
				default:
				}
				if waiters := lockWaiters(t, watch); len(waiters) > 0 {
					t.Fatalf("%s in one chunk waits for the compression of another", w.name)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestReadingsParts checks the chunks that the deletes of readings find in
// TimescaleDB's catalog (readings_parts) against its public view, for
// ranges inside, across and outside the chunks; on a plain table the one
// part is readings itself.
func TestReadingsParts(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	day := func(d int) time.Time { return time.Date(2024, 3, d, 0, 0, 0, 0, time.UTC) }
	var readings []store.Reading
	for d := 1; d <= 31; d += 3 {
		readings = append(readings, store.Reading{Time: day(d), InputIDs: []int64{1}, Values: []float64{float64(d)}})
	}
	mustInsert(t, db, key, readings...)
	mode, _, err := db.StorageMode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ranges := []struct{ lo, hi time.Time }{
		{day(5), day(5).Add(time.Hour)},
		{day(5), day(20)},
		{day(1).AddDate(0, 0, -30), day(1)},
		{day(1).AddDate(0, 0, -30), day(1).Add(time.Microsecond)},
		{day(31), day(31).AddDate(1, 0, 0)},
		{day(31).AddDate(1, 0, 0), day(31).AddDate(2, 0, 0)},
		{store.MinTime, store.MaxTime},
	}
	for _, r := range ranges {
		want := []string{"readings"}
		if mode == store.TimescaleDB {
			want = chunksBetween(t, pool, r.lo, r.hi)
		}
		rows, _ := pool.Query(ctx, `SELECT readings_parts($1, $2)`, r.lo, r.hi)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("readings_parts(%s, %s) = %v, want %v", r.lo, r.hi, got, want)
		}
	}
}

// newCompressionDB returns a store on a fresh database where readings are
// a hypertable, with its compression policy unscheduled: only the test
// compresses its chunks. It skips the test on a run of plain PostgreSQL.
func newCompressionDB(t *testing.T) (*pgxpool.Pool, *store.DB) {
	t.Helper()
	pool := storetest.NewPool(t)
	requireMode(t, pool, store.TimescaleDB)
	_, err := pool.Exec(t.Context(), `SELECT alter_job(job_id, scheduled => false) FROM timescaledb_information.jobs
WHERE proc_name = 'policy_compression' AND hypertable_name = 'readings'`)
	if err != nil {
		t.Fatal(err)
	}
	return pool, store.New(pool)
}

// chunkOf names the chunk of readings that holds at.
func chunkOf(t *testing.T, pool *pgxpool.Pool, at time.Time) string {
	t.Helper()
	chunks := chunksBetween(t, pool, at, at.Add(time.Microsecond))
	if len(chunks) != 1 {
		t.Fatalf("chunks of %s: %v", at, chunks)
	}
	return chunks[0]
}

// chunksBetween names the chunks of readings that hold instants from lo
// to hi (exclusive), as TimescaleDB's public view lists them.
func chunksBetween(t *testing.T, pool *pgxpool.Pool, lo, hi time.Time) []string {
	t.Helper()
	rows, _ := pool.Query(t.Context(), `
SELECT format('%I.%I', chunk_schema, chunk_name) FROM timescaledb_information.chunks
WHERE hypertable_schema = current_schema() AND hypertable_name = 'readings' AND range_start < $2 AND range_end > $1
ORDER BY range_start`, lo, hi)
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

// connect opens a connection of its own to the pool's database, closed
// when the test ends, for a session the test holds apart from the store's.
func connect(t *testing.T, pool *pgxpool.Pool) *pgx.Conn {
	t.Helper()
	conn, err := pgx.ConnectConfig(t.Context(), pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// lockWaiters returns the sessions of the database that wait for a lock.
func lockWaiters(t *testing.T, conn *pgx.Conn) []uint32 {
	t.Helper()
	rows, _ := conn.Query(t.Context(), `
SELECT pid::bigint FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(pids))
	for i, p := range pids {
		out[i] = uint32(p)
	}
	return out
}

// waitForLockWaitOf waits until session pid waits for a lock, or its
// statement is done, with done its outcome, which it then puts back.
func waitForLockWaitOf(t *testing.T, watch *pgx.Conn, pid uint32, done chan error) {
	t.Helper()
	for !slices.Contains(lockWaiters(t, watch), pid) {
		select {
		case err := <-done:
			done <- err
			return
		default:
		}
		time.Sleep(time.Millisecond)
	}
}
