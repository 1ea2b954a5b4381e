package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/stats"
)

// bucketStats are a bucket's statistics, as rawBuckets gathers them.
type bucketStats struct {
	count   int64
	inputs  []InputStats   // by input id
	outputs []*stats.Stats // by output, nil without outputs
}

// rawBuckets reads the readings of the range once, in time order, and
// computes every statistic of a bucket from them when the bucket is done:
// one scan where the rollups serve nothing, instead of one for the counts,
// one for the inputs, which multiplies the rows by the inputs, and one for
// the outputs. It gives sink what it gathered once the scan is over.
func rawBuckets(ctx context.Context, tx pgx.Tx, sensor Sensor, q BucketQuery, plan bucketPlan, outputs Outputs, sink BucketSink) error {
	var (
		buckets  []time.Time
		gathered []bucketStats
		slots    = map[int64]int{} // an input id's accumulator
		ids      []int64           // of each slot
		inputs   []stats.Accumulator
		seen     []bool // whether a slot had a value in the bucket
		outAcc   []stats.Accumulator
		n        int64
	)
	if outputs != nil {
		outAcc = make([]stats.Accumulator, len(outputs.IDs()))
		for k := range outAcc {
			outAcc[k] = stats.NewAccumulator(q.Median)
		}
	}
	addOutput := func(k int, t time.Time, v float64) { outAcc[k].Add(t, v) }
	finish := func(bucket time.Time) {
		b := bucketStats{count: n}
		for k, id := range ids {
			if seen[k] {
				b.inputs = append(b.inputs, InputStats{Bucket: bucket, InputID: id, Stats: *inputs[k].Finish()})
				seen[k] = false
			}
		}
		slices.SortFunc(b.inputs, func(x, y InputStats) int { return cmp.Compare(x.InputID, y.InputID) })
		if outAcc != nil {
			b.outputs = make([]*stats.Stats, len(outAcc))
			for k := range outAcc {
				b.outputs[k] = outAcc[k].Finish()
			}
		}
		buckets, gathered = append(buckets, bucket), append(gathered, b)
		n = 0
	}
	err := eachReading(ctx, tx, bucketReadingsSQL, plan.args(sensor, q, plan.inputs), finish, func(_ time.Time, r *Reading) {
		n++
		for i, id := range r.InputIDs {
			k, ok := slots[id]
			if !ok {
				k = len(ids)
				slots[id] = k
				ids, seen = append(ids, id), append(seen, false)
				inputs = append(inputs, stats.NewAccumulator(q.Median))
			}
			inputs[k].Add(r.Time, r.Values[i])
			seen[k] = true
		}
		if outputs != nil {
			addOutputs(outputs, r, addOutput)
		}
	})
	if err != nil {
		return err
	}
	counts := make([]BucketCount, len(buckets))
	for i, b := range buckets {
		counts[i] = BucketCount{Bucket: b, Count: gathered[i].count}
	}
	if err := sink.Counts(counts); err != nil {
		return err
	}
	for i, b := range buckets {
		if gathered[i].outputs != nil {
			if err := sink.Outputs(b, gathered[i].outputs); err != nil {
				return err
			}
		}
	}
	for i := range gathered {
		for j := range gathered[i].inputs {
			if err := sink.Input(&gathered[i].inputs[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachReading runs query, whose rows are a key (a bucket, an hour) and a
// reading's datetime, input ids and values, in time order, and calls fn
// with each reading, which it must not keep. It calls flush with a key
// when its readings are done.
func eachReading(ctx context.Context, tx pgx.Tx, query string, args []any, flush func(key time.Time), fn func(key time.Time, r *Reading)) error {
	var (
		current, key time.Time
		started      bool
		r            Reading
	)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, []any{&key, &r.Time, &r.InputIDs, &r.Values}, func() error {
		if started && !key.Equal(current) {
			flush(current)
		}
		current, started = key, true
		fn(key, &r)
		return nil
	})
	if err == nil && started {
		flush(current)
	}
	return err
}

// addOutputs computes the outputs of r and gives add each value, output
// k's as k.
func addOutputs(outputs Outputs, r *Reading, add func(k int, t time.Time, v float64)) {
	outputs.Compute(r)
	for k := range outputs.IDs() {
		if v, ok := outputs.Value(k); ok {
			add(k, r.Time, v)
		}
	}
}
