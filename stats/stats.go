// Package stats holds the statistics a bucket of values reports (count,
// sum, mean, extremes, first and last, median, rate) and how they are
// computed so that any finite float64 values give an answer: sums that
// cannot overflow, a mean inside [min, max], a median that stays finite.
// The store asks PostgreSQL for the inputs' statistics in these terms; the
// server accumulates the outputs', which only exist once the formulas have
// run. It knows nothing of SQL or HTTP.
package stats

import (
	"math"
	"slices"
	"time"
)

// Stats are the statistics of one series over one bucket. Median, First
// and Last are nil unless asked for.
type Stats struct {
	Count           int64
	Sum, Min, Max   float64
	Avg             float64
	First, Last     *float64
	Median          *float64
	FirstAt, LastAt time.Time
}

// Value is the value of function fn (avg, min, max, sum, count, range,
// first, last, median, rate) in s, or false for null: a bucket without
// values has a count of 0 and nothing else.
func Value(fn string, s *Stats) (float64, bool) {
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
		return valueOf(s.First)
	case "last":
		return valueOf(s.Last)
	case "median":
		return valueOf(s.Median)
	case "rate":
		seconds := s.LastAt.Sub(s.FirstAt).Seconds()
		if s.First == nil || s.Last == nil || seconds == 0 {
			return 0, false
		}
		return (*s.Last - *s.First) / seconds, true
	}
	return 0, false
}

