package sensing

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/store"
)

// stepAlarms steps the sensor's rules, as the write's lock read them, with
// the readings of a write, which chunks gives, chunk after chunk in time
// order, each ordered and one per instant, in the write's transaction;
// newest is the datetime of the sensor's newest reading before the write,
// if it had one. It writes what the rules decide and returns how many
// events the write raised.
//
// A sensor without rules costs nothing. A write of one chunk (a batch)
// costs no round trip, whatever it decides: the states, the current
// alarms and the events go with the transaction's COMMIT, which nothing
// after them reads. A write of several chunks (a stream) writes the
// states and alarms of each chunk before the next is evaluated, and the
// events of the whole write with the COMMIT, coalesced chunk after chunk,
// so that its memory stays one chunk's.
//
// With flagged set (a flag is in force on some of the sensor's readings),
// the flags on each chunk's readings are read, and a flagged value steps
// no rule. stale says that the write's checks rejected a stored reading
// that isn't one of its own, which the windows its rate rules kept may
// hold: they are read back instead. pre, when not nil, holds the values
// of the outputs the rules watch that the write's rollups computed in its
// readings, which are not computed again.
func (s *Service) stepAlarms(ctx context.Context, tx *store.Tx, sensor store.Sensor, rules []store.AlarmRule, newest *time.Time, flagged, stale bool, pre *batchOutputs, chunks func(func([]store.Reading) error) error) (int, error) {
	if len(rules) == 0 {
		return 0, nil
	}
	var (
		before  = ruleStates(rules)
		started bool
		pending []store.AlarmChange // the last chunk's changes, not yet written
		raised  []store.AlarmChange // the events of the chunks so far
		windows = windowsAt{through: newest, stale: stale, flagged: flagged}
	)
	err := chunks(func(chunk []store.Reading) error {
		if started {
			if err := tx.ApplyAlarms(ctx, sensor, rules, before, pending, nil); err != nil {
				return err
			}
			before = ruleStates(rules)
		}
		started = true
		var fs *flagSet
		if flagged && len(chunk) > 0 {
			flags, err := tx.SensorFlags(ctx, sensor.ID, chunk[0].Time, chunk[len(chunk)-1].Time, nil)
			if err != nil {
				return err
			}
			fs = newFlagSet(flags)
		}
		changes, events, err := s.evaluate(ctx, tx, sensor, rules, chunk, newest, windows, fs, pre.of(chunk))
		if err != nil {
			return err
		}
		if len(chunk) > 0 {
			windows = windows.after(chunk[len(chunk)-1].Time)
		}
		pending = changes
		if len(raised) == 0 {
			raised = events // coalesced already
			return nil
		}
		raised = append(raised, events...)
		coalesce(raised)
		raised = slices.DeleteFunc(raised, func(c store.AlarmChange) bool { return c.Folded })
		return nil
	})
	if err != nil || !started {
		return 0, err
	}
	tx.ApplyAlarmsAtCommit(sensor, rules, before, pending, raised)
	return len(raised), nil
}

// recheck rechecks the sensor's rules against its newest reading, after an
// edit of its formulas, links or rules or a delete that took its newest
// reading, in that edit's transaction, the sensor locked. With no reading
// left, no rule holds, and every target's alarm clears as a target without
// rules does.
//
// What the rules kept of their windows is forgotten: the edit may have
// changed what they hold.
func (s *Service) recheck(ctx context.Context, tx *store.Tx, sensor store.Sensor) error {
	if err := tx.ForgetRateWindows(ctx, sensor.ID); err != nil {
		return err
	}
	rules, err := tx.SensorRules(ctx, sensor.ID)
	if err != nil {
		return err
	}
	newest, fs, err := s.newestForRules(ctx, tx, sensor)
	if err != nil {
		return err
	}
	var changes []store.AlarmChange
	ruled := rules // the rules whose targets keep their alarms
	if newest != nil {
		if changes, err = s.recheckRules(ctx, tx, sensor, rules, newest, fs); err != nil {
			return err
		}
	} else {
		for i := range rules {
			rules[i].State = alarms.State{}
		}
		ruled = nil
	}
	if err := tx.ApplyAlarms(ctx, sensor, rules, nil, changes, changes); err != nil {
		return err
	}
	return tx.ClearUnruled(ctx, sensor, ruled)
}

