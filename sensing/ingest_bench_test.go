package sensing_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkIngest stores batches of readings of 10 inputs through the
// pipeline, of 1,000 readings (the bench's POSTs) and of 10 (a logger's), with commits that wait for the disk as the service's do: new
// ones (check, lock, queue, COPY, rules, latest, commit), and the same
// again over themselves (the deletes of a chunk of readings at a time, then
// the COPY). RawCopy is the yardstick: the same batches COPYed in a
// transaction of their own (store.CopyReadings), with no lock, queue or
// latest value. Beside the time, each reports the CPU per reading of this
// process (the pipeline's Go side, no HTTP or JSON) and of PostgreSQL
// (storetest.ServerCPU): the figures that hold on a shared machine. Run it
// alone on the private cluster: PostgreSQL's CPU is the whole server's.
func BenchmarkIngest(b *testing.B) {
	for _, size := range []int{1000, 10} {
		b.Run(fmt.Sprintf("Batch%d", size), func(b *testing.B) { benchmarkIngest(b, size) })
	}
}

func benchmarkIngest(b *testing.B, size int) {
	ctx := context.Background()
	pool := storetest.NewDurablePool(b)
	db := store.New(pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	newKey := func() store.SensorKey {
		sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench", "", nil)
		if err != nil {
			b.Fatal(err)
		}
		return store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
	}
	key, raw := newKey(), newKey()
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	values := make([][]float64, size)
	for i := range values {
		for k := range ids {
			values[i] = append(values[i], float64(i)*1.37+float64(k))
		}
	}
	// batch is the n-th batch of size readings, each at instants of its
	// own; its inputs are shared, which no write changes.
	batch := func(n int) []store.Reading {
		readings := make([]store.Reading, size)
		for i := range readings {
			t := start.Add(time.Duration(n*size+i) * time.Second)
			readings[i] = store.Reading{Time: t, InputIDs: ids, Values: values[i]}
		}
		return readings
	}
	// measure runs write on batch after batch, and reports the CPU per
	// reading of this process and of PostgreSQL.
	measure := func(b *testing.B, write func(n int) error) {
		b.ReportAllocs()
		cpu, pg := batchtest.ProcessCPU(b), storetest.ServerCPU(b, pool)
		n := 0
		for b.Loop() {
			if err := write(n); err != nil {
				b.Fatal(err)
			}
			n++
		}
		readings := float64(b.N * size)
		pgCPU := storetest.ServerCPU(b, pool) - pg
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/readings, "ns/reading")
		b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/readings, "cpu-ns/reading")
		b.ReportMetric(float64(pgCPU.Nanoseconds())/readings, "pg-cpu-ns/reading")
	}

	copied, written := 0, 0 // batches stored so far, each at instants of its own
	b.Run("RawCopy", func(b *testing.B) {
		measure(b, func(int) error {
			copied++
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return store.CopyReadings(ctx, tx.Conn().PgConn(), raw.SensorID, batch(copied))
			})
		})
	})
	b.Run("New", func(b *testing.B) {
		measure(b, func(int) error {
			_, err := core.Ingest(ctx, key, sensing.NewBatch(batch(written)))
			written++
			return err
		})
	})
	b.Run("Overwrite", func(b *testing.B) {
		measure(b, func(n int) error {
			readings := batch(n % written)
			got, err := core.Ingest(ctx, key, sensing.NewBatch(readings))
			if err == nil && got.Replaced != len(readings) {
				b.Fatalf("replaced %d readings of %d", got.Replaced, len(readings))
			}
			return err
		})
	})
}
