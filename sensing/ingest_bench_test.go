package sensing_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkIngest stores batches of 1,000 readings of 10 inputs, as a
// POST does, through the pipeline: new ones (check, lock, queue, COPY,
// rules, latest, commit), and the same again over themselves (lock, queue
// and DELETE a chunk of readings at a time, COPY, rules, latest, commit).
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	db := store.New(storetest.NewPool(b))
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	key := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	batch := func(n int) []store.Reading {
		readings := make([]store.Reading, 1000)
		for i := range readings {
			r := store.Reading{Time: start.Add(time.Duration(n*len(readings)+i) * time.Second)}
			for k := int64(1); k <= 10; k++ {
				r.InputIDs = append(r.InputIDs, k)
				r.Values = append(r.Values, float64(i)*1.37+float64(k))
			}
			readings[i] = r
		}
		return readings
	}
	written := 0 // batches stored so far, each at instants of its own
	for _, overwrite := range []bool{false, true} {
		name := "New"
		if overwrite {
			name = "Overwrite"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				if !overwrite {
					n = written
				} else if n >= written {
					n = 0
				}
				readings := batch(n)
				b.StartTimer()
				got, err := core.Ingest(ctx, key, sensing.NewBatch(readings))
				if err != nil {
					b.Fatal(err)
				}
				if overwrite && got.Replaced != len(readings) {
					b.Fatalf("replaced %d readings of %d", got.Replaced, len(readings))
				}
				if n == written {
					written++
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
		})
	}
}