// newestForRules is the newest reading the rules see: the newest a flag
// does not reject whole, without its rejected values, and the flags on it
// (nil for none), looked up.
func (s *Service) newestForRules(ctx context.Context, tx *store.Tx, sensor store.Sensor) (*store.Reading, *flagSet, error) {
	newest, err := tx.LatestReading(ctx, sensor.ID)
	if err != nil || newest == nil {
		return newest, nil, err
	}
	flags, err := tx.SensorFlags(ctx, sensor.ID, newest.Time, newest.Time, nil)
	if err != nil || len(flags) == 0 {
		return newest, nil, err
	}
	if newest, err = s.newestUnrejected(ctx, tx, sensor, newest.Time); err != nil || newest == nil {
		return newest, nil, err
	}
	if flags, err = tx.SensorFlags(ctx, sensor.ID, newest.Time, newest.Time, nil); err != nil {
		return nil, nil, err
	}
	fs := newFlagSet(flags)
	if fs != nil {
		fs.lookup(newest.Time)
	}
	return newest, fs, nil
}

// targetIDs is the target of each rule.
func targetIDs(rules []store.AlarmRule) []int64 {
	ids := make([]int64, len(rules))
	for i, r := range rules {
		ids[i] = r.TargetID
	}
	return ids
}

func ruleStates(rules []store.AlarmRule) []alarms.State {
	states := make([]alarms.State, len(rules))
	for i, r := range rules {
		states[i] = r.State
	}
	return states
}

// targets groups rules, ordered by target, into the alarms.Target of each.
type targets struct {
	ids   []int64
	state []alarms.Target
	level []int // the rank of each target's current alarm, 0 at rest
	first []int // the index in the rules of each target's first rule
	rules []store.AlarmRule
	// series is each target's series of values, nil for a target without
	// rate rules, and cursors each rule's rates over it (bind).
	series  []*rateSeries
	cursors []rateCursor
}

// bind has the rate rules compute their rates over the series of rs.
func (t *targets) bind(rs rates) {
	t.series, t.cursors = make([]*rateSeries, len(t.ids)), make([]rateCursor, len(t.rules))
	for k, id := range t.ids {
		t.series[k] = rs[id]
	}
	for i, r := range t.rules {
		if r.Window > 0 {
			t.cursors[i] = rs.cursor(r)
		}
	}
}

// values gives the value rule i of target k watches, v being the
// target's value at us (Unix microseconds): its rate for a rate rule.
func (t *targets) values(k int, us int64, v float64) func(i int) float64 {
	return func(i int) float64 {
		j := t.first[k] + i
		if t.rules[j].Window == 0 {
			return v
		}
		return t.cursors[j].rate(us, v)
	}
}

func newTargets(rules []store.AlarmRule) *targets {
	t := &targets{rules: rules}
	for i, r := range rules {
		if i == 0 || r.TargetID != rules[i-1].TargetID {
			t.ids = append(t.ids, r.TargetID)
			t.state = append(t.state, alarms.Target{})
			t.level = append(t.level, r.TargetRank)
			t.first = append(t.first, i)
		}
		k := len(t.ids) - 1
		t.state[k].Rules = append(t.state[k].Rules, r.Rule)
		t.state[k].States = append(t.state[k].States, r.State)
	}
	return t
}

// change records target k's move to rank to, if it moved, as the
// reading r made it.
func (t *targets) change(changes []store.AlarmChange, k, to int, r *store.Reading, v float64) []store.AlarmChange {
	from := t.level[k]
	if from == to {
		return changes
	}
	t.level[k] = to
	return append(changes, store.AlarmChange{TargetID: t.ids[k], Kind: string(alarms.Classify(from, to)), From: from, To: to, At: r.Time, Value: v})
}

