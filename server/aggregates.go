package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// The limits of aggregateReadings, as the spec states them.
const (
	maxBuckets  = 10_000
	minInterval = time.Minute
	maxInterval = 31 * 24 * time.Hour
	// maxAggregateValues bounds a response's size, and so its memory: the
	// values it lists (buckets × inputs and outputs listed × fns, nulls
	// included) are at most this many, some 5 MB of JSON.
	maxAggregateValues = 200_000
)

// aggregateFns are the functions a bucket can report, in the order they
// are listed when a request names them in another.
var aggregateFns = []string{"avg", "min", "max", "sum", "count", "first", "last", "median", "range", "rate"}

// AggregateReadings cuts a range of readings into buckets and reports, per
// bucket, the functions asked for of each input and output, in one call
// to the store, which reads its hourly rollups where they serve and the
// readings elsewhere. Input statistics are encoded as their rows arrive;
// output statistics, which the store computes with the sensor's formulas,
// are encoded bucket by bucket. The response is refused, before it grows,
// when it would list more than maxAggregateValues values.
func (s *Server) AggregateReadings(ctx context.Context, req gen.AggregateReadingsRequestObject) (gen.AggregateReadingsResponseObject, error) {
	p := req.Params
	q, fns, interval, err := bucketQuery(p)
	if err != nil {
		return nil, err
	}
	sensor, err := s.store.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	enc := &bucketEncoder{fns: fns, fill: p.Fill != nil && *p.Fill == gen.Null, budget: maxAggregateValues / len(fns),
		names: newKeyNames(sensor, p.Keys)}
	if enc.fill {
		if enc.starts, err = s.reader(ctx).Buckets(ctx, q); err != nil {
			return nil, err
		}
		// Every bucket lists every input the sensor can have.
		if enc.known, err = s.sensorInputIDs(ctx, sensor); err != nil {
			return nil, err
		}
		if err := enc.spend(len(enc.starts) * len(enc.known)); err != nil {
			return nil, err
		}
	}
	var outputs store.Outputs
	if p.Outputs != nil && *p.Outputs {
		// The readings stream, too many to hold: a linked input's sources
		// are read over the whole range, each once.
		links, err := s.sensorLinks(ctx, s.reader(ctx), sensor, q.From, q.To, nil, 0)
		if err != nil {
			return nil, err
		}
		w := s.newOutputsWriter(sensor, links)
		enc.outputs = &outputAggregates{ids: w.outputIDs, byBucket: map[time.Time][]byte{}}
		enc.outputs.empty = enc.encodeOutputs(func(int) *stats.Stats { return nil })
		outputs = w
	}
	use, err := s.reader(ctx).AggregateBuckets(ctx, sensor, q, outputs, enc)
	if err != nil {
		return nil, err
	}
	return aggregatesBody{jsonBody(enc.finish()), interval, use}, nil
}

// aggregatesBody is the buckets, with the interval they are cut by.
type aggregatesBody struct {
	body     jsonBody
	interval string
	rollups  store.RollupUse
}

func (a aggregatesBody) VisitAggregateReadingsResponse(w http.ResponseWriter) error {
	w.Header().Set("X-Readings-Interval", a.interval)
	w.Header().Set("X-Rollups", string(a.rollups))
	return a.body.write(w)
}

// bucketQuery reads and checks the parameters, and returns the interval
// used as interval takes it.
func bucketQuery(p gen.AggregateReadingsParams) (store.BucketQuery, []string, string, error) {
	from, to, err := boundedRange(p.DatetimeGte, p.DatetimeLt)
	if err != nil {
		return store.BucketQuery{}, nil, "", err
	}
	q := store.BucketQuery{From: from, To: to.Add(time.Microsecond), Zone: "UTC"}
	var name string
	switch {
	case (p.Interval == nil) == (p.MaxPoints == nil):
		return q, nil, "", apperr.Errorf(apperr.Invalid, "give exactly one of interval and max_points")
	case p.Interval != nil:
		name = *p.Interval
		if q.Interval, err = parseInterval(name); err != nil {
			return q, nil, "", err
		}
	default:
		if name, q.Interval, err = pickInterval(q.To.Sub(q.From), *p.MaxPoints); err != nil {
			return q, nil, "", err
		}
	}
	if p.Tz != nil && *p.Tz != "" {
		if _, err := time.LoadLocation(*p.Tz); err != nil || *p.Tz == "Local" {
			return q, nil, "", apperr.Errorf(apperr.Invalid, "tz %q is not an IANA time zone such as Europe/London", *p.Tz)
		}
		q.Zone = *p.Tz
	}
	if n := bucketsAtMost(q.To.Sub(q.From), q.Interval); n > maxBuckets {
		return q, nil, "", apperr.Errorf(apperr.Invalid,
			"the range holds about %d buckets of %s; at most %d are returned: widen the interval or narrow the range", n, name, maxBuckets)
	}
	fns := []string{"avg", "min", "max"}
	if p.Fn != nil {
		fns = nil
		for _, fn := range strings.Split(*p.Fn, ",") {
			if !slices.Contains(aggregateFns, fn) {
				return q, nil, "", apperr.Errorf(apperr.Invalid, "fn %q is none of %s", fn, strings.Join(aggregateFns, ", "))
			}
			if !slices.Contains(fns, fn) {
				fns = append(fns, fn)
			}
		}
	}
	q.FirstLast = slices.ContainsFunc(fns, func(fn string) bool { return fn == "first" || fn == "last" || fn == "rate" })
	q.Median = slices.Contains(fns, "median")
	return q, fns, name, nil
}

