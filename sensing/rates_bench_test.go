package sensing

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
)

// BenchmarkEvaluateRate is the Go side of a rate rule alone, without
// PostgreSQL: batches of 1,000 noisy readings a second apart evaluated
// against one rate rule over the last hour (as BenchmarkIngestRateRule and
// row 11e), starting each from what the last one kept, as the rules' read
// returns it (keptStore), and coalescing its events. Never: a threshold no
// reading crosses (the evaluation alone); Quiet: row 11e's, changing level
// at a few % of the readings; Flapping: row 11e2's, at 40 %. It reports
// the process's CPU per reading, the collector's included, which other
// processes on a shared machine do not move as they move the time. The
// Held variants start each batch from the window the last one left held
// in memory (heldWindows), as a service does that wrote the sensor last.
func BenchmarkEvaluateRate(b *testing.B) {
	for _, bench := range []struct {
		name      string
		threshold float64 // of p = 2 u, per day over the hour
		held      bool
	}{{"Never", math.MaxFloat64, false}, {"Quiet", 2 * 21000, false}, {"Flapping", 2 * 5000, false},
		{"NeverHeld", math.MaxFloat64, true}, {"QuietHeld", 2 * 21000, true}, {"FlappingHeld", 2 * 5000, true}} {
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
				kept    keptStore
				held    *store.AlarmRule // as the last batch left it
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
				rules := []store.AlarmRule{kept.read(rule, batch.readings)}
				if bench.held && held != nil && held.KeptWindow != nil {
					r := rule
					r.RateKept, r.RatePartsTo, r.RateStamp, r.RateHeld, r.KeptWindow = held.RateKept, held.RatePartsTo, held.RateStamp, true, held.KeptWindow
					rules[0] = r
				}
				_, events, err := s.evaluate(context.Background(), nil, sensor, rules, batch.readings, newest, windowsAt{through: newest}, nil, batch.pre)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range events {
					changes += 1 + e.Coalesced
				}
				rule.State, rule.TargetRank = rules[0].State, rules[0].TargetRank
				kept.write(rules[0])
				held = &rules[0]
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

// keptStore is what the store keeps of one rate rule between batches, and
// what its rules' read returns of it for a batch newer than the newest
// reading when the service does not hold it (sensorRulesSQL): the parts
// from the one holding the first reading's window start on.
type keptStore struct {
	head  []byte
	parts map[int64][]byte // by last instant
}

func (k *keptStore) read(r store.AlarmRule, batch []store.Reading) store.AlarmRule {
	r.RateKept, r.RateParts, r.RatePartsTo = k.head, nil, math.MinInt64
	if k.head == nil {
		return r
	}
	from := batch[0].Time.UnixMicro() - r.Window*1e6
	var ends []int64
	for upto := range k.parts {
		if upto >= from {
			ends = append(ends, upto)
		}
	}
	slices.Sort(ends)
	for _, upto := range ends {
		r.RateParts = append(r.RateParts, k.parts[upto])
		r.RatePartsTo = upto
	}
	return r
}

func (k *keptStore) write(r store.AlarmRule) {
	if !r.KeptChanged {
		return
	}
	if k.parts == nil {
		k.parts = map[int64][]byte{}
	}
	k.head = r.RateKept
	for upto := range k.parts {
		if upto < r.DropParts {
			delete(k.parts, upto)
		}
	}
	for _, p := range r.AddParts {
		upto, err := store.PartEnd(p)
		if err != nil {
			panic(err)
		}
		k.parts[upto] = p
	}
}