// save copies the states and the targets' levels back into rules, which
// share the order, so that rules are as the store would read them after
// the changes are written.
func (t *targets) save(rules []store.AlarmRule) {
	for k, target := range t.state {
		for j, st := range target.States {
			rules[t.first[k]+j].State = st
			rules[t.first[k]+j].TargetRank = t.level[k]
		}
	}
}

// values computes a reading's outputs and finds each target's value in
// the reading or its outputs.
type values struct {
	outputs *Outputs
	index   map[int64]int // output id -> index; inputs are looked up in the reading
	r       *store.Reading
	// pre holds the outputs of r, the at-th reading it was made for,
	// when not nil: they are not computed.
	pre *batchOutputs
	at  int
}

// batchOutputs are the values of the outputs rules watch in the readings
// of a batch, in those whose outputs its rollups computed (rollBatch), so
// that the rules' evaluation does not compute them again: the same
// formulas of the same readings, so the same values.
type batchOutputs struct {
	readings []store.Reading
	ids      []int64     // the outputs
	k        []int       // their index in the rollups' Outputs
	values   [][]float64 // values[j][i]: output ids[j] in readings[i]
	has      [][]bool    // whether it has a value there
	computed []bool      // whether the outputs of readings[i] were
}

// newBatchOutputs prepares the values, in readings, of the outputs among
// outputs' that rules watch, in memory from memory when not nil (given
// back with giveBack once the write's rules are evaluated); nil when they
// watch none.
func newBatchOutputs(readings []store.Reading, outputs *Outputs, rules []store.AlarmRule, memory *sync.Pool) *batchOutputs {
	if outputs == nil {
		return nil
	}
	var p *batchOutputs
	for k, id := range outputs.IDs() {
		if !slices.ContainsFunc(rules, func(r store.AlarmRule) bool { return r.TargetID == id }) {
			continue
		}
		if p == nil {
			p = fromMemory(memory)
			p.readings, p.ids, p.k = readings, p.ids[:0], p.k[:0]
			p.computed = resize(p.computed, len(readings))
			clear(p.computed)
		}
		j := len(p.ids)
		p.ids, p.k = append(p.ids, id), append(p.k, k)
		if j == len(p.values) {
			p.values, p.has = append(p.values, nil), append(p.has, nil)
		}
		// Only computed readings' values are read: these need no clearing.
		p.values[j], p.has[j] = resize(p.values[j], len(readings)), resize(p.has[j], len(readings))
	}
	return p
}

func fromMemory(memory *sync.Pool) *batchOutputs {
	if memory != nil {
		if p, ok := memory.Get().(*batchOutputs); ok {
			return p
		}
	}
	return &batchOutputs{}
}

// giveBack returns p's memory to memory, once nothing reads p.
func (p *batchOutputs) giveBack(memory *sync.Pool) {
	if p != nil && memory != nil {
		p.readings = nil
		memory.Put(p)
	}
}

// resize is s with length n, in its memory when it has the room.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// record keeps the values of the outputs in readings[i], which outputs
// computed last.
func (p *batchOutputs) record(i int, outputs *Outputs) {
	if p == nil {
		return
	}
	for j, k := range p.k {
		p.values[j][i], p.has[j][i] = outputs.Value(k)
	}
	p.computed[i] = true
}

// of is p if it was made for readings, else nil.
func (p *batchOutputs) of(readings []store.Reading) *batchOutputs {
	if p == nil || len(readings) == 0 || len(p.readings) != len(readings) || &p.readings[0] != &readings[0] {
		return nil
	}
	return p
}

// newValues prepares the values of ids (inputs or outputs) in sensor's
// readings at the instants at, ascending, reading the sources of its
// linked inputs through lr. Only the outputs among ids, and those they
// use, are computed.
func (s *Service) newValues(ctx context.Context, lr linkReader, sensor store.Sensor, at []time.Time, ids []int64) (*values, error) {
	links, err := s.sensorLinks(ctx, lr, sensor, at[0], at[len(at)-1], at, nil, 0)
	if err != nil {
		return nil, err
	}
	v := &values{outputs: s.outputsOf(sensor, links), index: map[int64]int{}}
	for k, id := range v.outputs.IDs() {
		if slices.Contains(ids, id) {
			v.index[id] = k
		}
	}
	if len(v.index) > 0 {
		v.outputs.only(ids)
	}
	return v, nil
}

