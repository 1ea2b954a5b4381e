package sensing

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sensorreadings/readings/store"
)

// Rate rules watch how fast a target moves: the change of its value over
// the rule's window, per the rule's unit of time, computed from the first
// and the last value of the window (the reading evaluated): (v − v₀) /
// (t − t₀) × per, where v₀ is the target's oldest value at or after
// t − window. A window with no value before the reading's gives no rate,
// which steps nothing. Values a flag rejects are not in the window;
// suspect ones are.
//
// What a rule keeps. v₀ of any later reading is one of the values from
// the sensor's newest reading less the window to the newest, so each rate
// rule keeps exactly those between writes (store.RateWindow), held in
// the memory of the service that wrote them under a stamp stored with the
// rule's state (heldWindows), and a write after the newest reading reads
// no reading back: it starts from what its rules kept, adds its own
// values as it evaluates them, and keeps the windows they leave. What is
// kept is what reading the window back would give, or nothing, in which
// case the write reads the readings:
//   - a sensor with linked inputs keeps nothing, since its sources change
//     its outputs without writing to it;
//   - an edit that changes what a window holds (a flag set or cleared, a
//     delete, the sensor's formulas, links or rules) forgets what its
//     rules kept (recheck, DeleteReadings), and a write whose checks
//     reject a stored reading reads its windows back;
//   - what is kept is checked against the sensor's newest reading and its
//     instance's version before it is used;
//   - a late write reads its windows back as before, and patches what is
//     kept with its stretch of them;
//   - a write through a service that does not hold the window (another
//     replica's, or the first after a restart) reads it back;
//   - a window is kept only while copying it costs a write little beside
//     reading it back (keptMax); one that grows beyond is read back again.

// rateSeries is a target's values over the windows of a write, ascending,
// at instants in Unix microseconds: a write's readings add a thousand
// values to windows of thousands, which time.Time, three times the size
// and a pointer for the collector to follow, would make cost more than
// the evaluation.
type rateSeries struct {
	t []int64
	v []float64
}

// add appends the value v at us, later than any the series has; a value
// that is not a finite number is not in any window.
func (s *rateSeries) add(us int64, v float64) {
	if s != nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		s.t, s.v = append(s.t, us), append(s.v, v)
	}
}

// rateCursor computes one rate rule's rates over its target's series,
// reading after reading.
type rateCursor struct {
	series *rateSeries // nil: the target has none, and no rate
	window int64       // µs
	per    float64     // the rule's unit of time, in seconds
	// at is where the window of the last rate computed starts in
	// series.t: readings are evaluated in order, so the next one's starts
	// there or after, a step or two on.
	at int
}

