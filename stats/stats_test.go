package stats_test

import (
	"math"
	"testing"
	"time"

	"github.com/sensorreadings/readings/stats"
)

var sumTests = []struct {
	name   string
	values []float64
	sum    float64
	avg    float64
}{
	{"Small", []float64{1, 2, 3, 4}, 10, 2.5},
	{"NegativeZero", []float64{math.Copysign(0, -1)}, math.Copysign(0, -1), 0},
	{"Denormal", []float64{5e-324, 5e-324}, 1e-323, 5e-324},
	{"NearMax", []float64{1.7e308, 1.7e308}, math.Inf(1), 1.7e308},
	{"MixedSigns", []float64{1.7e308, -1.7e308, 2}, 2, 2.0 / 3},
	{"MixedMagnitudes", []float64{2, 1e200}, 1e200, 5e199},
}

func TestSums(t *testing.T) {
	for _, tt := range sumTests {
		t.Run(tt.name, func(t *testing.T) {
			var s stats.Sums
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range tt.values {
				s.Add(v)
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			if got := s.Sum(); got != tt.sum {
				t.Errorf("Sum() = %v, want %v", got, tt.sum)
			}
			got := s.Mean(int64(len(tt.values)), lo, hi)
			if math.Abs(got-tt.avg) > math.Abs(tt.avg)*1e-15 {
				t.Errorf("Mean() = %v, want %v", got, tt.avg)
			}
			if got < lo || got > hi {
				t.Errorf("Mean() = %v, outside [%v, %v]", got, lo, hi)
			}
		})
	}
}

func TestMidpoint(t *testing.T) {
	for _, tt := range []struct{ low, high, want float64 }{
		{1, 2, 1.5},
		{3, 3, 3},
		{-1.7e308, 1.7e308, 0},
		{1.7e308, 1.7e308, 1.7e308},
	} {
		if got := stats.Midpoint(tt.low, tt.high); got != tt.want {
			t.Errorf("Midpoint(%v, %v) = %v, want %v", tt.low, tt.high, got, tt.want)
		}
	}
}

// TestAccumulator gathers two buckets in turn: the second starts empty,
// whatever the first held.
func TestAccumulator(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2024, 5, 1, 0, 0, s, 0, time.UTC) }
	a := stats.NewAccumulator(true)
	for i, v := range []float64{4, 1, 3, 2} {
		a.Add(at(i), v)
	}
	s := a.Finish()
	want := map[string]float64{"count": 4, "sum": 10, "avg": 2.5, "min": 1, "max": 4, "first": 4, "last": 2, "median": 2.5, "range": 3, "rate": -2.0 / 3}
	for fn, w := range want {
		if got, ok := stats.Value(fn, s); !ok || got != w {
			t.Errorf("first bucket's %s = %v, %v; want %v", fn, got, ok, w)
		}
	}
	if got := a.Finish(); got != nil {
		t.Errorf("Finish of an empty bucket = %+v, want nil", got)
	}
	if got, ok := stats.Value("count", nil); !ok || got != 0 {
		t.Errorf("count of no values = %v, %v; want 0", got, ok)
	}
	if _, ok := stats.Value("avg", nil); ok {
		t.Errorf("avg of no values has a value; want null")
	}
	a.Add(at(10), 7)
	s = a.Finish()
	if got, _ := stats.Value("median", s); got != 7 {
		t.Errorf("second bucket's median = %v, want 7", got)
	}
	if _, ok := stats.Value("rate", s); ok {
		t.Errorf("rate of one value has a value; want null")
	}
}

// TestMergeParts checks that parts merged in any order give what adding
// every value in time order gives, as rollups' hours merge into a bucket.
func TestMergeParts(t *testing.T) {
	values := []float64{3, -1, 8, 0.5, 1e300, -7, 2, 2}
	start := time.Date(2024, 3, 31, 0, 0, 0, 0, time.UTC)
	whole := stats.NewAccumulator(false)
	for i, v := range values {
		whole.Add(start.Add(time.Duration(i)*time.Minute), v)
	}
	want := whole.Finish()
	for _, cuts := range [][]int{{0, 8}, {0, 3, 8}, {0, 1, 2, 5, 8}} {
		var parts []stats.Partial
		for c := 1; c < len(cuts); c++ {
			var p stats.Partial
			for i := cuts[c-1]; i < cuts[c]; i++ {
				p.Add(start.Add(time.Duration(i)*time.Minute), values[i])
			}
			parts = append(parts, p)
		}
		merged := stats.NewAccumulator(false)
		for i := len(parts) - 1; i >= 0; i-- { // latest first
			merged.Merge(parts[i])
		}
		got := merged.Finish()
		if got.Count != want.Count || got.Sum != want.Sum || got.Min != want.Min || got.Max != want.Max ||
			*got.First != *want.First || *got.Last != *want.Last || !got.FirstAt.Equal(want.FirstAt) || !got.LastAt.Equal(want.LastAt) {
			t.Errorf("cuts %v: merged %+v (first %v, last %v), want %+v (first %v, last %v)", cuts, *got, *got.First, *got.Last, *want, *want.First, *want.Last)
		}
	}
}