// valueSlot is where values finds the value of target id: output is its
// index among the outputs (-1: an input, found in the reading), pre its
// column in the batch's outputs (-1: none).
type valueSlot struct {
	id          int64
	output, pre int
}

// slot is the valueSlot of id, pre being the outputs of the readings to
// evaluate (nil: none).
func (v *values) slot(id int64, pre *batchOutputs) valueSlot {
	k, ok := v.index[id]
	if !ok {
		return valueSlot{id: id, output: -1, pre: -1}
	}
	j := -1
	if pre != nil {
		j = slices.Index(pre.ids, id)
	}
	return valueSlot{id: id, output: k, pre: j}
}

// valueIn is value of the target at slot in the reading computed last.
func (v *values) valueIn(slot valueSlot) (float64, bool) {
	if slot.output < 0 {
		for i, in := range v.r.InputIDs {
			if in == slot.id {
				return v.r.Values[i], true
			}
		}
		return 0, false
	}
	if v.pre != nil {
		if slot.pre >= 0 {
			return v.pre.values[slot.pre][v.at], v.pre.has[slot.pre][v.at]
		}
		v.outputs.Compute(v.r)
		v.pre = nil
	}
	return v.outputs.Value(slot.output)
}

func (v *values) compute(r *store.Reading) {
	v.r, v.pre = r, nil
	if len(v.index) > 0 {
		v.outputs.Compute(r)
	}
}

// computeAt is compute of r, the i-th reading pre was made for (nil: none),
// which holds its outputs when their rollups computed them.
func (v *values) computeAt(r *store.Reading, pre *batchOutputs, i int) {
	if pre == nil || len(v.index) == 0 || !pre.computed[i] {
		v.compute(r)
		return
	}
	v.r, v.pre, v.at = r, pre, i
}

// flagged says whether the value of id in the reading computed last is
// flagged, as fs looked it up: an input by its flag or its reading's, an
// output by any flag on its reading, whose inputs it is computed from.
func (v *values) flagged(fs *flagSet, id int64) bool {
	if _, output := v.index[id]; output {
		return len(fs.marks) > 0
	}
	return fs.flag(id) != ""
}

func (v *values) value(id int64) (float64, bool) { return v.valueIn(v.slot(id, v.pre)) }

