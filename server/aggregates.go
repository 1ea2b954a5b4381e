package server

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// The limits of aggregateReadings, as the spec states them.
const (
	maxBuckets  = 10_000
	minInterval = time.Minute
	maxInterval = 31 * 24 * time.Hour
)

// aggregateFns are the functions a bucket can report, in the order they
// are listed when a request names them in another.
var aggregateFns = []string{"avg", "min", "max", "sum", "count", "first", "last", "median", "range", "rate"}

// AggregateReadings cuts a range of readings into buckets and reports, per
// bucket, the functions asked for of each input and output. Input
// statistics come from the database; output statistics from the formulas
// evaluated on each reading as the rows stream, one bucket in memory at a
// time.
func (s *Server) AggregateReadings(ctx context.Context, req gen.AggregateReadingsRequestObject) (gen.AggregateReadingsResponseObject, error) {
	p := req.Params
	q, fns, err := bucketQuery(p)
	if err != nil {
		return nil, err
	}
	sensor, err := s.store.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	counts, err := s.reader(ctx).BucketCounts(ctx, sensor, q)
	if err != nil {
		return nil, err
	}
	inputStats, err := s.reader(ctx).InputBucketStats(ctx, sensor, q)
	if err != nil {
		return nil, err
	}
	var outputs *outputAggregates
	if p.Outputs != nil && *p.Outputs {
		if outputs, err = s.aggregateOutputs(ctx, sensor, q); err != nil {
			return nil, err
		}
	}
	fill := p.Fill != nil && *p.Fill == gen.Null
	starts := make([]time.Time, len(counts))
	for i, c := range counts {
		starts[i] = c.Bucket
	}
	if fill {
		if starts, err = s.reader(ctx).Buckets(ctx, q); err != nil {
			return nil, err
		}
	}
	return jsonBody(encodeBuckets(starts, counts, inputStats, outputs, fns, fill, instanceInputIDs(sensor))), nil
}

