package sensing

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// AggregateSink takes an aggregate's buckets as they are computed, in this
// order: Start, once; the counts of the buckets with readings, once; the
// outputs' statistics of each bucket with output values, by bucket, each
// indexed as the output ids Start was given and nil for an output without
// values; each input's statistics over each bucket, by bucket and input.
// An error of the sink stops the aggregate and is returned as it is.
type AggregateSink interface {
	// Start gives the sensor, and what the options asked for: every
	// bucket of the range and every input id the sensor can have (with
	// fill), and the output ids (with outputs). It comes before any
	// reading is read, so that an answer too large is refused first.
	Start(sensor store.Sensor, buckets []time.Time, inputIDs, outputIDs []int64) error
	Counts([]store.BucketCount) error
	Outputs(bucket time.Time, stats []*stats.Stats) error
	Input(*store.InputStats) error
}

// AggregateOptions say what an aggregate lists besides the buckets with
// readings and their inputs.
type AggregateOptions struct {
	Fill    bool // every bucket of the range, and every input in each
	Outputs bool // the outputs' statistics
	// AsOf computes with the configuration and the flags in force at that
	// instant; nil: now.
	AsOf *time.Time
}

// Aggregate cuts the sensor's readings that q selects into buckets and
// gives sink their counts, the statistics of each input and, with outputs,
// those of each output, computed with the sensor's formulas and, for
// linked inputs, its sources' values over the whole range, each source
// read once. It reads one snapshot: the hourly rollups where they serve
// and the readings elsewhere (store.Tx.PlanBuckets), and says where the
// answer came from. It returns NotFound, and sink's errors.
func (s *Service) Aggregate(ctx context.Context, key store.SensorKey, q store.BucketQuery, opts AggregateOptions, sink AggregateSink) (store.RollupUse, error) {
	sensor, err := s.sensorAsOf(ctx, key, opts.AsOf)
	if err != nil {
		return "", err
	}
	// The rollups hold every stored value: a range with values a flag
	// rejects is read from the readings, which leave them out.
	flags, err := s.flagsOf(ctx, sensor.ID, q.From, q.To.Add(-time.Microsecond), opts.AsOf)
	if err != nil {
		return "", err
	}
	if !flags.rejects() {
		flags = nil
	}
	var buckets []time.Time
	var inputIDs []int64
	if opts.Fill {
		if buckets, err = s.reader.Buckets(ctx, q); err != nil {
			return "", err
		}
		if inputIDs, err = s.inputIDs(ctx, sensor); err != nil {
			return "", err
		}
	}
	var outputs *Outputs
	var outputIDs []int64
	if opts.Outputs {
		// The readings stream, too many to hold: a linked input's sources
		// are read over the whole range, each once.
		links, err := s.sensorLinks(ctx, s.reader, sensor, q.From, q.To, nil, 0)
		if err != nil {
			return "", err
		}
		outputs = s.outputsOf(sensor, links)
		outputIDs = outputs.IDs()
	}
	if err := sink.Start(sensor, buckets, inputIDs, outputIDs); err != nil {
		return "", err
	}
	if len(outputIDs) == 0 {
		outputs = nil
	}
	q.Raw = q.Raw || s.cfg.ReadingsOnly || flags != nil || opts.AsOf != nil
	var use store.RollupUse
	err = s.reader.InSnapshot(ctx, func(tx *store.Tx) error {
		plan, err := tx.PlanBuckets(ctx, sensor, q, outputs != nil)
		if err != nil {
			return err
		}
		if use = plan.Use(); use == store.RollupsNone {
			return rawBuckets(ctx, tx, plan, q.Median, outputs, flags, sink)
		}
		counts, err := tx.BucketCounts(ctx, plan)
		if err != nil {
			return err
		}
		if err := sink.Counts(counts); err != nil {
			return err
		}
		if outputs != nil {
			if err := outputStats(ctx, tx, plan, outputs, sink); err != nil {
				return err
			}
		}
		return tx.InputStats(ctx, plan, sink.Input)
	})
	return use, err
}

// bucketStats are a bucket's statistics, as rawBuckets gathers them.
type bucketStats struct {
	count   int64
	inputs  []store.InputStats // by input id
	outputs []*stats.Stats     // by output, nil without outputs
}

