package sensing

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
)

// BenchmarkEvaluateRate is the Go side of a rate rule alone, without
// PostgreSQL: batches of 1,000 noisy readings a second apart evaluated
// against one rate rule over the last hour (as BenchmarkIngestRateRule and
// row 11e), starting each from the window the last one left held in
// memory (heldWindows), as a service does that wrote the sensor last, and
// coalescing its events. Never: a threshold no reading crosses (the
// evaluation alone); Quiet: row 11e's, changing level at a few % of the
// readings; Flapping: row 11e2's, at 40 %. It reports the process's CPU
// per reading, the collector's included, which other processes on a
// shared machine do not move as they move the time.
func BenchmarkEvaluateRate(b *testing.B) {
	for _, bench := range []struct {
		name      string
		threshold float64 // of p = 2 u, per day over the hour
	}{{"Never", math.MaxFloat64}, {"Quiet", 2 * 21000}, {"Flapping", 2 * 5000}} {
		b.Run(bench.name, func(b *testing.B) {
			s := New(nil, slog.New(slog.DiscardHandler), Config{})
			sensor := store.Sensor{ID: 1, Instance: &store.Instance{Version: 1,
				Inputs:  []store.InstanceInput{{ID: 1, Key: "u"}, {ID: 2, Key: "i"}},
				Outputs: []store.InstanceOutput{{ID: 3, Key: "p", Formula: "u * i * 2"}}}}
			rule := store.AlarmRule{ID: 1, TargetID: 3, TargetKey: "p", LevelID: 1, LevelName: "Alert",
				Rule: alarms.Rule{Rank: 1, Threshold: bench.threshold, Persistence: 1}, Window: 3600, Per: 86400}
			// The batches' readings and the outputs their rollups computed,
			// 50 of them in turn, moved to each batch's instants.
			const size = 1000
			rng := rand.New(rand.NewPCG(1, 1))
			var batches [50]struct {
				readings []store.Reading
				pre      *batchOutputs
			}
			outputs := s.outputsOf(sensor, nil)
			for k := range batches {
				readings := make([]store.Reading, size)
				for i := range readings {
					readings[i] = store.Reading{InputIDs: []int64{1, 2}, Values: []float64{rng.Float64() * 1000, 1}}
				}
				batches[k].readings = readings
				batches[k].pre = newBatchOutputs(readings, outputs, []store.AlarmRule{rule}, nil)
				for i := range readings {
					outputs.Compute(&readings[i])
					batches[k].pre.record(i, outputs)
				}
			}
			var (
				newest  *time.Time
				changes int
				n       int
			)
			start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
			step := func() {
				batch := &batches[n%len(batches)]
				for i := range batch.readings {
					batch.readings[i].Time = start.Add(time.Duration(n*size+i) * time.Second)
				}
				n++
				rules := []store.AlarmRule{rule}
				_, events, err := s.evaluate(context.Background(), nil, sensor, rules, batch.readings, newest, windowsAt{through: newest}, nil, batch.pre)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range events {
					changes += 1 + e.Coalesced
				}
				rule = rules[0] // its state, and the window it holds
				newest = new(batch.readings[size-1].Time)
			}
			for range 4 { // a full window kept
				step()
			}
			changes = 0
			b.ReportAllocs()
			cpu := batchtest.ProcessCPU(b)
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N*size), "cpu-ns/reading")
			b.ReportMetric(100*float64(changes)/float64(b.N*size), "%changes")
		})
	}
}