// evaluate steps rules, ordered by target, with readings, ordered and one
// per instant, computing the values the rules watch as a read computes
// them, and updates their states and their targets' levels. newest is the
// datetime of the sensor's newest reading before them, if it had one: a
// reading older than it is late, and changes no state.
//
// fs, when not nil, holds the flags on the readings: a flagged value
// steps no rule, and a rejected one is not in the reading its outputs are
// computed from. A suspect value is in the windows of the rate rules, a
// rejected one is not.
//
// w is where what the rate rules keep stands before the readings; the
// rules keep what the readings leave (rates.keep). pre, when not nil,
// holds outputs of the readings, as batchOutputs.of gives them.
//
// It returns the changes the targets' current alarms need and the events
// the readings raise, coalesced (targets.outcome).
func (s *Service) evaluate(ctx context.Context, tx *store.Tx, sensor store.Sensor, rules []store.AlarmRule, readings []store.Reading, newest *time.Time, w windowsAt, fs *flagSet, pre *batchOutputs) (changes, events []store.AlarmChange, err error) {
	if len(readings) == 0 {
		return nil, nil, nil
	}
	vals, err := s.newValues(ctx, tx, sensor, instants(sensor, readings), targetIDs(rules))
	if err != nil {
		return nil, nil, err
	}
	first, last := readings[0].Time, readings[len(readings)-1].Time
	// Readings newer than any stored add their values to the rates' series
	// as they are evaluated; others are read back as stored.
	appending := newest == nil || !first.Before(*newest)
	room := &keptRoom{pool: s.keptMemory}
	defer room.giveBack() // once the rules keep what they keep anew (rates.keep)
	rs, full, err := s.loadRates(ctx, tx, sensor, rules, readings, w, appending, room)
	if err != nil {
		return nil, nil, err
	}
	t := newTargets(rules)
	t.bind(rs)
	slots := make([]valueSlot, len(t.ids))
	for k, id := range t.ids {
		slots[k] = vals.slot(id, pre)
	}
	var moves []move
	for i := range readings {
		r := &readings[i]
		marked := false
		if fs != nil && len(fs.lookup(r.Time)) > 0 {
			marked = true
			var whole bool
			if r, whole = fs.without(r); whole || len(r.InputIDs) == 0 {
				continue
			}
		}
		if marked {
			vals.compute(r)
		} else {
			vals.computeAt(r, pre, i)
		}
		late := newest != nil && r.Time.Before(*newest)
		us := r.Time.UnixMicro()
		for k, target := range t.state {
			v, ok := vals.valueIn(slots[k])
			if !ok {
				continue
			}
			if appending {
				t.series[k].add(us, v)
			}
			if marked && vals.flagged(fs, t.ids[k]) {
				continue
			}
			value := t.values(k, us, v)
			if late {
				if rank := alarms.LateEach(target.Rules, value); rank > 0 {
					moves = append(moves, move{k: int32(k), i: int32(i), to: int32(rank), late: true, v: v})
				}
				continue
			}
			_, to := target.ObserveEach(value)
			if from := t.level[k]; to != from {
				t.level[k] = to
				moves = append(moves, move{k: int32(k), i: int32(i), from: int32(from), to: int32(to), v: v})
			}
		}
	}
	t.save(rules)
	rs.keep(rules, sensor, w, first, last, len(readings), full)
	changes, events = t.outcome(moves, readings)
	return changes, events, nil
}

// move is a change of a target's level in an evaluation, or a late
// reading's exceedance (late, its rank in to), at its i-th reading: a
// flapping target changes level at hundreds of a write's readings, of
// which a few raise events, so each is kept small and without pointers
// until outcome picks those that count.
type move struct {
	k, i     int32 // the target and the reading
	from, to int32
	late     bool
	v        float64 // the target's value
}

// outcome is what an evaluation's moves, in order, leave for the store to
// write: the changes the targets' current alarms need (ApplyAlarms'
// changes: of each target its first change, its first clearing, its first
// rise and its last, which say where it ends, whether its alarm cleared on
// the way and whether it rose) and the events they raise, coalesced as
// coalesce does (the first change of each target, its first at the
// highest level and its last; the first of its highest late exceedances),
// each counting those it folded.
func (t *targets) outcome(moves []move, readings []store.Reading) (changes, events []store.AlarmChange) {
	if len(moves) == 0 {
		return nil, nil
	}
	type picks struct{ first, peak, last, cleared, rose, worst, lates int }
	p := make([]picks, len(t.ids))
	for k := range p {
		p[k] = picks{first: -1, peak: -1, last: -1, cleared: -1, rose: -1, worst: -1}
	}
	for j, m := range moves {
		q := &p[m.k]
		switch {
		case m.late:
			if q.worst < 0 || m.to > moves[q.worst].to {
				q.worst = j
			}
			q.lates++
			continue
		case q.first < 0:
			q.first, q.peak = j, j
		case m.to > moves[q.peak].to:
			q.peak = j
		}
		q.last = j
		if m.to == 0 && q.cleared < 0 {
			q.cleared = j
		}
		if m.to > m.from && q.rose < 0 {
			q.rose = j
		}
	}
	folded := make([]int, len(t.ids)) // changes since the target's last event
	for j, m := range moves {
		q := &p[m.k]
		c := store.AlarmChange{TargetID: t.ids[m.k], From: int(m.from), To: int(m.to), Late: m.late, At: readings[m.i].Time, Value: m.v}
		if m.late {
			if j == q.worst {
				c.Kind, c.Coalesced = "late", q.lates-1
				events = append(events, c)
			}
			continue
		}
		c.Kind = string(alarms.Classify(c.From, c.To))
		if j == q.first || j == q.cleared || j == q.rose || j == q.last {
			changes = append(changes, c)
		}
		if j != q.first && j != q.peak && j != q.last {
			folded[m.k]++
			continue
		}
		c.Coalesced, folded[m.k] = folded[m.k], 0
		events = append(events, c)
	}
	return changes, events
}