// rawBuckets reads the readings of the range once, in time order, and
// computes every statistic of a bucket from them when the bucket is done:
// one scan where the rollups serve nothing, instead of one for the counts,
// one for the inputs, which multiplies the rows by the inputs, and one for
// the outputs. It gives sink what it gathered once the scan is over.
//
// flags, when not nil, are the flags in force over the range: the values
// they reject are left out, and a reading they reject whole is not
// counted.
func rawBuckets(ctx context.Context, tx *store.Tx, plan store.BucketPlan, median bool, outputs *Outputs, flags *flagSet, sink AggregateSink) error {
	var (
		buckets  []time.Time
		gathered []bucketStats
		slots    = map[int64]int{} // an input id's accumulator
		ids      []int64           // of each slot
		inputs   []stats.Accumulator
		seen     []bool // whether a slot had a value in the bucket
		outAcc   []stats.Accumulator
		n        int64
		current  time.Time
		started  bool
	)
	if outputs != nil {
		outAcc = make([]stats.Accumulator, len(outputs.IDs()))
		for k := range outAcc {
			outAcc[k] = stats.NewAccumulator(median)
		}
	}
	addOutput := func(k int, t time.Time, v float64) { outAcc[k].Add(t, v) }
	finish := func(bucket time.Time) {
		b := bucketStats{count: n}
		for k, id := range ids {
			if seen[k] {
				b.inputs = append(b.inputs, store.InputStats{Bucket: bucket, InputID: id, Stats: *inputs[k].Finish()})
				seen[k] = false
			}
		}
		slices.SortFunc(b.inputs, func(x, y store.InputStats) int { return cmp.Compare(x.InputID, y.InputID) })
		if outAcc != nil {
			b.outputs = make([]*stats.Stats, len(outAcc))
			for k := range outAcc {
				b.outputs[k] = outAcc[k].Finish()
			}
		}
		buckets, gathered = append(buckets, bucket), append(gathered, b)
		n = 0
	}
	err := tx.BucketReadings(ctx, plan, false, func(bucket time.Time, r *store.Reading) error {
		if flags != nil && len(flags.lookup(r.Time)) > 0 {
			var whole bool
			if r, whole = flags.without(r); whole || len(r.InputIDs) == 0 {
				return nil
			}
		}
		if started && !bucket.Equal(current) {
			finish(current)
		}
		current, started = bucket, true
		n++
		for i, id := range r.InputIDs {
			k, ok := slots[id]
			if !ok {
				k = len(ids)
				slots[id] = k
				ids, seen = append(ids, id), append(seen, false)
				inputs = append(inputs, stats.NewAccumulator(median))
			}
			inputs[k].Add(r.Time, r.Values[i])
			seen[k] = true
		}
		if outputs != nil {
			addOutputs(outputs, r, addOutput)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if started {
		finish(current)
	}
	counts := make([]store.BucketCount, len(buckets))
	for i, b := range buckets {
		counts[i] = store.BucketCount{Bucket: b, Count: gathered[i].count}
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

// outputStats computes the outputs of the readings of the plan's spans,
// as they stream in time order, and merges in the rollups of the other
// hours; it gives sink each bucket's statistics, by bucket.
func outputStats(ctx context.Context, tx *store.Tx, plan store.BucketPlan, outputs *Outputs, sink AggregateSink) error {
	ids := outputs.IDs()
	// The rollups' rows are few (a bucket's per output), so they are read
	// first; the readings, many, stream.
	rolled := map[time.Time][]stats.Partial{}
	index := make(map[int64]int, len(ids))
	for k, id := range ids {
		index[id] = k
	}
	err := tx.OutputRollups(ctx, plan, func(bucket time.Time, id int64, p *stats.Partial) error {
		k, ok := index[id]
		if !ok {
			return nil // an output the sensor no longer has
		}
		parts := rolled[bucket]
		if parts == nil {
			parts = make([]stats.Partial, len(ids))
			rolled[bucket] = parts
		}
		parts[k].Merge(*p)
		return nil
	})
	if err != nil {
		return err
	}
	acc := make([]stats.Accumulator, len(ids)) // no median: it is never asked of rollups
	done := map[time.Time][]*stats.Stats{}
	finish := func(bucket time.Time) {
		for k, p := range rolled[bucket] {
			acc[k].Merge(p)
		}
		delete(rolled, bucket)
		out := make([]*stats.Stats, len(ids))
		for k := range acc {
			out[k] = acc[k].Finish()
		}
		done[bucket] = out
	}
	add := func(k int, t time.Time, v float64) { acc[k].Add(t, v) }
	var (
		current time.Time
		started bool
	)
	err = tx.BucketReadings(ctx, plan, true, func(bucket time.Time, r *store.Reading) error {
		if started && !bucket.Equal(current) {
			finish(current)
		}
		current, started = bucket, true
		addOutputs(outputs, r, add)
		return nil
	})
	if err != nil {
		return err
	}
	if started {
		finish(current)
	}
	for bucket := range rolled {
		finish(bucket)
	}
	buckets := make([]time.Time, 0, len(done))
	for b := range done {
		buckets = append(buckets, b)
	}
	slices.SortFunc(buckets, func(a, b time.Time) int { return a.Compare(b) })
	for _, b := range buckets {
		if err := sink.Outputs(b, done[b]); err != nil {
			return err
		}
	}
	return nil
}

// addOutputs computes the outputs of r and gives add each value, output
// k's as k.
func addOutputs(outputs *Outputs, r *store.Reading, add func(k int, t time.Time, v float64)) {
	outputs.Compute(r)
	for k := range outputs.IDs() {
		if v, ok := outputs.Value(k); ok {
			add(k, r.Time, v)
		}
	}
}
