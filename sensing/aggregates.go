package sensing

import (
	"cmp"
	"context"
	"fmt"
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
	// Outputs and Input must not keep the statistics they are given:
	// they are reused.
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
		links, err := s.sensorLinks(ctx, s.reader, sensor, q.From, q.To, nil, opts.AsOf, 0)
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
		a.everyReading = s.cfg.ReadingsOnly
		a.backends = s.backendReads
		a.common = sensor.Instance.InputIDs()
		if outputs != nil && !sensor.Instance.Linked() {
			a.newOutputs = func() *Outputs { return s.outputsOf(sensor, nil) }
		}
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
	backends  *backendReads     // which half of a read each backend read last
	// The flags in force over the range, when they reject values (which
	// are then left out, and a reading rejected whole is not counted).
	flags *flagSet
	// The slots of the inputs of the rollup merged last, by position.
	mergeSlots []int
	// everyReading adds every reading read in Go, never PostgreSQL's
	// aggregates of them: what those are checked against.
	everyReading bool
	// common are the input ids most readings have (the instance's).
	common []int64
	// newOutputs makes another evaluator of out, for readings read on
	// another goroutine; nil where it cannot be (linked inputs, whose
	// sources are followed reading after reading).
	newOutputs func() *Outputs

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
			flags, everyReading, common, newOutputs, backends := a.flags, a.everyReading, a.common, a.newOutputs, a.backends
			*a = *newAggregation(a.b, q, a.out)
			a.flags, a.everyReading, a.common, a.newOutputs, a.backends = flags, everyReading, common, newOutputs, backends
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
	readings := read
	if a.out == nil && !a.median && !a.firstLast && a.flags == nil && !a.everyReading {
		grouped, err := a.readGroups(ctx, tx, sensor.ID, read, q.Interval)
		if err != nil {
			return "", err
		}
		if grouped {
			readings = spans{}
		}
	}
	if err := a.readInParts(ctx, tx, sensor.ID, readings, inSpans); err != nil {
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

// minSplit is the least of readings' time an aggregate reads on two
// connections, in two halves, in microseconds (two days): below it, the
// second connection costs more than it saves.
const minSplit = 2 * 24 * int64(time.Hour/time.Microsecond)

// readInParts reads the readings of sp into a: on two connections at
// once, each about half of sp's time on one, cut where a bucket starts
// (bucketHalves), when sp is long enough and a can be split
// (store.Tx.Beside), each half on the connection whose backend read it
// last (sides); on tx alone otherwise. A median needs its
// buckets read whole, in order; flags and linked inputs are followed
// reading after reading; so those are read on tx alone, as is the answer
// of every reading that the others are checked against.
func (a *aggregation) readInParts(ctx context.Context, tx *store.Tx, sensorID int64, sp, inSpans spans) error {
	if a.median || a.flags != nil || a.everyReading || (a.out != nil && a.newOutputs == nil) || sp.length() < minSplit {
		return a.readSpans(ctx, tx, sensorID, sp, inSpans, nil)
	}
	first, second := a.bucketHalves(sp)
	if len(first.from) == 0 || len(second.from) == 0 {
		return a.readSpans(ctx, tx, sensorID, sp, inSpans, nil)
	}
	other := a.fork()
	main, mine := tx.Backend(), make(chan spans, 1)
	wait, started, err := tx.Beside(ctx, func(tx *store.Tx) error {
		my, theirs := a.sides(main, tx.Backend(), sensorID, first, second)
		mine <- my
		a.backends.note(tx.Backend(), sensorID, theirs)
		return other.readSpans(ctx, tx, sensorID, theirs, inSpans, nil)
	})
	if err != nil {
		return err
	}
	if !started {
		return a.readSpans(ctx, tx, sensorID, sp, inSpans, nil)
	}
	my := <-mine
	a.backends.note(main, sensorID, my)
	err = a.readSpans(ctx, tx, sensorID, my, inSpans, nil)
	if werr := wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	a.absorb(other)
	return nil
}

// bucketHalves cuts sp in two at the start of the bucket its middle falls
// in, so that each bucket is read on one connection, its values added in
// time order, as the readings alone add them: one half is empty when sp
// lies in one bucket.
func (a *aggregation) bucketHalves(sp spans) (first, second spans) {
	_, second = sp.halves()
	if len(second.from) == 0 {
		return sp, spans{}
	}
	i, err := a.b.index(second.from[0])
	if err != nil {
		return sp, spans{}
	}
	return sp.cutAt(a.b.label(i))
}

// sides says which of two halves of the sensor's readings the backend
// main reads and which the backend side beside it: first on main unless
// each backend is likelier to hold the other's in its memory
// (backendReads).
func (a *aggregation) sides(main, side uint32, sensorID int64, first, second spans) (mine, theirs spans) {
	if a.backends.swap(main, side, sensorID, second.from[0]) {
		return second, first
	}
	return first, second
}

// fork is an empty aggregation of a's buckets and outputs, to read part of
// the readings on another goroutine: its own bucketing (which caches the
// zone's offset) and its own outputs' evaluator.
func (a *aggregation) fork() *aggregation {
	b := *a.b
	var out *Outputs
	if a.out != nil {
		out = a.newOutputs()
	}
	f := newAggregation(&b, store.BucketQuery{FirstLast: a.firstLast}, out)
	f.everyReading, f.common = a.everyReading, a.common
	return f
}

// absorb merges what f read into a.
func (a *aggregation) absorb(f *aggregation) {
	for i, n := range f.counts {
		a.counts[i] += n
	}
	for k, id := range f.ids {
		into := a.inputs[a.slot(id)]
		for i := range f.inputs[k] {
			a.mergeInto(&into[i], &f.inputs[k][i])
		}
	}
	for k := range f.outputs {
		for i := range f.outputs[k] {
			a.mergeInto(&a.outputs[k][i], &f.outputs[k][i])
		}
	}
}

// readSpans reads the readings of sp and adds them to a, those keep keeps
// if it is not nil: their inputs and counts those within inSpans, their
// outputs all of them.
func (a *aggregation) readSpans(ctx context.Context, tx *store.Tx, sensorID int64, sp, inSpans spans, keep func(*store.Reading) bool) error {
	// Whether every reading's inputs are added: the binary search of
	// inSpans a reading was a tenth of the service's time for 13e2.
	allIn := a.out == nil || inSpans.covers(sp)
	var add readingAdder
	return tx.SpanReadings(ctx, sensorID, sp.from, sp.to, a.common, func(r *store.Reading) error {
		if keep != nil && !keep(r) {
			return nil
		}
		if a.flags != nil && len(a.flags.lookup(r.Time)) > 0 {
			var whole bool
			if r, whole = a.flags.without(r); whole || len(r.InputIDs) == 0 {
				return nil
			}
		}
		return add.add(a, r, allIn || inSpans.contain(r.Time))
	})
}

// readingAdder adds readings to an aggregation, the slots of the inputs
// of the reading before kept: readings mostly have its inputs.
type readingAdder struct {
	ids   []int64 // of the reading before
	slots []int   // of each of ids
}

// add adds reading r to a: its count and inputs too with in.
func (d *readingAdder) add(a *aggregation, r *store.Reading, in bool) error {
	i, err := a.b.index(r.Time)
	if err != nil {
		return err
	}
	if a.median && i != a.cur {
		a.finishMedians()
		a.cur = i
	}
	if in {
		a.counts[i]++
		if !slices.Equal(r.InputIDs, d.ids) {
			d.ids, d.slots = append(d.ids[:0], r.InputIDs...), d.slots[:0]
			for _, id := range r.InputIDs {
				d.slots = append(d.slots, a.slot(id))
			}
		}
		values := r.Values[:len(d.slots)]
		switch {
		case a.firstLast || a.median:
			for j, k := range d.slots {
				a.add(&a.inputs[k][i], r.Time, values[j])
				if a.median {
					a.inputMedians.keep(k, values[j])
				}
			}
		default:
			// Most aggregates: AddCore straight, not through a.add
			// (BenchmarkAggregateReadings: 10 % less CPU a reading).
			for j, k := range d.slots {
				a.inputs[k][i].AddCore(values[j])
			}
		}
	}
	if a.out == nil {
		return nil
	}
	a.out.Compute(r)
	for k := range a.outputs {
		v, ok := a.out.Value(k)
		switch {
		case !ok:
		case a.firstLast || a.median:
			a.add(&a.outputs[k][i], r.Time, v)
			if a.median {
				a.outputMedians.keep(k, v)
			}
		default:
			a.outputs[k][i].AddCore(v)
		}
	}
	return nil
}

// add adds value v, of time t, to p: its first and last values too only if
// the aggregate asks for them. Without them, values are added as they
// come, which is in time order within a bucket: each is read whole on one
// connection (bucketHalves), its spans in time order.
func (a *aggregation) add(p *stats.Partial, t time.Time, v float64) {
	if a.firstLast {
		p.AddAny(t, v)
	} else {
		p.AddCore(v)
	}
}

// readGroups merges into a the inputs of the readings in sp as PostgreSQL
// aggregates them, rather than every reading read and added here: for an
// aggregate of inputs alone, without first and last values or median.
// Buckets of a day or more it sums each by a scan of its own
// (gatherBuckets); shorter ones grain by grain of an hour or a quarter
// (gatherGroups), when each of their buckets holds whole grains (every
// zone's offset but local mean time is a multiple of 15 minutes). It says
// whether it did; if not, a is as it was, and the readings are to be read.
func (a *aggregation) readGroups(ctx context.Context, tx *store.Tx, sensorID int64, sp spans, interval time.Duration) (bool, error) {
	if len(sp.from) == 0 {
		return a.grain(sp, interval) > 0, nil
	}
	if interval >= minBucketScan {
		if pieces, ok := a.bucketPieces(sp); ok {
			first, second := pieces.halvesBetween()
			return a.gatherInHalves(ctx, tx, sensorID, pieces, first, second, func(a *aggregation, tx *store.Tx, sp spans) (bool, error) {
				return a.gatherBuckets(ctx, tx, sensorID, sp, interval)
			})
		}
	}
	grain := a.grain(sp, interval)
	if grain == 0 {
		return false, nil
	}
	first, second := sp.halves()
	return a.gatherInHalves(ctx, tx, sensorID, sp, first, second, func(a *aggregation, tx *store.Tx, sp spans) (bool, error) {
		return a.gatherGroups(ctx, tx, sensorID, sp, grain)
	})
}

// minBucketScan is the shortest bucket whose inputs PostgreSQL sums
// bucket by bucket, each by a scan of its own (store.Tx.SpanInputBuckets):
// a sixth less a reading than by grain, for some 50 µs a bucket, which a
// day of readings every few minutes repays.
const minBucketScan = 24 * time.Hour

// gatherInHalves gathers the readings of sp into a with gather: on two
// connections at once, one on tx and the other on one of its own
// (store.Tx.Beside), each on the connection whose backend read it last
// (sides; first on tx otherwise), when sp is long enough; sp whole on tx
// otherwise.
// Each half is gathered apart, and merged into a only once both have
// come. It says whether gather could; if not, a is as it was.
func (a *aggregation) gatherInHalves(ctx context.Context, tx *store.Tx, sensorID int64, sp, first, second spans, gather func(*aggregation, *store.Tx, spans) (bool, error)) (bool, error) {
	mine, other := a.fork(), a.fork()
	var (
		wait    func() error
		started bool
		otherOK bool
		err     error
		mySpans = sp
	)
	if sp.length() >= minSplit && len(first.from) > 0 && len(second.from) > 0 {
		main, halves := tx.Backend(), make(chan spans, 1)
		wait, started, err = tx.Beside(ctx, func(tx *store.Tx) error {
			my, theirs := a.sides(main, tx.Backend(), sensorID, first, second)
			halves <- my
			a.backends.note(tx.Backend(), sensorID, theirs)
			var err error
			otherOK, err = gather(other, tx, theirs)
			return err
		})
		if err != nil {
			return false, err
		}
		if started {
			mySpans = <-halves
			a.backends.note(main, sensorID, mySpans)
		}
	}
	ok, err := gather(mine, tx, mySpans)
	if started {
		if werr := wait(); err == nil {
			err = werr
		}
		ok = ok && otherOK
	}
	if err != nil || !ok {
		return false, err
	}
	a.absorb(mine)
	if started {
		a.absorb(other)
	}
	return true, nil
}

// bucketPieces cuts sp at its buckets' bounds, into the part of each
// bucket that each span covers, ascending. It says false if there would
// be more than maxSpans, or a part is not all of one bucket: where the
// wall clock goes back, a bucket shorter than the change can take in two
// stretches of time.
func (a *aggregation) bucketPieces(sp spans) (spans, bool) {
	var pieces spans
	for k := range sp.from {
		for from := sp.from[k]; from.Before(sp.to[k]); {
			i, err := a.b.index(from)
			if err != nil {
				return spans{}, false
			}
			to := sp.to[k]
			if i+1 < len(a.b.starts) && a.b.starts[i+1].At.Before(to) {
				to = a.b.starts[i+1].At
			}
			if !to.After(from) || !a.b.whole(from, to.Sub(from)) || len(pieces.from) == maxSpans {
				return spans{}, false
			}
			// Appended, not added: pieces that meet stay apart.
			pieces.from, pieces.to = append(pieces.from, from), append(pieces.to, to)
			from = to
		}
	}
	return pieces, true
}

// gatherBuckets adds to a the readings of sp, pieces of buckets
// (bucketPieces), as PostgreSQL aggregates them piece by piece
// (store.Tx.SpanInputBuckets), and says whether it could: the pieces
// it could not aggregate (store.InputGroup.Apart), of readings of other
// inputs or values beyond its sums, are gathered by grain (gatherGroups),
// or else read reading by reading.
func (a *aggregation) gatherBuckets(ctx context.Context, tx *store.Tx, sensorID int64, sp spans, interval time.Duration) (bool, error) {
	var (
		add   groupAdder
		apart spans
	)
	ok, err := tx.SpanInputBuckets(ctx, sensorID, sp.from, sp.to, a.common, func(g *store.InputGroup) error {
		if g.Apart {
			k, _ := slices.BinarySearchFunc(sp.from, g.Start, time.Time.Compare)
			apart.add(g.Start, sp.to[k])
			return nil
		}
		return add.add(a, g)
	})
	if err != nil || !ok || len(apart.from) == 0 {
		return ok, err
	}
	if grain := a.grain(apart, interval); grain > 0 {
		if ok, err := a.gatherGroups(ctx, tx, sensorID, apart, grain); err != nil || ok {
			return ok, err
		}
	}
	return true, a.readSpans(ctx, tx, sensorID, apart, apart, nil)
}

// groupAdder adds groups that PostgreSQL aggregated to their buckets, the
// slots of the inputs of the last group kept: groups mostly have the
// inputs of the one before.
type groupAdder struct {
	ids   []int64
	slots []int
}

func (d *groupAdder) add(a *aggregation, g *store.InputGroup) error {
	i, err := a.b.index(g.Start)
	if err != nil {
		return err
	}
	a.counts[i] += g.Count
	if !slices.Equal(g.InputIDs, d.ids) {
		d.ids, d.slots = append(d.ids[:0], g.InputIDs...), d.slots[:0]
		for _, id := range g.InputIDs {
			d.slots = append(d.slots, a.slot(id))
		}
	}
	for j, k := range d.slots {
		a.inputs[k][i].MergeCore(&stats.Partial{Count: g.Count, Sums: stats.Sums{Lo: g.Sums[j]}, Min: g.Min[j], Max: g.Max[j]})
	}
	return nil
}

// gatherGroups adds to a the readings of sp as PostgreSQL aggregates them
// by grain, and says whether it could (store.Tx.SpanInputGroups): the
// grains PostgreSQL could not aggregate (store.InputGroup.Apart), their
// readings read one by one.
func (a *aggregation) gatherGroups(ctx context.Context, tx *store.Tx, sensorID int64, sp spans, grain time.Duration) (bool, error) {
	var (
		add      groupAdder
		apart    []time.Time         // the grains' starts
		apartIDs = map[string]bool{} // by grain and input ids
	)
	ok, err := tx.SpanInputGroups(ctx, sensorID, sp.from, sp.to, grain, a.common, func(g *store.InputGroup) error {
		if g.Apart {
			apart = append(apart, g.Start)
			apartIDs[groupKey(g.Start, g.InputIDs)] = true
			return nil
		}
		return add.add(a, g)
	})
	if err != nil || !ok || len(apart) == 0 {
		return ok, err
	}
	// The groups come in no order, a grain's perhaps several, of which
	// only those apart are read here.
	slices.SortFunc(apart, time.Time.Compare)
	var grains spans
	for _, t := range slices.Compact(apart) {
		grains.add(t, t.Add(grain))
	}
	read := grains.within(sp)
	return true, a.readSpans(ctx, tx, sensorID, read, read, func(r *store.Reading) bool {
		return apartIDs[groupKey(r.Time.Truncate(grain), r.InputIDs)]
	})
}

// groupKey names the group of a grain and input ids.
func groupKey(grain time.Time, ids []int64) string {
	return fmt.Sprint(grain.UnixMicro(), ids)
}

// grain is the longest of an hour and a quarter that divides interval and
// whose every grain touched by sp lies in one bucket; 0 if neither does.
func (a *aggregation) grain(sp spans, interval time.Duration) time.Duration {
	for _, g := range []time.Duration{time.Hour, 15 * time.Minute} {
		if interval%g == 0 && a.wholeGrains(sp, g) {
			return g
		}
	}
	return 0
}

// wholeGrains tells whether every grain of g (counted from a UTC hour)
// that sp touches lies in one bucket.
func (a *aggregation) wholeGrains(sp spans, g time.Duration) bool {
	for k := range sp.from {
		for t := sp.from[k].Truncate(g); t.Before(sp.to[k]); t = t.Add(g) {
			if !a.b.whole(t, g) {
				return false
			}
		}
	}
	return true
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
	// The statistics given to sink are reused: a year of daily buckets
	// of 15 series allocated 5,475 of them.
	if a.out != nil {
		out := make([]*stats.Stats, len(a.outputs))
		values := make([]stats.Stats, len(a.outputs))
		for _, i := range buckets {
			some := false
			for k := range a.outputs {
				out[k] = nil
				if a.outputs[k][i].StatsInto(&values[k]) {
					out[k] = a.outputMedians.add(&values[k], k, i)
					some = true
				}
			}
			if some {
				if err := sink.Outputs(a.b.label(i), out); err != nil {
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
			if !a.inputs[k][i].StatsInto(&in.Stats) {
				continue
			}
			a.inputMedians.add(&in.Stats, k, i)
			in.Bucket, in.InputID = a.b.label(i), a.ids[k]
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

// length is the time the spans cover, in microseconds (a Duration holds
// only 292 years, and readings run from year 1 to 9999).
func (s *spans) length() int64 {
	var us int64
	for i := range s.from {
		us += s.to[i].UnixMicro() - s.from[i].UnixMicro()
	}
	return us
}

// halves cuts the spans into two, each covering half their time.
func (s *spans) halves() (first, second spans) {
	left := s.length() / 2
	for i := range s.from {
		a, b := s.from[i], s.to[i]
		if d := b.UnixMicro() - a.UnixMicro(); left > 0 && d > left {
			cut := time.UnixMicro(a.UnixMicro() + left).UTC()
			first.add(a, cut)
			a, left = cut, 0
		} else if left > 0 {
			first.add(a, b)
			left -= d
			continue
		}
		second.add(a, b)
	}
	return first, second
}

// halvesBetween cuts the spans into two runs, each about half their
// time, between two spans, so that no span is cut.
func (s *spans) halvesBetween() (first, second spans) {
	left := s.length() / 2
	for i := range s.from {
		if left > 0 {
			left -= s.to[i].UnixMicro() - s.from[i].UnixMicro()
			first.from, first.to = append(first.from, s.from[i]), append(first.to, s.to[i])
			continue
		}
		second.from, second.to = append(second.from, s.from[i]), append(second.to, s.to[i])
	}
	return first, second
}

// cutAt cuts the spans at instant t: what is before it, and the rest.
func (s *spans) cutAt(t time.Time) (before, after spans) {
	for i := range s.from {
		a, b := s.from[i], s.to[i]
		if b.After(t) && a.Before(t) {
			before.add(a, t)
			after.add(t, b)
		} else if b.After(t) {
			after.add(a, b)
		} else {
			before.add(a, b)
		}
	}
	return before, after
}

// covers tells whether every instant of o is in one of the spans.
func (s *spans) covers(o spans) bool {
	for i := range o.from {
		k, _ := slices.BinarySearchFunc(s.to, o.from[i], func(end, t time.Time) int {
			if end.After(t) {
				return 1
			}
			return -1
		})
		if k == len(s.to) || s.from[k].After(o.from[i]) || s.to[k].Before(o.to[i]) {
			return false
		}
	}
	return true
}

// within is what of s lies within o.
func (s *spans) within(o spans) spans {
	var in spans
	j := 0
	for i := range s.from {
		for j < len(o.from) && !o.to[j].After(s.from[i]) {
			j++
		}
		for k := j; k < len(o.from) && o.from[k].Before(s.to[i]); k++ {
			from, to := s.from[i], s.to[i]
			if o.from[k].After(from) {
				from = o.from[k]
			}
			if o.to[k].Before(to) {
				to = o.to[k]
			}
			in.add(from, to)
		}
	}
	return in
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
