package sensing

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// BenchmarkAggregateReadings adds readings read to an aggregation as 13e2
// does (readingAdder): 1-day buckets in Asia/Kolkata of readings 10 s
// apart with 10 inputs, and the 5 outputs of the bench's blueprint; ns/op
// is a reading's.
func BenchmarkAggregateReadings(b *testing.B) {
	const n, inputs = 100_000, 10
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(n * 10 * time.Second)
	kolkata := 5*time.Hour + 30*time.Minute
	var starts []store.BucketStart
	for d := from.AddDate(0, 0, -2); !d.After(to.AddDate(0, 0, 2)); d = d.AddDate(0, 0, 1) {
		starts = append(starts, store.BucketStart{Local: d, At: d.Add(-kolkata)})
	}
	q := store.BucketQuery{From: from, To: to, Interval: 24 * time.Hour, Zone: "Asia/Kolkata"}
	spec := formulas.Spec{Constants: []string{"G", "R0", "K"}, Outputs: []formulas.Output{
		{Key: "digits", Formula: "x1^2 / 1000"},
		{Key: "pressure", Formula: "G * (R0 - digits)"},
		{Key: "corrected", Formula: "pressure + K * (x2 - 20)"},
		{Key: "head", Formula: "pressure / 9.80665"},
		{Key: "alarm", Formula: "abs(pressure) > 150 ? 1 : 0"},
	}}
	ids := make([]int64, inputs)
	for k := range ids {
		spec.Inputs = append(spec.Inputs, fmt.Sprintf("x%d", k+1))
		ids[k] = int64(k + 1)
	}
	p, err := formulas.Compile(spec)
	if err != nil {
		b.Fatal(err)
	}
	value := func(v float64) *float64 { return &v }
	prepared := formulas.Prepare(p, formulas.Instance{InputIDs: ids, OutputIDs: []int64{11, 12, 13, 14, 15},
		Constants: []formulas.Factor{formulas.NewFactor(nil, value(0.1), nil), formulas.NewFactor(nil, value(9000), nil), formulas.NewFactor(nil, value(0.05), nil)}})
	rng := rand.New(rand.NewPCG(1, 2))
	readings := make([]store.Reading, n)
	for i := range readings {
		v := make([]float64, inputs)
		for k := range v {
			v[k] = 1000 + rng.Float64()*2000
		}
		readings[i] = store.Reading{Time: from.Add(time.Duration(i) * 10 * time.Second), InputIDs: ids, Values: v}
	}
	b.ReportAllocs()
	for b.Loop() {
		bk, err := newBucketing(q, starts)
		if err != nil {
			b.Fatal(err)
		}
		a := newAggregation(bk, q, &Outputs{outputs: prepared.Outputs(nil), ids: prepared.OutputIDs()})
		var add readingAdder
		for i := range readings {
			if err := add.add(a, &readings[i], true); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/reading")
}
