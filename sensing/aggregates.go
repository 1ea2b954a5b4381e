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
// (aggregation.rollups) and the readings elsewhere, and says where the
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
		starts, err := tx.BucketStarts(ctx, q)
		if err != nil {
			return err
		}
		b, err := newBucketing(q, starts)
		if err != nil {
			return err
		}
		a := newAggregation(b, q, outputs)
		a.flags = flags
		if use, err = a.run(ctx, tx, sensor, q); err != nil {
			return err
		}
		return a.emit(sink)
	})
	return use, err
}

// maxSpans bounds the spans of readings an aggregate reads beside the
// rollups, a range scan each: past it, it reads the readings of its whole
// range instead.
const maxSpans = 1000

// aggregation gathers an aggregate's statistics by bucket (an index of
// its bucketing's starts): merged from the hours' rollups where they
// serve, added from the readings elsewhere.
type aggregation struct {
	b         *bucketing
	median    bool
	firstLast bool // whether the first and last values are asked for
	counts    []int64
	slots     map[int64]int     // an input id's slot
	ids       []int64           // of each slot
	inputs    [][]stats.Partial // by slot, by bucket
	outputs   [][]stats.Partial // by output, by bucket; nil without outputs
	out       *Outputs          // nil without outputs
	// The flags in force over the range, when they reject values (which
	// are then left out, and a reading rejected whole is not counted).
	flags *flagSet
	// The slots of the inputs of the rollup merged last, by position.
	mergeSlots []int

	// With median, the values of the bucket being read (cur), and each
	// series' median by bucket: of the inputs by slot, of the outputs.
	cur           int
	inputMedians  medians
	outputMedians medians
}

// medians are the medians of series by bucket, and the values of the
// bucket being read.
type medians struct {
	values [][]float64 // by series
	of     [][]float64 // by series, by bucket
}

// keep keeps value v of series k.
func (m *medians) keep(k int, v float64) {
	for len(m.values) <= k {
		m.values = append(m.values, nil)
		m.of = append(m.of, nil)
	}
	m.values[k] = append(m.values[k], v)
}

// finish computes the medians of bucket i, of buckets in all.
func (m *medians) finish(i, buckets int) {
	for k, v := range m.values {
		if len(v) == 0 {
			continue
		}
		if m.of[k] == nil {
			m.of[k] = make([]float64, buckets)
		}
		m.of[k][i] = stats.Median(v)
		m.values[k] = v[:0]
	}
}

// add sets the median of series k over bucket i in s, if it has one.
func (m *medians) add(s *stats.Stats, k, i int) *stats.Stats {
	if s != nil && k < len(m.of) && m.of[k] != nil {
		v := m.of[k][i]
		s.Median = &v
	}
	return s
}

func newAggregation(b *bucketing, q store.BucketQuery, out *Outputs) *aggregation {
	a := &aggregation{b: b, median: q.Median, firstLast: q.FirstLast, counts: make([]int64, len(b.starts)), slots: map[int64]int{}, out: out, cur: -1}
	if out != nil {
		for range out.IDs() {
			a.outputs = append(a.outputs, make([]stats.Partial, len(b.starts)))
		}
	}
	return a
}

// slot is the slot of input id, made on its first value.
func (a *aggregation) slot(id int64) int {
	k, ok := a.slots[id]
	if !ok {
		k = len(a.ids)
		a.slots[id] = k
		a.ids = append(a.ids, id)
		a.inputs = append(a.inputs, make([]stats.Partial, len(a.b.starts)))
	}
	return k
}