// bucketsAtMost is how many buckets of interval a span can touch: one more
// than it holds, for a range that does not start on a bucket boundary.
func bucketsAtMost(span, interval time.Duration) time.Duration {
	return span/interval + 2
}

// intervalLadder is what max_points picks from: widths a chart reads
// easily, each a whole number of the next smaller where it can be.
var intervalLadder = []string{"1m", "2m", "5m", "10m", "15m", "30m", "1h", "2h", "3h", "6h", "12h", "1d", "2d", "7d", "14d", "31d"}

// pickInterval is the narrowest interval of the ladder that cuts span into
// at most maxPoints buckets.
func pickInterval(span time.Duration, maxPoints int) (string, time.Duration, error) {
	for _, name := range intervalLadder {
		d, _ := parseInterval(name)
		if bucketsAtMost(span, d) <= time.Duration(maxPoints) {
			return name, d, nil
		}
	}
	return "", 0, apperr.Errorf(apperr.Invalid,
		"even 31d buckets are more than max_points=%d over this range: raise max_points or narrow the range", maxPoints)
}

// parseInterval reads 15m, 1h, 7d…, from 1 minute to 31 days.
func parseInterval(s string) (time.Duration, error) {
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	n, err := strconv.Atoi(s[:len(s)-1])
	d := time.Duration(n) * unit
	if err != nil || unit == 0 || d < minInterval || d > maxInterval {
		return 0, apperr.Errorf(apperr.Invalid, "interval %q must be a whole number of m, h or d, from 1m to 31d", s)
	}
	return d, nil
}

// outputAggregates are a sensor's outputs aggregated per bucket, encoded.
type outputAggregates struct {
	ids      []int64
	byBucket map[time.Time][]byte // ,"outputs":{…} of each bucket with readings
	empty    []byte               // that of a bucket without
}

// Counts implements store.BucketSink: it takes the buckets to list, and
// checks against the budget that the most the outputs can list fits.
func (e *bucketEncoder) Counts(counts []store.BucketCount) error {
	if !e.fill {
		e.starts = make([]time.Time, len(counts))
	}
	e.countOf = make(map[time.Time]int64, len(counts))
	for i, c := range counts {
		if !e.fill {
			e.starts[i] = c.Bucket
		}
		e.countOf[c.Bucket] = c.Count
	}
	e.b = append(e.b, '[')
	if e.outputs == nil {
		return nil
	}
	return e.spend(len(e.starts) * len(e.outputs.ids)) // without fill, a bucket lists the outputs it has
}

// Outputs implements store.BucketSink.
func (e *bucketEncoder) Outputs(bucket time.Time, all []*stats.Stats) error {
	e.outputs.byBucket[bucket] = e.encodeOutputs(func(k int) *stats.Stats { return all[k] })
	return nil
}

// encodeOutputs encodes the outputs' statistics of a bucket.
func (e *bucketEncoder) encodeOutputs(of func(k int) *stats.Stats) []byte {
	b := []byte(`,"outputs":{`)
	first := true
	for k, id := range e.outputs.ids {
		s := of(k)
		if s == nil && !e.fill {
			continue
		}
		b = appendFns(b, !first, e.names.appendKey, id, e.fns, s)
		first = false
	}
	return append(b, '}')
}

// bucketEncoder writes the response as the inputs' statistics arrive,
// ordered by bucket and input, merging them with the buckets to list. With
// fill, every bucket lists every input and output known, null where it had
// no value; without, a bucket lists what it has.
type bucketEncoder struct {
	b       []byte
	fns     []string
	fill    bool
	starts  []time.Time         // the buckets to list
	countOf map[time.Time]int64 // readings per bucket, where there are any
	known   []int64             // with fill: the inputs every bucket lists
	outputs *outputAggregates   // nil without outputs
	names   keyNames

	budget int  // how many more inputs and outputs may be listed
	next   int  // starts[next] is the next bucket to open
	open   bool // whether starts[next-1] is open
	k      int  // with fill: known[k] is the next input to list
	n      int  // inputs listed in the open bucket
}

// spend takes n inputs or outputs listed from the budget, or refuses the
// request.
func (e *bucketEncoder) spend(n int) error {
	e.budget -= n
	if e.budget < 0 {
		return &apperr.Error{
			Code: apperr.Invalid,
			Message: fmt.Sprintf("the response would list more than %d values (buckets × inputs and outputs × fns); "+
				"narrow the range, widen the interval, ask for fewer fns, or leave out fill=null", maxAggregateValues),
			Details: map[string]any{"limit": maxAggregateValues},
		}
	}
	return nil
}

