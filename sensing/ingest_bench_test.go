package sensing_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// BenchmarkIngestRateRule stores batches of 1,000 noisy readings a second
// apart through the pipeline, to a sensor without rules and to one whose
// output p has a rate rule over the last hour, as row 11e of make bench
// does (Quiet: changing level at a few % of the readings; Flapping: at
// 40 %), reporting the CPU per reading of this process and of
// PostgreSQL: what the rule adds is the difference. QuietTwoReplicas
// writes the quiet rule's batches through two services in turn, as a
// balancer that spread a token over two replicas would: neither holds the
// window its write needs, which it reads back from the readings.
func BenchmarkIngestRateRule(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewDurablePool(b)
	db := store.New(pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	replicas := []*sensing.Service{core, sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})}
	f := newFixture(b, db)
	const size = 1000
	rng := rand.New(rand.NewPCG(1, 1))
	values := make([][]float64, 50*size)
	for i := range values {
		values[i] = []float64{rng.Float64() * 1000, 1}
	}
	for _, rule := range []struct {
		name      string
		threshold float64 // of p = 2 u, per day over the hour; 0: no rule
		replicas  int
	}{{"None", 0, 1}, {"Quiet", 2 * 21000, 1}, {"Flapping", 2 * 5000, 1}, {"QuietTwoReplicas", 2 * 21000, 2}} {
		b.Run(rule.name, func(b *testing.B) {
			key := newBlueprintSensor(b, db, f, rule.name)
			if rule.threshold > 0 {
				spec := store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: rule.threshold, Persistence: 1, Window: 3600, Per: 86400}
				if _, err := core.CreateAlarmRule(ctx, key.SensorKey, spec); err != nil {
					b.Fatal(err)
				}
			}
			ids := []int64{key.u, key.i}
			n := 0
			batch := func() []store.Reading {
				readings := make([]store.Reading, size)
				for i := range readings {
					k := n*size + i
					readings[i] = store.Reading{Time: minute(0).Add(time.Duration(k) * time.Second), InputIDs: ids, Values: values[k%len(values)]}
				}
				n++
				return readings
			}
			for range 4 { // a full window kept
				if _, err := core.Ingest(ctx, key.SensorKey, sensing.NewBatch(batch())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			cpu, pg := batchtest.ProcessCPU(b), storetest.ServerCPU(b, pool)
			for b.Loop() {
				if _, err := replicas[n%rule.replicas].Ingest(ctx, key.SensorKey, sensing.NewBatch(batch())); err != nil {
					b.Fatal(err)
				}
			}
			readings := float64(b.N * size)
			b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/readings, "cpu-ns/reading")
			b.ReportMetric(float64((storetest.ServerCPU(b, pool)-pg).Nanoseconds())/readings, "pg-cpu-ns/reading")
		})
	}
}

// blueprintKey is a sensor of the fixture's power blueprint, with the
// ids of its inputs u and i.
type blueprintKey struct {
	store.SensorKey
	u, i int64
}

func newBlueprintSensor(tb testing.TB, db *store.DB, f fixture, name string) blueprintKey {
	tb.Helper()
	ctx := context.Background()
	bp, err := db.GetBlueprint(ctx, f.key.OrgID, *f.sensor.BlueprintID)
	if err != nil {
		tb.Fatal(err)
	}
	inst, err := bp.Instantiate(nil)
	if err != nil {
		tb.Fatal(err)
	}
	sensor, err := db.CreateSensor(ctx, f.key.OrgID, f.project.ID, name, "", &store.Attachment{BlueprintID: bp.ID, Instance: inst})
	if err != nil {
		tb.Fatal(err)
	}
	return blueprintKey{store.SensorKey{OrgID: f.key.OrgID, ProjectID: f.project.ID, SensorID: sensor.ID}, sensor.Instance.Inputs[0].ID, sensor.Instance.Inputs[1].ID}
}