// run gathers the statistics of q's range of the sensor's readings: the
// rollups of the whole hours that are neither queued for the maintainer
// nor, for the outputs, computed with other formulas, and the readings
// elsewhere. It says where the answer came from.
func (a *aggregation) run(ctx context.Context, tx *store.Tx, sensor store.Sensor, q store.BucketQuery) (store.RollupUse, error) {
	var inSpans, outSpans spans
	h0, h1 := q.From.Truncate(time.Hour), q.To.Truncate(time.Hour)
	if h0.Before(q.From) {
		h0 = h0.Add(time.Hour)
	}
	// Below an hour no bucket holds whole hours; a median is never
	// rolled up.
	rolled := !q.Raw && !q.Median && q.Interval >= time.Hour && h0.Before(h1)
	if rolled {
		var err error
		var served bool
		if inSpans, outSpans, served, err = a.rollups(ctx, tx, sensor, q, h0, h1); err != nil {
			return "", err
		}
		if !served || len(inSpans.from) > maxSpans || len(outSpans.from) > maxSpans {
			flags := a.flags
			*a = *newAggregation(a.b, q, a.out)
			a.flags = flags
			rolled = false
		}
	}
	if !rolled {
		inSpans, outSpans = spans{}, spans{}
		inSpans.add(q.From, q.To)
		outSpans.add(q.From, q.To)
	}
	read := inSpans
	if a.out != nil {
		read = outSpans // which hold the inputs' spans
	}
	var (
		lastIDs   []int64 // of the reading before
		lastSlots []int   // of each of lastIDs
	)
	err := tx.SpanReadings(ctx, sensor.ID, read.from, read.to, func(r *store.Reading) error {
		if a.flags != nil && len(a.flags.lookup(r.Time)) > 0 {
			var whole bool
			if r, whole = a.flags.without(r); whole || len(r.InputIDs) == 0 {
				return nil
			}
		}
		i, err := a.b.index(r.Time)
		if err != nil {
			return err
		}
		if a.median && i != a.cur {
			a.finishMedians()
			a.cur = i
		}
		if a.out == nil || inSpans.contain(r.Time) {
			a.counts[i]++
			// Readings mostly have the inputs of the one before.
			if !slices.Equal(r.InputIDs, lastIDs) {
				lastIDs, lastSlots = append(lastIDs[:0], r.InputIDs...), lastSlots[:0]
				for _, id := range r.InputIDs {
					lastSlots = append(lastSlots, a.slot(id))
				}
			}
			for j, k := range lastSlots {
				a.inputs[k][i].AddAny(r.Time, r.Values[j])
				if a.median {
					a.inputMedians.keep(k, r.Values[j])
				}
			}
		}
		if a.out != nil {
			a.out.Compute(r)
			for k := range a.outputs {
				if v, ok := a.out.Value(k); ok {
					a.outputs[k][i].AddAny(r.Time, v)
					if a.median {
						a.outputMedians.keep(k, v)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	a.finishMedians()
	switch {
	case !rolled:
		return store.RollupsNone, nil
	case len(read.from) == 0:
		return store.RollupsUsed, nil
	}
	return store.RollupsPartial, nil
}

// rollups merges the rollups of the hours [h0, h1) that serve q, and
// returns the spans whose readings are to be read for the inputs (and the
// counts), and for the outputs, which hold the inputs'; and whether the
// rollups served any hour. An hour in one bucket is served by its
// rollup, an hour whose quarters are each in one bucket by its quarters'.
func (a *aggregation) rollups(ctx context.Context, tx *store.Tx, sensor store.Sensor, q store.BucketQuery, h0, h1 time.Time) (inSpans, outSpans spans, served bool, err error) {
	hours := int(h1.Sub(h0) / time.Hour)
	const (
		byHour = 1 + iota
		byQuarters
	)
	how := make([]uint8, hours) // 0: from the readings
	for k := range how {
		h := h0.Add(time.Duration(k) * time.Hour)
		switch {
		case a.b.whole(h, time.Hour):
			how[k] = byHour
		case a.b.whole(h, 15*time.Minute) && a.b.whole(h.Add(15*time.Minute), 15*time.Minute) &&
			a.b.whole(h.Add(30*time.Minute), 15*time.Minute) && a.b.whole(h.Add(45*time.Minute), 15*time.Minute):
			how[k] = byQuarters
		}
	}
	queued, err := tx.QueuedHoursIn(ctx, sensor.ID, h0, h1)
	if err != nil {
		return inSpans, outSpans, false, err
	}
	// What the rollups do not serve, by hour: the inputs (and so the
	// outputs), or the outputs alone.
	const (
		inputs = 1 + iota
		outputs
	)
	unserved := make([]uint8, hours)
	for _, h := range queued {
		unserved[h.Hour.Sub(h0)/time.Hour] = outputs
		if h.Inputs {
			unserved[h.Hour.Sub(h0)/time.Hour] = inputs
		}
	}
	// A linked input's value is another sensor's, which the hours'
	// rollups do not follow: its outputs are always read.
	outputsRolled := a.out != nil && !sensor.Instance.Linked()
	version := sensor.FormulasVersion()
	var quartered []time.Time // hours served by their quarters
	err = tx.HourRollups(ctx, sensor.ID, h0, h1, outputsRolled, q.FirstLast, func(r *store.HourRollup) error {
		k := int(r.Hour.Sub(h0) / time.Hour)
		switch {
		case how[k] == 0 || unserved[k] == inputs:
			return nil
		case !r.Whole: // written before the hour's statistics were kept
			unserved[k] = inputs
			return nil
		}
		if outputsRolled && unserved[k] == 0 && (r.Outputs == nil || r.Version != version) {
			unserved[k] = outputs
		}
		if how[k] == byQuarters {
			quartered = append(quartered, r.Hour)
			return nil
		}
		i, err := a.b.index(r.Hour)
		if err != nil {
			return err
		}
		a.merge(i, r.Count, r.Inputs, r.Outputs, outputsRolled && unserved[k] == 0)
		return nil
	})
	if err != nil {
		return inSpans, outSpans, false, err
	}
	err = tx.QuarterRollups(ctx, sensor.ID, quartered, func(hour time.Time, quarters *[4]store.Quarter) error {
		k := int(hour.Sub(h0) / time.Hour)
		for j := range quarters {
			i, err := a.b.index(hour.Add(time.Duration(j) * 15 * time.Minute))
			if err != nil {
				return err
			}
			qr := &quarters[j]
			a.merge(i, qr.Count, qr.Inputs, qr.Outputs, outputsRolled && unserved[k] == 0)
		}
		return nil
	})
	if err != nil {
		return inSpans, outSpans, false, err
	}
	inAt, outAt := q.From, q.From
	for k := range hours {
		h := h0.Add(time.Duration(k) * time.Hour)
		if how[k] == 0 || unserved[k] == inputs {
			continue
		}
		served = true
		inSpans.add(inAt, h)
		inAt = h.Add(time.Hour)
		if unserved[k] == 0 && (outputsRolled || a.out == nil) {
			outSpans.add(outAt, h)
			outAt = h.Add(time.Hour)
		}
	}
	inSpans.add(inAt, q.To)
	outSpans.add(outAt, q.To)
	return inSpans, outSpans, served, nil
}

// merge merges a rollup of part of bucket i: its count and inputs, and its
// outputs with outputs.
func (a *aggregation) merge(i int, count int64, inputs, outputs []store.Series, withOutputs bool) {
	a.counts[i] += count
	for j := range inputs {
		s := &inputs[j]
		// Hours mostly have the inputs of the hour before.
		if j >= len(a.mergeSlots) || a.ids[a.mergeSlots[j]] != s.ID {
			a.mergeSlots = append(a.mergeSlots[:min(j, len(a.mergeSlots))], a.slot(s.ID))
		}
		a.mergeInto(&a.inputs[a.mergeSlots[j]][i], &s.Partial)
	}
	if !withOutputs {
		return
	}
	ids := a.out.IDs()
	for j := range outputs {
		s := &outputs[j]
		k := j
		if k >= len(ids) || ids[k] != s.ID {
			if k = slices.Index(ids, s.ID); k < 0 {
				continue // an output the sensor no longer has
			}
		}
		a.mergeInto(&a.outputs[k][i], &s.Partial)
	}
}

// mergeInto merges o into p, its first and last values only if the
// aggregate asks for them.
func (a *aggregation) mergeInto(p, o *stats.Partial) {
	if a.firstLast {
		p.Merge(*o)
	} else {
		p.MergeCore(o)
	}
}

// finishMedians computes the medians of the bucket being read. A median
// is never rolled up: its readings are one span, read in time order, so
// that a bucket is read at once.
func (a *aggregation) finishMedians() {
	if a.median && a.cur >= 0 {
		a.inputMedians.finish(a.cur, len(a.b.starts))
		a.outputMedians.finish(a.cur, len(a.b.starts))
	}
}

// emit gives sink the buckets with readings, by bucket: their counts,
// their outputs' statistics, and their inputs', by input id.
func (a *aggregation) emit(sink AggregateSink) error {
	var buckets []int
	for i, n := range a.counts {
		if n > 0 {
			buckets = append(buckets, i)
		}
	}
	slices.SortStableFunc(buckets, func(x, y int) int { return a.b.label(x).Compare(a.b.label(y)) })
	counts := make([]store.BucketCount, len(buckets))
	for j, i := range buckets {
		counts[j] = store.BucketCount{Bucket: a.b.label(i), Count: a.counts[i]}
	}
	if err := sink.Counts(counts); err != nil {
		return err
	}
	if a.out != nil {
		out := make([]*stats.Stats, len(a.outputs))
		for _, i := range buckets {
			some := false
			for k := range a.outputs {
				out[k] = a.outputMedians.add(a.outputs[k][i].Stats(), k, i)
				some = some || out[k] != nil
			}
			if some {
				if err := sink.Outputs(a.b.label(i), slices.Clone(out)); err != nil {
					return err
				}
			}
		}
	}
	order := make([]int, len(a.ids)) // slots by input id
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(a.ids[x], a.ids[y]) })
	var in store.InputStats
	for _, i := range buckets {
		for _, k := range order {
			s := a.inputMedians.add(a.inputs[k][i].Stats(), k, i)
			if s == nil {
				continue
			}
			in = store.InputStats{Bucket: a.b.label(i), InputID: a.ids[k], Stats: *s}
			if err := sink.Input(&in); err != nil {
				return err
			}
		}
	}
	return nil
}

// spans are instants [from[i], to[i]), ascending and apart.
type spans struct{ from, to []time.Time }

// add appends [a, b), joined to the last span when they meet.
func (s *spans) add(a, b time.Time) {
	if !a.Before(b) {
		return
	}
	if n := len(s.to); n > 0 && !s.to[n-1].Before(a) {
		if b.After(s.to[n-1]) {
			s.to[n-1] = b
		}
		return
	}
	s.from, s.to = append(s.from, a), append(s.to, b)
}

// contain tells whether t is in one of the spans.
func (s *spans) contain(t time.Time) bool {
	i, _ := slices.BinarySearchFunc(s.to, t, func(end, t time.Time) int {
		if end.After(t) {
			return 1
		}
		return -1
	})
	return i < len(s.to) && !t.Before(s.from[i])
}