// Input implements store.BucketSink: it lists one input's statistics over
// one bucket.
func (e *bucketEncoder) Input(st *store.InputStats) error {
	// Closes and lists the buckets before st's; a row of a bucket or input
	// not to list (a reading stored since the buckets were counted) is
	// left out.
	for e.next < len(e.starts) && e.starts[e.next].Before(st.Bucket) {
		e.openNext()
	}
	if !e.open || !e.starts[e.next-1].Equal(st.Bucket) {
		if e.next == len(e.starts) || !e.starts[e.next].Equal(st.Bucket) {
			return nil
		}
		e.openNext()
	}
	if e.fill {
		for e.k < len(e.known) && e.known[e.k] < st.InputID {
			e.input(e.known[e.k], nil)
			e.k++
		}
		if e.k == len(e.known) || e.known[e.k] != st.InputID {
			return nil
		}
		e.k++
	} else if err := e.spend(1); err != nil {
		return err
	}
	e.input(st.InputID, &st.Stats)
	return nil
}

// openNext closes the open bucket, if any, and opens the next.
func (e *bucketEncoder) openNext() {
	e.close()
	start := e.starts[e.next]
	e.next++
	if e.next > 1 {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `{"datetime":"`...)
	e.b = appendDatetime(e.b, start)
	e.b = append(e.b, `","count":`...)
	e.b = strconv.AppendInt(e.b, e.countOf[start], 10)
	e.b = append(e.b, `,"inputs":{`...)
	e.open, e.k, e.n = true, 0, 0
}

func (e *bucketEncoder) input(id int64, s *stats.Stats) {
	e.b = appendFns(e.b, e.n > 0, e.names.appendKey, id, e.fns, s)
	e.n++
}

// close lists the open bucket's inputs left, with fill, and its outputs.
func (e *bucketEncoder) close() {
	if !e.open {
		return
	}
	for ; e.fill && e.k < len(e.known); e.k++ {
		e.input(e.known[e.k], nil)
	}
	e.b = append(e.b, '}')
	if e.outputs != nil {
		outputs, ok := e.outputs.byBucket[e.starts[e.next-1]]
		if !ok {
			outputs = e.outputs.empty
		}
		e.b = append(e.b, outputs...)
	}
	e.b = append(e.b, '}')
	e.open = false
}

// finish lists the buckets left and ends the array.
func (e *bucketEncoder) finish() []byte {
	for e.next < len(e.starts) {
		e.openNext()
	}
	e.close()
	return append(e.b, "]\n"...)
}

// appendFns appends "<id>":{"avg":…,…}, with null for missing values and
// the id named by appendKey.
func appendFns(b []byte, comma bool, appendKey func([]byte, int64) []byte, id int64, fns []string, s *stats.Stats) []byte {
	if comma {
		b = append(b, ',')
	}
	b = appendKey(b, id)
	b = append(b, `:{`...)
	for i, fn := range fns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, fn...)
		b = append(b, `":`...)
		if v, ok := stats.Value(fn, s); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			b = appendNumber(b, v)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

// rollupRound bounds a round of the rollups' maintainer: the hours it
// recomputes, each in one statement per table, and the time it takes.
const (
	rollupHours     = 24 // per sensor transaction
	rollupRoundMax  = 2_000
	rollupRoundTime = 5 * time.Second
)

// MaintainRollups recomputes the queued hours of rollups every interval,
// a round at a time, until ctx ends.
func (s *Server) MaintainRollups(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		start := time.Now()
		done, err := s.RecomputeRollups(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("maintain rollups", "err", err)
		}
		if done > 0 {
			s.log.Debug("rollups recomputed", "hours", done, "took", time.Since(start))
		}
	})
}

// RecomputeRollups runs a round of the rollups' maintainer: it recomputes
// queued hours, a sensor at a time, until the queue is empty (for this
// replica), rollupRoundMax hours are done or rollupRoundTime has passed,
// and tells how many hours it recomputed.
func (s *Server) RecomputeRollups(ctx context.Context) (int, error) {
	start, done := time.Now(), 0
	for done < rollupRoundMax && time.Since(start) < rollupRoundTime {
		n, err := s.store.MaintainRollups(ctx, s.rollupOutputs, rollupHours)
		done += n
		if err != nil || n < rollupHours {
			return done, err
		}
	}
	return done, nil
}

// rollupOutputs computes a sensor's outputs for its rollups, as a read
// does. A sensor with linked inputs has none: its outputs follow other
// sensors' readings, so queries always compute them from the readings.
func (s *Server) rollupOutputs(sensor store.Sensor) store.Outputs {
	if inst := sensor.Instance; inst != nil && slices.ContainsFunc(inst.Inputs, func(in store.InstanceInput) bool { return in.Link != nil }) {
		return nil
	}
	if w := s.newOutputsWriter(sensor, nil); w.outputs != nil {
		return w
	}
	return nil
}
