package sensing

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// BenchmarkRollupBuilder is the service's share of a batch of new readings
// that the batch itself keeps in its hours' rollups (rollBatch): 1,000
// readings a second apart, of 10 inputs, without outputs.
func BenchmarkRollupBuilder(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	readings := make([]store.Reading, 1000)
	for i := range readings {
		values := make([]float64, len(ids))
		for j := range values {
			values[j] = float64(i*len(ids)+j) * 0.37
		}
		readings[i] = store.Reading{Time: start.Add(time.Duration(i) * time.Second), InputIDs: ids, Values: values}
	}
	b.ReportAllocs()
	for b.Loop() {
		rb := newRollupBuilder(1, nil)
		for k := range readings {
			r := &readings[k]
			rb.add(r.Time.Truncate(time.Hour), r)
		}
		if rows := rb.finish(); len(rows) != 1 {
			b.Fatalf("rows = %d, want 1", len(rows))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(readings)), "ns/reading")
}