// instants are the instants of readings, ordered, for newValues: each
// of them for a sensor with linked inputs, whose sources are sampled
// there; else the first and the last, all a sensor without links uses.
func instants(sensor store.Sensor, readings []store.Reading) []time.Time {
	if !sensor.Instance.Linked() {
		return []time.Time{readings[0].Time, readings[len(readings)-1].Time}
	}
	at := make([]time.Time, len(readings))
	for i := range readings {
		at[i] = readings[i].Time
	}
	return at
}

// recheckRules rechecks rules against newest, the sensor's newest reading,
// after an edit.
// A target fs flags on newest (looked up) keeps its state.
func (s *Service) recheckRules(ctx context.Context, tx *store.Tx, sensor store.Sensor, rules []store.AlarmRule, newest *store.Reading, fs *flagSet) ([]store.AlarmChange, error) {
	vals, err := s.newValues(ctx, tx, sensor, []time.Time{newest.Time}, targetIDs(rules))
	if err != nil {
		return nil, err
	}
	var rs rates
	if window := maxWindow(rules); window > 0 {
		rs = newRates(rules)
		if err := s.readRates(ctx, tx, sensor, rs, true, newest.Time.Add(-window), newest.Time,
			store.ReadingQuery{From: newest.Time.Add(-window), To: newest.Time}); err != nil {
			return nil, err
		}
	}
	t := newTargets(rules)
	t.bind(rs)
	vals.compute(newest)
	var changes []store.AlarmChange
	for k, target := range t.state {
		v, ok := vals.value(t.ids[k])
		if !ok || fs != nil && vals.flagged(fs, t.ids[k]) {
			continue
		}
		_, to := target.RecheckEach(t.values(k, newest.Time.UnixMicro(), v))
		changes = t.change(changes, k, to, newest, v)
	}
	t.save(rules)
	return changes, nil
}

// coalesce bounds the events of one write of readings: of each target's
// changes it raises those alarms.Coalesce picks, of its late exceedances
// the one alarms.CoalesceLate picks, and folds the others into the next
// one raised (or, late, the one raised), which counts them and what they
// stood for (Folded, Coalesced). Both picks are what they would be on the
// whole write when given what they picked of its start, followed by the
// rest: the first of the start is the first; the first at the highest
// level is the first of the part that reached it; the last is the rest's.
// So a write evaluated in parts keeps only what it raised so far.
func coalesce(changes []store.AlarmChange) {
	type series struct{ changes, late []int } // indices into changes
	byTarget := map[int64]*series{}
	for i, c := range changes {
		s := byTarget[c.TargetID]
		if s == nil {
			s = &series{}
			byTarget[c.TargetID] = s
		}
		if c.Late {
			s.late = append(s.late, i)
		} else {
			s.changes = append(s.changes, i)
		}
	}
	for _, s := range byTarget {
		to := make([]int, len(s.changes))
		for j, i := range s.changes {
			to[j] = changes[i].To
		}
		kept, folded := alarms.Coalesce(to), 0
		for j, i := range s.changes {
			if len(kept) > 0 && kept[0] == j {
				changes[i].Coalesced += folded
				folded, kept = 0, kept[1:]
				continue
			}
			changes[i].Folded = true
			folded += 1 + changes[i].Coalesced
		}
		ranks := make([]int, len(s.late))
		for j, i := range s.late {
			ranks[j] = changes[i].To
		}
		if worst := alarms.CoalesceLate(ranks); worst >= 0 {
			folded := 0
			for j, i := range s.late {
				if changes[i].Folded = j != worst; changes[i].Folded {
					folded += 1 + changes[i].Coalesced
				}
			}
			changes[s.late[worst]].Coalesced += folded
		}
	}
}