// bucketQuery reads and checks the parameters.
func bucketQuery(p gen.AggregateReadingsParams) (store.BucketQuery, []string, error) {
	interval, err := parseInterval(p.Interval)
	if err != nil {
		return store.BucketQuery{}, nil, err
	}
	q := store.BucketQuery{From: ceilMicro(p.DatetimeGte), To: ceilMicro(p.DatetimeLt), Interval: interval, Zone: "UTC"}
	if !q.To.After(q.From) {
		return q, nil, apperr.Errorf(apperr.Invalid, "datetime__lt must be after datetime__gte")
	}
	if p.Tz != nil && *p.Tz != "" {
		if _, err := time.LoadLocation(*p.Tz); err != nil || *p.Tz == "Local" {
			return q, nil, apperr.Errorf(apperr.Invalid, "tz %q is not an IANA time zone such as Europe/London", *p.Tz)
		}
		q.Zone = *p.Tz
	}
	// One bucket more than the range holds, for a range that does not start
	// on a bucket boundary.
	if n := q.To.Sub(q.From)/interval + 2; n > maxBuckets {
		return q, nil, apperr.Errorf(apperr.Invalid,
			"the range holds about %d buckets of %s; at most %d are returned: widen the interval or narrow the range", n, p.Interval, maxBuckets)
	}
	fns := []string{"avg", "min", "max"}
	if p.Fn != nil {
		fns = nil
		for _, fn := range strings.Split(*p.Fn, ",") {
			if !slices.Contains(aggregateFns, fn) {
				return q, nil, apperr.Errorf(apperr.Invalid, "fn %q is none of %s", fn, strings.Join(aggregateFns, ", "))
			}
			if !slices.Contains(fns, fn) {
				fns = append(fns, fn)
			}
		}
	}
	q.FirstLast = slices.ContainsFunc(fns, func(fn string) bool { return fn == "first" || fn == "last" || fn == "rate" })
	q.Median = slices.Contains(fns, "median")
	return q, fns, nil
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

// outputAggregates are the statistics of a sensor's outputs per bucket.
type outputAggregates struct {
	ids   []int64
	stats map[time.Time][]*store.Stats // by bucket, then output; nil where an output had no value
}

func (s *Server) aggregateOutputs(ctx context.Context, sensor store.Sensor, q store.BucketQuery) (*outputAggregates, error) {
	w := s.newOutputsWriter(sensor)
	agg := &outputAggregates{ids: w.outputIDs, stats: map[time.Time][]*store.Stats{}}
	if w.outputs == nil {
		return agg, nil
	}
	var (
		current time.Time
		acc     = make([]accumulator, len(w.outputIDs))
	)
	finish := func() {
		stats := make([]*store.Stats, len(acc))
		for k := range acc {
			stats[k] = acc[k].finish(q)
			acc[k] = accumulator{values: acc[k].values[:0]}
		}
		agg.stats[current] = stats
	}
	started := false
	err := s.reader(ctx).BucketReadings(ctx, sensor, q, func(bucket time.Time, r *store.Reading) error {
		if started && !bucket.Equal(current) {
			finish()
		}
		current, started = bucket, true
		w.compute(r)
		for k := range acc {
			if v, ok := w.value(k); ok {
				acc[k].add(r.Time, v, q.Median)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if started {
		finish()
	}
	return agg, nil
}

// accumulator gathers one output's values over one bucket, in time order.
type accumulator struct {
	count           int64
	sum, min, max   float64
	first, last     float64
	firstAt, lastAt time.Time
	values          []float64 // for the median only
}

func (a *accumulator) add(t time.Time, v float64, keep bool) {
	if a.count == 0 {
		a.min, a.max, a.first, a.firstAt = v, v, v, t
	}
	a.count++
	a.sum += v
	a.min, a.max = math.Min(a.min, v), math.Max(a.max, v)
	a.last, a.lastAt = v, t
	if keep {
		a.values = append(a.values, v)
	}
}

func (a *accumulator) finish(q store.BucketQuery) *store.Stats {
	if a.count == 0 {
		return nil
	}
	first, last := a.first, a.last // the accumulator is reused for the next bucket
	s := &store.Stats{
		Count: a.count, Sum: a.sum, Min: a.min, Max: a.max, Avg: a.sum / float64(a.count),
		First: &first, Last: &last, FirstAt: a.firstAt, LastAt: a.lastAt,
	}
	if q.Median {
		slices.Sort(a.values)
		n := len(a.values)
		m := a.values[n/2]
		if n%2 == 0 {
			m = (a.values[n/2-1] + m) / 2 // as percentile_cont(0.5) interpolates
		}
		s.Median = &m
	}
	return s
}

// fnValue is a function's value in s, or false for null.
func fnValue(fn string, s *store.Stats) (float64, bool) {
	if s == nil {
		return 0, fn == "count"
	}
	switch fn {
	case "avg":
		return s.Avg, true
	case "min":
		return s.Min, true
	case "max":
		return s.Max, true
	case "sum":
		return s.Sum, true
	case "count":
		return float64(s.Count), true
	case "range":
		return s.Max - s.Min, true
	case "first":
		return deref(s.First), s.First != nil
	case "last":
		return deref(s.Last), s.Last != nil
	case "median":
		return deref(s.Median), s.Median != nil
	case "rate":
		seconds := s.LastAt.Sub(s.FirstAt).Seconds()
		if s.First == nil || s.Last == nil || seconds == 0 {
			return 0, false
		}
		return (*s.Last - *s.First) / seconds, true
	}
	return 0, false
}

// encodeBuckets writes the response. With fill, every bucket lists every
// input and output known (the instance's, or those seen in the range), null
// where it had no value; without, a bucket lists what it has.
func encodeBuckets(starts []time.Time, counts []store.BucketCount, inputs []store.InputStats,
	outputs *outputAggregates, fns []string, fill bool, instanceInputs []int64) []byte {
	countOf := make(map[time.Time]int64, len(counts))
	for _, c := range counts {
		countOf[c.Bucket] = c.Count
	}
	inputsOf := map[time.Time][]store.InputStats{}
	knownInputs := slices.Clone(instanceInputs)
	for _, st := range inputs {
		inputsOf[st.Bucket] = append(inputsOf[st.Bucket], st)
		knownInputs = append(knownInputs, st.InputID)
	}
	slices.Sort(knownInputs)
	knownInputs = slices.Compact(knownInputs)

	b := []byte{'['}
	for i, start := range starts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"datetime":"`...)
		b = appendDatetime(b, start)
		b = append(b, `","count":`...)
		b = strconv.AppendInt(b, countOf[start], 10)
		b = append(b, `,"inputs":{`...)
		bucketInputs := inputsOf[start]
		if fill {
			j := 0
			for k, id := range knownInputs {
				var s *store.Stats
				for j < len(bucketInputs) && bucketInputs[j].InputID < id {
					j++
				}
				if j < len(bucketInputs) && bucketInputs[j].InputID == id {
					s = &bucketInputs[j].Stats
				}
				b = appendFns(b, k > 0, id, fns, s)
			}
		} else {
			for k := range bucketInputs {
				b = appendFns(b, k > 0, bucketInputs[k].InputID, fns, &bucketInputs[k].Stats)
			}
		}
		b = append(b, '}')
		if outputs != nil {
			b = append(b, `,"outputs":{`...)
			stats := outputs.stats[start]
			first := true
			for k, id := range outputs.ids {
				var s *store.Stats
				if stats != nil {
					s = stats[k]
				}
				if s == nil && !fill {
					continue
				}
				b = appendFns(b, !first, id, fns, s)
				first = false
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, "]\n"...)
}

// appendFns appends "<id>":{"avg":…,…}, with null for missing values.
func appendFns(b []byte, comma bool, id int64, fns []string, s *store.Stats) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `":{`...)
	for i, fn := range fns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, fn...)
		b = append(b, `":`...)
		if v, ok := fnValue(fn, s); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			b = appendNumber(b, v)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}