func valueOf(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// SplitAt is the magnitude from which Sums scales a value down: 2^960, so
// that 2^64 values below it cannot overflow their sum, and values above it,
// scaled by 2^-960 (exactly, being a power of two), are at most 2^64 each.
const SplitAt = 0x1p960

// Sums adds float64 values in two parts so that no finite values can make
// the addition overflow: Lo is the sum of the values below SplitAt in
// magnitude, Hi that of the others scaled down by SplitAt. (PostgreSQL's
// float8 sum fails with "value out of range" where the plain sum would
// overflow, so the store asks for the inputs' sums in these two parts.)
type Sums struct {
	Lo, Hi float64
}

// Add adds v.
func (s *Sums) Add(v float64) {
	if math.Abs(v) < SplitAt {
		s.Lo += v
	} else {
		s.Hi += v / SplitAt
	}
}

// Sum is the sum of the values, ±Inf when it is beyond float64.
func (s Sums) Sum() float64 {
	if s.Hi == 0 {
		return s.Lo // keeps the sign of a sum of -0
	}
	return s.Lo + s.Hi*SplitAt
}

// Mean is the mean of n values from min to max: always finite, since each
// part is divided before the parts are added; rounding cannot take it out
// of [min, max].
func (s Sums) Mean(n int64, min, max float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	mean := s.Lo / float64(n)
	if s.Hi != 0 {
		mean += s.Hi / float64(n) * SplitAt
	}
	return math.Min(math.Max(mean, min), max)
}

// Midpoint is the median of an even number of values from its two middle
// ones, as percentile_cont interpolates them, but finite whatever they are.
func Midpoint(low, high float64) float64 {
	if low == high {
		return low
	}
	if d := high - low; !math.IsInf(d, 0) {
		return low + d*0.5
	}
	return low/2 + high/2
}

// Median is the median of values, which it sorts; there must be some.
func Median(values []float64) float64 {
	slices.Sort(values)
	n := len(values)
	m := values[n/2]
	if n%2 == 0 {
		m = Midpoint(values[n/2-1], m)
	}
	return m
}

// Accumulator gathers one series' values over one bucket, in time order,
// and is reused bucket after bucket.
type Accumulator struct {
	part   Partial
	values []float64 // for the median only
	median bool
}

// NewAccumulator returns an Accumulator; with median it keeps every value
// of a bucket, which the median needs.
func NewAccumulator(median bool) Accumulator { return Accumulator{median: median} }

// Add adds the value v, of time t.
func (a *Accumulator) Add(t time.Time, v float64) {
	a.part.Add(t, v)
	if a.median {
		a.values = append(a.values, v)
	}
}

// Merge adds the values p summarizes. Unlike Add it takes parts in any
// order: the first and last values are those of the earliest and latest
// times. An Accumulator that keeps values for the median cannot merge.
func (a *Accumulator) Merge(p Partial) { a.part.Merge(p) }

// Finish returns the bucket's statistics, nil when it had no value, and
// starts the next bucket.
func (a *Accumulator) Finish() *Stats {
	s := a.part.Stats()
	if s == nil {
		return nil
	}
	if a.median {
		m := Median(a.values)
		s.Median = &m
	}
	*a = Accumulator{values: a.values[:0], median: a.median}
	return s
}

// Partial is what an Accumulator keeps of a series' values over part of a
// bucket (an hour of a rollup, say): enough to merge parts into the
// bucket's statistics, the median excepted.
type Partial struct {
	Count           int64
	Sums            Sums
	Min, Max        float64
	First, Last     float64
	FirstAt, LastAt time.Time
}

// Add adds the value v, of time t, later than the values added before.
func (p *Partial) Add(t time.Time, v float64) {
	if p.Count == 0 {
		p.Min, p.Max, p.First, p.FirstAt = v, v, v, t
		p.Sums = Sums{}
		if math.Abs(v) < SplitAt {
			p.Sums.Lo = math.Copysign(0, v) // a sum of -0 is -0, as PostgreSQL's
		}
	}
	p.Count++
	p.Sums.Add(v)
	// The builtins keep math.Min's and math.Max's rules (-0 below +0, NaN
	// wins) and are inlined: this runs for every value a batch rolls up.
	p.Min, p.Max = min(p.Min, v), max(p.Max, v)
	p.Last, p.LastAt = v, t
}

// Stats returns the statistics of the values p summarizes but their
// median; nil without values.
func (p Partial) Stats() *Stats {
	if p.Count == 0 {
		return nil
	}
	return &Stats{
		Count: p.Count, Sum: p.Sums.Sum(), Min: p.Min, Max: p.Max, Avg: p.Sums.Mean(p.Count, p.Min, p.Max),
		First: &p.First, Last: &p.Last, FirstAt: p.FirstAt, LastAt: p.LastAt,
	}
}

// StatsInto sets s to what Stats returns, its First and Last pointing
// into p, and says whether p has values; it allocates nothing, for a
// caller that reads s before p changes.
func (p *Partial) StatsInto(s *Stats) bool {
	if p.Count == 0 {
		return false
	}
	*s = Stats{
		Count: p.Count, Sum: p.Sums.Sum(), Min: p.Min, Max: p.Max, Avg: p.Sums.Mean(p.Count, p.Min, p.Max),
		First: &p.First, Last: &p.Last, FirstAt: p.FirstAt, LastAt: p.LastAt,
	}
	return true
}

// AddAny adds the value v, of time t, whether or not it is later than
// the values added before.
func (p *Partial) AddAny(t time.Time, v float64) {
	if p.Count > 0 && t.Before(p.LastAt) {
		var one Partial
		one.Add(t, v)
		p.Merge(one)
		return
	}
	p.Add(t, v)
}

// AddCore adds the value v to the count, sum, minimum and maximum,
// leaving the first and last values as they are: for an aggregate that
// does not ask for them, which then adds values in the order they come,
// without comparing their times.
func (p *Partial) AddCore(v float64) {
	if p.Count == 0 {
		p.Min, p.Max = v, v
		p.Sums = Sums{}
		if math.Abs(v) < SplitAt {
			p.Sums.Lo = math.Copysign(0, v) // as Add
		}
	}
	p.Count++
	p.Sums.Add(v)
	p.Min, p.Max = min(p.Min, v), max(p.Max, v)
}

// MergeCore adds the count, sum, minimum and maximum of the values o
// summarizes, leaving the first and last values as they are: for an
// aggregate that does not ask for them.
func (p *Partial) MergeCore(o *Partial) {
	switch {
	case o.Count == 0:
		return
	case p.Count == 0:
		*p = *o
		return
	}
	p.Count += o.Count
	p.Sums.Lo += o.Sums.Lo
	p.Sums.Hi += o.Sums.Hi
	p.Min, p.Max = min(p.Min, o.Min), max(p.Max, o.Max)
}

// MergeEnds takes the minimum, maximum, first and last of the values o
// summarizes into p's, as Merge does, leaving p's count and sums: for p
// whose count and sums already hold o's values.
func (p *Partial) MergeEnds(o *Partial) {
	switch {
	case o.Count == 0:
		return
	case p.Count == 0:
		p.Min, p.Max, p.First, p.FirstAt, p.Last, p.LastAt = o.Min, o.Max, o.First, o.FirstAt, o.Last, o.LastAt
		return
	}
	p.Min, p.Max = min(p.Min, o.Min), max(p.Max, o.Max)
	if o.FirstAt.Before(p.FirstAt) {
		p.First, p.FirstAt = o.First, o.FirstAt
	}
	if !o.LastAt.Before(p.LastAt) {
		p.Last, p.LastAt = o.Last, o.LastAt
	}
}

// Merge adds the values o summarizes, of any times.
func (p *Partial) Merge(o Partial) {
	switch {
	case o.Count == 0:
		return
	case p.Count == 0:
		*p = o
		return
	}
	p.Count += o.Count
	p.Sums.Lo += o.Sums.Lo
	p.Sums.Hi += o.Sums.Hi
	p.Min, p.Max = min(p.Min, o.Min), max(p.Max, o.Max)
	if o.FirstAt.Before(p.FirstAt) {
		p.First, p.FirstAt = o.First, o.FirstAt
	}
	if !o.LastAt.Before(p.LastAt) {
		p.Last, p.LastAt = o.Last, o.LastAt
	}
}