// rate is the rate at us, Unix microseconds, where the target's value is
// v: NaN when the window holds no value before us.
func (c *rateCursor) rate(us int64, v float64) float64 {
	s := c.series
	if s == nil {
		return math.NaN()
	}
	from := us - c.window
	j := c.at
	if j > len(s.t) || j > 0 && s.t[j-1] >= from { // an earlier window: search
		j, _ = slices.BinarySearch(s.t, from)
	}
	for j < len(s.t) && s.t[j] < from {
		j++
	}
	c.at = j
	if j == len(s.t) || s.t[j] >= us {
		return math.NaN()
	}
	return (v - s.v[j]) / (time.Duration(us-s.t[j]) * time.Microsecond).Seconds() * c.per
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

func window(r store.AlarmRule) time.Duration { return time.Duration(r.Window) * time.Second }

// cursor is rule's rateCursor over its target's series.
func (rs rates) cursor(rule store.AlarmRule) rateCursor {
	return rateCursor{series: rs[rule.TargetID], window: rule.Window * int64(time.Second/time.Microsecond), per: float64(rule.Per)}
}

// newRates has an empty series for each target of the rate rules.
func newRates(rules []store.AlarmRule) rates {
	out := rates{}
	for _, r := range rules {
		if r.Window > 0 {
			out[r.TargetID] = &rateSeries{}
		}
	}
	return out
}

// keptMax bounds the values a rule keeps after a write of n readings: at
// 8 a reading written, copying them twice (16 bytes each: out of the
// holds, and back) costs the write little, and reading them back when
// they are not held costs 8 rows a reading written; 64 whatever the
// write; 8,192 (128 kB held) at most.
func keptMax(n int) int { return min(max(64, 8*n), 8192) }

// windowsAt is where what a write's rate rules keep stands before a chunk
// of its readings is evaluated.
type windowsAt struct {
	// through is the newest instant stored before the chunk's readings:
	// the sensor's newest before the write, or the last of the chunk
	// before, whichever is later; nil when none is.
	through *time.Time
	// stale: the write's checks rejected a stored reading, which what is
	// kept may hold.
	stale bool
	// flagged: a flag is in force on some of the sensor's readings, so
	// the windows read back are read with the flags.
	flagged bool
}

// after is where the windows stand after a chunk whose last reading is
// at last.
func (w windowsAt) after(last time.Time) windowsAt {
	if w.through == nil || last.After(*w.through) {
		w.through = &last
	}
	return w
}

// keeps tells whether the sensor's rules may keep their windows: not
// with linked inputs.
func keeps(sensor store.Sensor) bool {
	if sensor.Instance == nil {
		return true
	}
	for _, in := range sensor.Instance.Inputs {
		if in.Link != nil {
			return false
		}
	}
	return true
}

func instanceVersion(sensor store.Sensor) int64 {
	if sensor.Instance == nil {
		return 0
	}
	return sensor.Instance.Version
}

// loadRates returns the series of the targets of the rate rules for the
// evaluation of a chunk of a write's readings, at the instants at, and
// whether they hold every value of the windows the chunk leaves, for the
// rules to keep. It returns nil without rate rules.
//
// A chunk newer than any stored reading (appending), the common case,
// starts from what the rules kept, when it stands at w and nothing
// stopped it; or reads back the whole windows of its first reading, when
// keeping them is worth it (worthKeeping); or else reads only the values
// that can be the first of a window: those from the start of the first
// window to the start of the last, and the one after. Its evaluation then
// adds its own values as it goes (rates.add). Any other chunk reads its
// windows whole, its own values stored among them. What the rules kept
// is copied into memory room lends, which the series returned use.
func (s *Service) loadRates(ctx context.Context, tx *store.Tx, sensor store.Sensor, rules []store.AlarmRule, readings []store.Reading, w windowsAt, appending bool, room *keptRoom) (rates, bool, error) {
	window := maxWindow(rules)
	if window == 0 {
		return nil, false, nil
	}
	first, last := readings[0].Time, readings[len(readings)-1].Time
	from := first.Add(-window)
	out := newRates(rules)
	keep := keeps(sensor)
	switch {
	case appending && w.through == nil:
		return out, keep, nil // nothing stored before
	case appending && keep && !w.stale && out.fromKept(rules, kept(rules, *w.through, instanceVersion(sensor), len(readings), room), first):
		return out, true, nil
	case appending && keep && worthKeeping(window, first, last, len(readings), *w.through):
		err := s.readRates(ctx, tx, sensor, out, w.flagged, from, last, store.ReadingQuery{From: from, To: first.Add(-time.Microsecond)})
		return out, true, err
	case appending:
		starts := last.Add(-window)
		err := s.readRates(ctx, tx, sensor, out, w.flagged, from, last,
			store.ReadingQuery{From: from, To: starts},
			store.ReadingQuery{From: starts.Add(time.Microsecond), To: first.Add(-time.Microsecond), Limit: 1})
		return out, false, err
	}
	err := s.readRates(ctx, tx, sensor, out, w.flagged, from, last, store.ReadingQuery{From: from, To: last})
	return out, keep && (w.through == nil || !last.Before(*w.through)), err
}

// worthKeeping tells whether reading back the whole windows of a write of
// n readings from first to last, after the sensor's newest reading at
// through, to keep them, is worth it: when, at the pace of the write (or
// from through to its reading), the longest window holds at most keptMax
// readings.
func worthKeeping(window time.Duration, first, last time.Time, n int, through time.Time) bool {
	span, steps := last.Sub(first), n-1
	if n == 1 {
		span, steps = first.Sub(through), 1
	}
	if span <= 0 {
		return false
	}
	return float64(window)/float64(span)*float64(steps) <= float64(keptMax(n))
}

// readRates adds to out the values of its targets in the sensor's stored
// readings that the queries select, in order, as the rules see them:
// without the values a flag rejects, when flagged says there may be some
// (flags read from from to to).
func (s *Service) readRates(ctx context.Context, tx *store.Tx, sensor store.Sensor, out rates, flagged bool, from, to time.Time, queries ...store.ReadingQuery) error {
	var stored []store.Reading
	keep := func(r *store.Reading) error {
		stored = append(stored, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		return nil
	}
	for _, q := range queries {
		if err := tx.ListReadings(ctx, sensor, q, keep); err != nil {
			return err
		}
	}
	if len(stored) == 0 {
		return nil
	}
	var fs *flagSet
	if flagged {
		flags, err := tx.SensorFlags(ctx, sensor.ID, from, to, nil)
		if err != nil {
			return err
		}
		fs = newFlagSet(flags)
	}
	at := make([]time.Time, len(stored))
	for i := range stored {
		at[i] = stored[i].Time
	}
	vals, err := s.newValues(ctx, tx, sensor, at, slices.Collect(maps.Keys(out)))
	if err != nil {
		return err
	}
	for i := range stored {
		r := &stored[i]
		if fs != nil && len(fs.lookup(r.Time)) > 0 {
			var whole bool
			if r, whole = fs.without(r); whole || len(r.InputIDs) == 0 {
				continue
			}
		}
		vals.compute(r)
		for id := range out {
			if v, ok := vals.value(id); ok {
				out.add(id, r.Time, v)
			}
		}
	}
	return nil
}

// kept is what each rule keeps, copied with room for n more values into
// memory room lends (nil: new memory), where it stands at through with
// the instance at version; nil for a rule whose window is not kept or
// does not.
func kept(rules []store.AlarmRule, through time.Time, version int64, n int, room *keptRoom) []*store.RateWindow {
	out := make([]*store.RateWindow, len(rules))
	for i, r := range rules {
		if r.Window == 0 || r.KeptWindow == nil {
			continue
		}
		if w := keptWindow(r, n, room.lend()); w.Through.Equal(through) && w.Version == version {
			out[i] = &w
		}
	}
	return out
}

// keptWindow is what rule r keeps (KeptWindow, not nil), copied with room
// for n more values, into into's memory when it has the room (into, when
// not nil, is left holding the memory copied into), since the write
// appends to it: its window's values.
func keptWindow(r store.AlarmRule, n int, into *store.RateWindow) store.RateWindow {
	var mem store.RateWindow
	if into != nil {
		mem = *into
	}
	h := r.KeptWindow
	w := *h
	w.Micros = append(slices.Grow(mem.Micros[:0], len(h.Micros)+n), h.Micros...)
	w.Values = append(slices.Grow(mem.Values[:0], len(h.Values)+n), h.Values...)
	if into != nil {
		into.Micros, into.Values = w.Micros, w.Values
	}
	k, _ := slices.BinarySearch(w.Micros, w.Through.Add(-window(r)).UnixMicro())
	w.Micros, w.Values = w.Micros[k:], w.Values[k:]
	return w
}

// keptRoom lends the memory that what rules keep is copied into, write
// after write (Service.keptMemory): a write of a thousand readings to an
// hour's window a second apart would otherwise allocate some 75 kB for it
// each time, for the collector to sweep.
type keptRoom struct {
	pool *sync.Pool // of *store.RateWindow
	lent []*store.RateWindow
}

// lend is memory to copy into until giveBack; nil for a nil room.
func (k *keptRoom) lend() *store.RateWindow {
	if k == nil {
		return nil
	}
	w, _ := k.pool.Get().(*store.RateWindow)
	if w == nil {
		w = &store.RateWindow{}
	}
	k.lent = append(k.lent, w)
	return w
}

// giveBack returns the memory lent, which nothing may hold any more.
func (k *keptRoom) giveBack() {
	for _, w := range k.lent {
		k.pool.Put(w)
	}
	k.lent = nil
}

// fromKept fills rs from what the rules keep, of each target the longest
// window, without the values at or after first, which the write replaces
// (appending over them, in the room kept left). It says whether every
// rate rule keeps its window.
func (rs rates) fromKept(rules []store.AlarmRule, kept []*store.RateWindow, first time.Time) bool {
	longest := map[int64]int{} // target -> index of its rule of the longest window
	for i, r := range rules {
		if r.Window == 0 {
			continue
		}
		if kept[i] == nil {
			return false
		}
		if j, ok := longest[r.TargetID]; !ok || r.Window > rules[j].Window {
			longest[r.TargetID] = i
		}
	}
	for id, i := range longest {
		w := kept[i]
		n, _ := slices.BinarySearch(w.Micros, first.UnixMicro())
		rs[id].t, rs[id].v = w.Micros[:n], w.Values[:n]
	}
	return true
}

// keep sets what each rate rule keeps after a chunk of a write of n
// readings, the last at last, which stood at w: its window's values from
// rs when they hold them all (full), else, after a late chunk (from first
// to last) that the kept windows stood at, those windows with the
// chunk's stretch taken from rs, else nothing.
func (rs rates) keep(rules []store.AlarmRule, sensor store.Sensor, w windowsAt, first, last time.Time, n int, full bool) {
	if rs == nil {
		return
	}
	version := instanceVersion(sensor)
	var patch []*store.RateWindow
	if !full && keeps(sensor) && !w.stale && w.through != nil && last.Before(*w.through) {
		patch = kept(rules, *w.through, version, 0, nil)
	}
	through := w.after(last).through
	for i := range rules {
		r := &rules[i]
		if r.Window == 0 {
			continue
		}
		var next *store.RateWindow
		series := rs[r.TargetID]
		switch {
		case full:
			j, _ := slices.BinarySearch(series.t, through.Add(-window(*r)).UnixMicro())
			next = &store.RateWindow{Through: *through, Version: version, Micros: series.t[j:], Values: series.v[j:]}
		case patch != nil && patch[i] != nil:
			old := patch[i]
			a, _ := slices.BinarySearch(old.Micros, first.UnixMicro())
			b, _ := slices.BinarySearch(old.Micros, last.UnixMicro()+1)
			c, _ := slices.BinarySearch(series.t, later(first, old.Through.Add(-window(*r))).UnixMicro())
			d, _ := slices.BinarySearch(series.t, last.UnixMicro()+1)
			next = &store.RateWindow{Through: old.Through, Version: version,
				Micros: slices.Concat(old.Micros[:a], series.t[c:d], old.Micros[b:]),
				Values: slices.Concat(old.Values[:a], series.v[c:d], old.Values[b:])}
		}
		switch {
		case next != nil && len(next.Micros) <= keptMax(n):
			keepWindow(r, *next)
		case r.RateStamp != 0 || r.KeptWindow != nil:
			r.RateStamp, r.KeptWindow, r.KeptChanged = 0, nil, true
		}
	}
}

// keepWindow sets what rule r keeps to next. A rule whose window the
// write took from the holds (KeptWindow), or kept in a chunk before,
// keeps its stamp, and its row is written only when its state changes;
// any other draws a new stamp (heldWindows).
func keepWindow(r *store.AlarmRule, next store.RateWindow) {
	if r.KeptWindow == nil || r.RateStamp == 0 {
		r.RateStamp, r.KeptChanged = newStamp(), true
	}
	hold(r, next)
}

// hold sets what the service holds of what rule r keeps (KeptWindow) to
// a copy of next, in the memory it held before.
func hold(r *store.AlarmRule, next store.RateWindow) {
	h := r.KeptWindow
	if h == nil {
		h = &store.RateWindow{}
	}
	*h = store.RateWindow{Through: next.Through, Version: next.Version,
		Micros: append(h.Micros[:0], next.Micros...), Values: append(h.Values[:0], next.Values...)}
	r.KeptWindow = h
}

// add appends target id's value v at t, later than any it has, if a rate
// rule watches the target.
func (rs rates) add(id int64, t time.Time, v float64) { rs[id].add(t.UnixMicro(), v) }
