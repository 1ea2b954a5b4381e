package formulas

import (
	"math"
	"slices"
	"time"
)

// Sample is a source sensor's value at the datetime of one of its
// readings: an input it carried or an output computed from it. A NaN
// Value is a reading that serves without a value: the input is missing.
type Sample struct {
	Time  time.Time
	Value float64
}

// Link is a linked input's values through time for one request: the
// source's samples over the request's range, read once, and how old a
// sample may be. It is not safe for concurrent use.
type Link struct {
	samples   []Sample // by Time, ascending
	staleness time.Duration
	next      int // the first sample after the last t asked, for readings in ascending order
}

// NewLink returns the link of samples, ascending by Time as a store reads
// them, each good for staleness after its own datetime.
func NewLink(samples []Sample, staleness time.Duration) *Link {
	return &Link{samples: samples, staleness: staleness}
}

// At returns the value of the latest sample at or before t, provided it is
// no older than the staleness: a sample exactly staleness before t still
// serves, one a microsecond older does not. Readings asked in ascending
// order cost a step each; in any other order, a binary search.
func (l *Link) At(t time.Time) (float64, bool) {
	if l.next > 0 && l.samples[l.next-1].Time.After(t) {
		// Behind the last t asked: search from the start.
		l.next, _ = slices.BinarySearchFunc(l.samples, t, func(s Sample, t time.Time) int {
			if s.Time.After(t) {
				return 1
			}
			return -1
		})
	}
	for l.next < len(l.samples) && !l.samples[l.next].Time.After(t) {
		l.next++
	}
	if l.next == 0 {
		return 0, false
	}
	s := l.samples[l.next-1]
	if t.Sub(s.Time) > l.staleness || math.IsNaN(s.Value) {
		return 0, false
	}
	return s.Value, true
}
