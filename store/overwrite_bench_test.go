package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkOverwrite compares the ways to store a batch of 1,000 readings
// of 10 inputs that may replace stored ones (issue 26), by PostgreSQL's
// CPU per reading, with commits that wait for the disk: the service's
// DELETE of the stored readings at the batch's instants, then its COPY
// (DeleteCopy; a batch after the newest stored reading skips the DELETE);
// the batch COPYed into a stage, a temporary table of the session, then
// INSERT … ON CONFLICT DO UPDATE from it (StagedUpsert), UPDATE … FROM it
// of the stored instants then an INSERT of the others (StagedUpdate), an
// UPDATE … FROM the batch's arrays then a COPY of the rest (ArrayUpdate),
// or MERGE from the stage (StagedMerge; TimescaleDB refuses it on
// readings, whose chunks compress, and the benchmark says so); DELETE +
// COPY and the array UPDATE again with the stored readings on pages
// filled to 70 % (…Fill70), where most UPDATEs are HOT (no new index
// entry). Each for three shapes of batch: every reading replacing
// one (Overwrite), the first half replacing and the second new (Mixed),
// and every reading new (New). Run it alone on the private cluster:
// PostgreSQL's CPU is the whole server's.
func BenchmarkOverwrite(b *testing.B) {
	const size = 1000
	ctx := context.Background()
	pool := storetest.NewDurablePool(b)
	db := store.New(pool)
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	readings := func(from, n int) []store.Reading {
		r := make([]store.Reading, n)
		for i := range r {
			values := make([]float64, len(ids))
			for k := range values {
				values[k] = float64(from+i)*1.37 + float64(k)
			}
			r[i] = store.Reading{Time: start.Add(time.Duration(from+i) * time.Second), InputIDs: ids, Values: values}
		}
		return r
	}
	strategies := []struct {
		name  string
		write func(tx pgx.Tx, sensorID int64, batch []store.Reading, overlaps bool) error
	}{
		{"DeleteCopy", func(tx pgx.Tx, sensorID int64, batch []store.Reading, overlaps bool) error {
			if overlaps {
				instants := make([]time.Time, len(batch))
				for i, r := range batch {
					instants[i] = r.Time
				}
				if _, err := tx.Exec(ctx, `SELECT delete_readings($1, $2, $3, $4)`, sensorID, batch[0].Time, batch[len(batch)-1].Time.Add(time.Microsecond), instants); err != nil {
					return err
				}
			}
			return store.CopyReadings(ctx, tx.Conn().PgConn(), sensorID, batch)
		}},
		{"StagedUpsert", func(tx pgx.Tx, sensorID int64, batch []store.Reading, _ bool) error {
			if err := stage(tx, batch); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
INSERT INTO readings AS r (sensor_id, datetime, input_ids, vals) SELECT $1, datetime, input_ids, vals FROM bench_stage
ON CONFLICT (sensor_id, datetime) DO UPDATE SET input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals`, sensorID)
			return err
		}},
		{"StagedUpdate", func(tx pgx.Tx, sensorID int64, batch []store.Reading, overlaps bool) error {
			if !overlaps {
				return store.CopyReadings(ctx, tx.Conn().PgConn(), sensorID, batch)
			}
			if err := stage(tx, batch); err != nil {
				return err
			}
			var updated int
			if err := tx.QueryRow(ctx, `
WITH u AS (
    UPDATE readings r SET input_ids = s.input_ids, vals = s.vals FROM bench_stage s
    WHERE r.sensor_id = $1 AND r.datetime = s.datetime AND r.datetime BETWEEN $2 AND $3
    RETURNING r.datetime
)
SELECT count(*) FROM u`, sensorID, batch[0].Time, batch[len(batch)-1].Time).Scan(&updated); err != nil {
				return err
			}
			if updated == len(batch) {
				return nil
			}
			_, err := tx.Exec(ctx, `
INSERT INTO readings (sensor_id, datetime, input_ids, vals)
SELECT $1, s.datetime, s.input_ids, s.vals FROM bench_stage s
WHERE NOT EXISTS (SELECT FROM readings r WHERE r.sensor_id = $1 AND r.datetime = s.datetime AND r.datetime BETWEEN $2 AND $3)`,
				sensorID, batch[0].Time, batch[len(batch)-1].Time)
			return err
		}},
		{"ArrayUpdate", func(tx pgx.Tx, sensorID int64, batch []store.Reading, overlaps bool) error {
			if !overlaps {
				return store.CopyReadings(ctx, tx.Conn().PgConn(), sensorID, batch)
			}
			times := make([]time.Time, len(batch))
			var values []float64
			for i, r := range batch {
				times[i] = r.Time
				values = append(values, r.Values...)
			}
			var updated int
			if err := tx.QueryRow(ctx, `
WITH u AS (
    UPDATE readings r SET input_ids = $3, vals = ($4::float8[])[c.i*10-9:c.i*10]
    FROM unnest($2::timestamptz[]) WITH ORDINALITY AS c(t, i)
    WHERE r.sensor_id = $1 AND r.datetime = c.t AND r.datetime BETWEEN $5 AND $6
    RETURNING r.datetime
)
SELECT count(*) FROM u`, sensorID, times, ids, values, batch[0].Time, batch[len(batch)-1].Time).Scan(&updated); err != nil {
				return err
			}
			if updated == len(batch) {
				return nil
			}
			// The rest are new: those after the stored ones, in this benchmark.
			return store.CopyReadings(ctx, tx.Conn().PgConn(), sensorID, batch[updated:])
		}},
		{"StagedMerge", func(tx pgx.Tx, sensorID int64, batch []store.Reading, _ bool) error {
			if err := stage(tx, batch); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
MERGE INTO readings r USING bench_stage s ON r.sensor_id = $1 AND r.datetime = s.datetime
AND r.datetime BETWEEN $2 AND $3
WHEN MATCHED THEN UPDATE SET input_ids = s.input_ids, vals = s.vals
WHEN NOT MATCHED THEN INSERT (sensor_id, datetime, input_ids, vals) VALUES ($1, s.datetime, s.input_ids, s.vals)`,
				sensorID, batch[0].Time, batch[len(batch)-1].Time)
			return err
		}},
	}
	// DELETE + COPY and the UPDATE again, on pages filled to 70 %: an
	// UPDATE that finds room for the new version on its page is a HOT
	// update, which adds no index entry.
	fillfactor := map[string]int{}
	for _, s := range strategies {
		if s.name == "DeleteCopy" || s.name == "ArrayUpdate" {
			s.name += "Fill70"
			fillfactor[s.name] = 70
			strategies = append(strategies, s)
		}
	}
	for _, shape := range []string{"Overwrite", "Mixed", "New"} {
		for _, s := range strategies {
			b.Run(fmt.Sprintf("%s/%s", shape, s.name), func(b *testing.B) {
				sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench", "", nil)
				if err != nil {
					b.Fatal(err)
				}
				// The stored readings: ten batches' worth for overwrites,
				// half a batch before a mixed batch.
				stored := 10 * size
				if shape != "Overwrite" {
					stored = size / 2
				}
				if f := fillfactor[s.name]; f > 0 {
					if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE readings SET (fillfactor = %d)`, f)); err != nil {
						b.Fatal(err)
					}
					defer pool.Exec(ctx, `ALTER TABLE readings RESET (fillfactor)`)
				}
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					return store.CopyReadings(ctx, tx.Conn().PgConn(), sensor.ID, readings(0, stored))
				}); err != nil {
					b.Fatal(err)
				}
				conn, err := pool.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Release()
				if _, err := conn.Exec(ctx, `CREATE TEMPORARY TABLE IF NOT EXISTS bench_stage (datetime timestamptz, input_ids bigint[], vals float8[]) ON COMMIT DELETE ROWS`); err != nil {
					b.Fatal(err)
				}
				pg := storetest.ServerCPU(b, pool)
				n := 0
				for b.Loop() {
					var batch []store.Reading
					switch shape {
					case "Overwrite":
						batch = readings(n%10*size, size)
					case "Mixed":
						batch = readings(stored-size/2, size)
					case "New":
						batch = readings(stored, size)
					}
					err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return s.write(tx, sensor.ID, batch, shape != "New") })
					if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "0A000" {
						// TimescaleDB refuses a MERGE that updates a
						// hypertable with compression.
						b.Skipf("%s: %v", s.name, err)
					}
					if err != nil {
						b.Fatal(err)
					}
					switch shape {
					case "Mixed":
						stored += size / 2
					case "New":
						stored += size
					}
					n++
				}
				b.ReportMetric(float64((storetest.ServerCPU(b, pool)-pg).Nanoseconds())/float64(b.N*size), "pg-cpu-ns/reading")
			})
		}
	}
}

// stage COPYs batch into the session's bench_stage.
func stage(tx pgx.Tx, batch []store.Reading) error {
	rows := make([][]any, len(batch))
	for i, r := range batch {
		rows[i] = []any{r.Time, r.InputIDs, r.Values}
	}
	_, err := tx.CopyFrom(context.Background(), pgx.Identifier{"bench_stage"}, []string{"datetime", "input_ids", "vals"}, pgx.CopyFromRows(rows))
	return err
}