// TestMergeCore merges parts as Merge does but for the first and last
// values, which it leaves as they were.
func TestMergeCore(t *testing.T) {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	parts := [][]float64{{3, -1}, {}, {7, 0x1p1000}, {-0.5}}
	var merged, core stats.Partial
	for k, values := range parts {
		var p stats.Partial
		for i, v := range values {
			p.Add(at.Add(time.Duration(10*k+i)*time.Minute), v)
		}
		merged.Merge(p)
		core.MergeCore(&p)
	}
	if core.Count != merged.Count || core.Sums != merged.Sums || core.Min != merged.Min || core.Max != merged.Max {
		t.Errorf("MergeCore = %+v, want Merge's count, sums, min and max: %+v", core, merged)
	}
	if core.First != 3 || core.Last != -1 {
		t.Errorf("MergeCore's first and last = %v, %v; want those of the first part merged, 3 and -1", core.First, core.Last)
	}
}

// TestMergeEnds takes the minimum, maximum, first and last as Merge does,
// in any order of the parts, and leaves the count and sums as they were.
func TestMergeEnds(t *testing.T) {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	negZero := math.Copysign(0, -1)
	parts := [][]float64{{3, 0}, {}, {7, 0x1p1000}, {negZero, -0.5}}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
		var merged, ends stats.Partial
		ends.Add(at.Add(-time.Minute), 5) // a value only its own part holds
		merged.Add(at.Add(-time.Minute), 5)
		count, sums := ends.Count, ends.Sums
		for _, k := range order {
			var p stats.Partial
			for i, v := range parts[k] {
				p.Add(at.Add(time.Duration(10*k+i)*time.Minute), v)
			}
			merged.Merge(p)
			ends.MergeEnds(&p)
		}
		if ends.Count != count || ends.Sums != sums {
			t.Errorf("order %v: MergeEnds changed the count and sums to %v, %+v; want %v, %+v", order, ends.Count, ends.Sums, count, sums)
		}
		if math.Float64bits(ends.Min) != math.Float64bits(merged.Min) || ends.Max != merged.Max || ends.First != merged.First || ends.Last != merged.Last ||
			!ends.FirstAt.Equal(merged.FirstAt) || !ends.LastAt.Equal(merged.LastAt) {
			t.Errorf("order %v: MergeEnds = %+v, want Merge's min, max, first and last: %+v", order, ends, merged)
		}
	}
}

func TestStatsInto(t *testing.T) {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var p stats.Partial
	var s stats.Stats
	if p.StatsInto(&s) {
		t.Errorf("StatsInto of no values = true, %+v; want false", s)
	}
	for i, v := range []float64{3, -1, 0x1p1000} {
		p.Add(at.Add(time.Duration(i)*time.Minute), v)
	}
	median := 1.0
	s.Median = &median // left from a reuse
	want := p.Stats()
	if !p.StatsInto(&s) || s.Count != want.Count || s.Sum != want.Sum || s.Avg != want.Avg || s.Min != want.Min || s.Max != want.Max ||
		*s.First != *want.First || *s.Last != *want.Last || s.FirstAt != want.FirstAt || s.LastAt != want.LastAt || s.Median != nil {
		t.Errorf("StatsInto = %+v, want %+v", s, *want)
	}
}

// TestPartialSignedZeros holds Add and Merge to math.Min's and math.Max's
// rules: -0 is below +0, whichever comes first.
func TestPartialSignedZeros(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tt := range []struct {
		name   string
		values []float64
	}{
		{"NegativeFirst", []float64{negZero, 0}},
		{"PositiveFirst", []float64{0, negZero}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var added, merged stats.Partial
			for i, v := range tt.values {
				at := time.Unix(int64(i), 0)
				added.Add(at, v)
				var one stats.Partial
				one.Add(at, v)
				merged.Merge(one)
			}
			for _, p := range []stats.Partial{added, merged} {
				if !math.Signbit(p.Min) || math.Signbit(p.Max) {
					t.Errorf("Min, Max = %v, %v; want -0, 0", p.Min, p.Max)
				}
			}
		})
	}
}

// TestAddCore adds values as Add does, but for the first and last values
// and their times, which it leaves as they were.
func TestAddCore(t *testing.T) {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	negZero := math.Copysign(0, -1)
	for _, values := range [][]float64{
		{0.1, 0.2, 0.3},
		{negZero},
		{negZero, 0},
		{3, -0x1p1000, 7, 0x1p1000, -0.5},
		{math.MaxFloat64, math.MaxFloat64},
	} {
		var added, core stats.Partial
		for i, v := range values {
			added.Add(at.Add(time.Duration(i)*time.Minute), v)
			core.AddCore(v)
		}
		if core.Count != added.Count || math.Float64bits(core.Sums.Lo) != math.Float64bits(added.Sums.Lo) || core.Sums.Hi != added.Sums.Hi ||
			math.Float64bits(core.Min) != math.Float64bits(added.Min) || math.Float64bits(core.Max) != math.Float64bits(added.Max) {
			t.Errorf("AddCore of %v = %+v, want Add's count, sums, min and max: %+v", values, core, added)
		}
		if core.First != 0 || core.Last != 0 || !core.FirstAt.IsZero() || !core.LastAt.IsZero() {
			t.Errorf("AddCore of %v kept first and last values %+v, want none", values, core)
		}
	}
}
