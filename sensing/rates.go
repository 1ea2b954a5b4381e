package sensing

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/sensorreadings/readings/store"
)

// Rate rules watch how fast a target moves: the change of its value over
// the rule's window, per the rule's unit of time, computed from the first
// and the last value of the window (the reading evaluated): (v − v₀) /
// (t − t₀) × per, where v₀ is the target's oldest value at or after
// t − window. A window with no value before the reading's gives no rate,
// which steps nothing. Values a flag rejects are not in the window.

// rateSeries is a target's values over the windows of a write, ascending.
type rateSeries struct {
	t []time.Time
	v []float64
}

// rates are the series of the targets of a sensor's rate rules.
type rates map[int64]*rateSeries

// maxWindow is the longest window of the rules, 0 without rate rules.
func maxWindow(rules []store.AlarmRule) time.Duration {
	var w int64
	for _, r := range rules {
		w = max(w, r.Window)
	}
	return time.Duration(w) * time.Second
}

// loadRates reads the values of the targets of the rate rules from the
// readings stored from the start of the first window to last, as the
// rules see them: without the values a flag rejects, when flagged says
// there may be some. It returns nil without rate rules.
//
// A write of readings newer than any stored (appending), the common case,
// reads only the values that can be the first of a window: those from
// the start of the first window to the start of the last, and the one
// after; its evaluation adds its own values as it goes (rates.add),
// instead of reading back and computing again what it wrote.
func (s *Service) loadRates(ctx context.Context, tx *store.Tx, sensor store.Sensor, rules []store.AlarmRule, first, last time.Time, flagged, appending bool) (rates, error) {
	window := maxWindow(rules)
	if window == 0 {
		return nil, nil
	}
	from := first.Add(-window)
	var stored []store.Reading
	keep := func(r *store.Reading) error {
		stored = append(stored, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		return nil
	}
	var err error
	if appending {
		starts := last.Add(-window)
		if err = tx.ListReadings(ctx, sensor, store.ReadingQuery{From: from, To: starts}, keep); err == nil {
			err = tx.ListReadings(ctx, sensor, store.ReadingQuery{From: starts.Add(time.Microsecond), To: first.Add(-time.Microsecond), Limit: 1}, keep)
		}
	} else {
		err = tx.ListReadings(ctx, sensor, store.ReadingQuery{From: from, To: last}, keep)
	}
	out := rates{}
	for _, r := range rules {
		if r.Window > 0 {
			out[r.TargetID] = &rateSeries{}
		}
	}
	if err != nil || len(stored) == 0 {
		return out, err
	}
	var fs *flagSet
	if flagged {
		flags, err := tx.SensorFlags(ctx, sensor.ID, from, last, nil)
		if err != nil {
			return nil, err
		}
		fs = newFlagSet(flags)
	}
	at := make([]time.Time, len(stored))
	for i := range stored {
		at[i] = stored[i].Time
	}
	vals, err := s.newValues(ctx, tx, sensor, at)
	if err != nil {
		return nil, err
	}
	for i := range stored {
		r := &stored[i]
		if fs != nil && len(fs.lookup(r.Time)) > 0 {
			var whole bool
			if r, whole = fs.without(r); whole {
				continue
			}
		}
		vals.compute(r)
		for id, series := range out {
			if v, ok := vals.value(id); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				series.t, series.v = append(series.t, r.Time), append(series.v, v)
			}
		}
	}
	return out, nil
}

// rate is the rate of rule's target at t, where its value is v: NaN when
// its window holds no value before t's.
func (rs rates) rate(rule store.AlarmRule, t time.Time, v float64) float64 {
	series := rs[rule.TargetID]
	if series == nil {
		return math.NaN()
	}
	start := t.Add(-time.Duration(rule.Window) * time.Second)
	j, _ := slices.BinarySearchFunc(series.t, start, time.Time.Compare)
	if j == len(series.t) || !series.t[j].Before(t) {
		return math.NaN()
	}
	return (v - series.v[j]) / t.Sub(series.t[j]).Seconds() * float64(rule.Per)
}

// add appends target id's value v at t, later than any it has, if a rate
// rule watches the target.
func (rs rates) add(id int64, t time.Time, v float64) {
	if series := rs[id]; series != nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		series.t, series.v = append(series.t, t), append(series.v, v)
	}
}
