package server

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/store"
)

// alarmEvaluator computes the values the rules of a sensor watch, as a
// GET computes them, and lets package alarms decide; the store calls it
// inside the transaction that stores the readings or the edit.
type alarmEvaluator struct{ s *Server }

var _ store.AlarmEvaluator = alarmEvaluator{}

// targets groups rules, ordered by target, into the alarms.Target of each.
type targets struct {
	ids   []int64
	state []alarms.Target
	level []int // the rank of each target's current alarm, 0 at rest
}

func newTargets(rules []store.AlarmRule) *targets {
	t := &targets{}
	for i, r := range rules {
		if i == 0 || r.TargetID != rules[i-1].TargetID {
			t.ids = append(t.ids, r.TargetID)
			t.state = append(t.state, alarms.Target{})
			t.level = append(t.level, r.TargetRank)
		}
		k := len(t.ids) - 1
		t.state[k].Rules = append(t.state[k].Rules, alarms.Rule{
			Rank: r.Rank, Below: r.Direction == "below", Threshold: r.Threshold, Deadband: r.Deadband, Persistence: r.Persistence,
		})
		t.state[k].States = append(t.state[k].States, alarms.State{Active: r.Active, Streak: r.Streak})
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

// save copies the states back into rules, which share the order.
func (t *targets) save(rules []store.AlarmRule) {
	i := 0
	for _, target := range t.state {
		for _, st := range target.States {
			rules[i].Active, rules[i].Streak = st.Active, st.Streak
			i++
		}
	}
}

// values computes a reading's outputs and finds each target's value in
// the reading or its outputs.
type values struct {
	outputs *outputsWriter
	index   map[int64]int // output id -> index; inputs are looked up in the reading
	r       *store.Reading
}

// newValues prepares the values of sensor's readings at the instants at,
// ascending, reading the sources of its linked inputs through lr.
func (s *Server) newValues(ctx context.Context, lr store.LinkReader, sensor store.Sensor, at []time.Time) (*values, error) {
	links, err := s.sensorLinks(ctx, lr, sensor, at[0], at[len(at)-1], at, 0)
	if err != nil {
		return nil, err
	}
	v := &values{outputs: s.newOutputsWriter(sensor, links), index: map[int64]int{}}
	for k, id := range v.outputs.outputIDs {
		v.index[id] = k
	}
	return v, nil
}

func (v *values) compute(r *store.Reading) {
	v.r = r
	if len(v.index) > 0 {
		v.outputs.Compute(r)
	}
}

func (v *values) value(id int64) (float64, bool) {
	if k, ok := v.index[id]; ok {
		return v.outputs.Value(k)
	}
	for i, in := range v.r.InputIDs {
		if in == id {
			return v.r.Values[i], true
		}
	}
	return 0, false
}

// Evaluate implements store.AlarmEvaluator.
func (e alarmEvaluator) Evaluate(ctx context.Context, lr store.LinkReader, sensor store.Sensor, rules []store.AlarmRule, readings []store.Reading, newest *time.Time) ([]store.AlarmChange, error) {
	if len(readings) == 0 {
		return nil, nil
	}
	at := make([]time.Time, len(readings))
	for i := range readings {
		at[i] = readings[i].Time
	}
	vals, err := e.s.newValues(ctx, lr, sensor, at)
	if err != nil {
		return nil, err
	}
	t := newTargets(rules)
	var changes []store.AlarmChange
	for i := range readings {
		r := &readings[i]
		vals.compute(r)
		late := newest != nil && r.Time.Before(*newest)
		for k, target := range t.state {
			v, ok := vals.value(t.ids[k])
			if !ok {
				continue
			}
			if late {
				if rank := alarms.Late(target.Rules, v); rank > 0 {
					changes = append(changes, store.AlarmChange{TargetID: t.ids[k], Kind: "late", To: rank, Late: true, At: r.Time, Value: v})
				}
				continue
			}
			_, to := target.Observe(v)
			changes = t.change(changes, k, to, r, v)
		}
	}
	t.save(rules)
	return changes, nil
}

// Coalesce implements store.AlarmEvaluator: of each target's changes it
// raises those alarms.Coalesce picks, of its late exceedances the one
// alarms.CoalesceLate picks, and folds the others into the next one
// raised (or, late, the one raised), which counts them and what they
// stood for. Both picks are what they would be on the whole write when
// given what they picked of its start, followed by the rest: the first
// of the start is the first; the first at the highest level is the first
// of the part that reached it; the last is the rest's.
func (alarmEvaluator) Coalesce(changes []store.AlarmChange) {
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

// Recheck implements store.AlarmEvaluator.
func (e alarmEvaluator) Recheck(ctx context.Context, lr store.LinkReader, sensor store.Sensor, rules []store.AlarmRule, newest store.Reading) ([]store.AlarmChange, error) {
	vals, err := e.s.newValues(ctx, lr, sensor, []time.Time{newest.Time})
	if err != nil {
		return nil, err
	}
	t := newTargets(rules)
	vals.compute(&newest)
	var changes []store.AlarmChange
	for k, target := range t.state {
		v, ok := vals.value(t.ids[k])
		if !ok {
			continue
		}
		_, to := target.Recheck(v)
		changes = t.change(changes, k, to, &newest, v)
	}
	t.save(rules)
	return changes, nil
}
