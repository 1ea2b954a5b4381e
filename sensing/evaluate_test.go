package sensing

import (
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/store"
)

// TestEvaluateKept: batch after batch to two sensors in turn, each
// starting from what its rules kept (the windows the service holds,
// without reading any reading back), the evaluation's events are those coalesced
// from the changes of level of every reading stepped on its own against
// the values before it, its changes leave the alarms those do, and what
// the rules keep is the window those values end with. The two
// sensors share the service, so each copies what it kept, and has the
// outputs its rollups computed, in memory the other's write used before;
// a rule on an input, and two rate rules of other windows on an output
// (its value taken from the batch's rollups where they computed it).
func TestEvaluateKept(t *testing.T) {
	s := New(nil, slog.New(slog.DiscardHandler), Config{})
	instance := &store.Instance{Version: 1,
		Inputs:  []store.InstanceInput{{ID: 1, Key: "u"}, {ID: 2, Key: "i"}},
		Outputs: []store.InstanceOutput{{ID: 3, Key: "p", Formula: "u * i * 2"}}}
	rules := []store.AlarmRule{ // by target, then id
		{ID: 1, TargetID: 1, TargetKey: "u", Rule: alarms.Rule{Rank: 1, Threshold: 900, Deadband: 50, Persistence: 2}},
		{ID: 2, TargetID: 3, TargetKey: "p", Rule: alarms.Rule{Rank: 1, Threshold: 2000, Deadband: 500, Persistence: 1}, Window: 600, Per: 3600},
		{ID: 3, TargetID: 3, TargetKey: "p", Rule: alarms.Rule{Rank: 2, Threshold: 20000, Persistence: 3}, Window: 90, Per: 3600},
	}
	sensors := make([]*naiveSensor, 2)
	for k := range sensors {
		sensors[k] = &naiveSensor{Sensor: store.Sensor{ID: int64(k + 1), Instance: instance}, rules: slices.Clone(rules),
			rng: rand.New(rand.NewPCG(uint64(k), 7)), states: make([]alarms.State, len(rules)), level: map[int64]int{}}
	}
	changed := map[int64]int{} // by target
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	const size, batches = 250, 12 // the longer window full after 3 batches
	for n := range batches {
		for _, sn := range sensors {
			readings := make([]store.Reading, size)
			for i := range readings {
				readings[i] = store.Reading{Time: start.Add(time.Duration(n*size+i) * time.Second), InputIDs: []int64{1, 2},
					Values: []float64{sn.rng.Float64() * 1000, 1 + sn.rng.Float64()/10}}
			}
			outputs := s.outputsOf(sn.Sensor, nil)
			pre := newBatchOutputs(readings, outputs, sn.rules, s.outputMemory)
			for i := range readings {
				if (i+n+int(sn.ID))%7 > 0 { // the others of hours whose rollups are recomputed later
					outputs.Compute(&readings[i])
					pre.record(i, outputs)
				}
			}
			for j := range sn.rules {
				sn.rules[j].KeptWindow = nil
			}
			s.held.take(sn.ID, sn.rules)
			changes, events, err := s.evaluate(t.Context(), nil, sn.Sensor, sn.rules, readings, sn.newest, windowsAt{through: sn.newest}, nil, pre)
			if err != nil {
				t.Fatal(err)
			}
			pre.giveBack(s.outputMemory)
			s.held.put(sn.ID, sn.rules)
			sn.newest = new(readings[size-1].Time)

			var all []store.AlarmChange
			for _, r := range readings {
				all = sn.step(r, all)
			}
			for _, c := range all {
				changed[c.TargetID]++
			}
			if got, want := outcomes(changes), outcomes(all); !maps.Equal(got, want) {
				t.Fatalf("sensor %d, batch %d: the changes leave %v, want %v", sn.ID, n, got, want)
			}
			want := slices.Clone(all)
			coalesce(want)
			want = slices.DeleteFunc(want, func(c store.AlarmChange) bool { return c.Folded })
			if len(events) != len(want) {
				t.Fatalf("sensor %d, batch %d: %d events, want %d", sn.ID, n, len(events), len(want))
			}
			for i := range events {
				if events[i] != want[i] {
					t.Fatalf("sensor %d, batch %d: event %d = %+v, want %+v", sn.ID, n, i, events[i], want[i])
				}
			}
			for j, r := range sn.rules[1:] {
				if r.KeptWindow == nil {
					t.Fatalf("sensor %d, batch %d: rule %d keeps nothing", sn.ID, n, j+2)
				}
				kept := keptWindow(r, 0, nil)
				from := sn.newest.Add(-window(r)).UnixMicro()
				var times []int64
				var values []float64
				for _, h := range sn.history {
					if us := h.Time.UnixMicro(); us >= from {
						times, values = append(times, us), append(values, h.Values[0]*h.Values[1]*2)
					}
				}
				if !slices.Equal(kept.Micros, times) || !slices.Equal(kept.Values, values) {
					t.Fatalf("sensor %d, batch %d: rule %d keeps %d values, want the %d of its window", sn.ID, n, j+2, len(kept.Micros), len(times))
				}
			}
		}
	}
	if changed[1] < 10 || changed[3] < 10 {
		t.Errorf("changes of level by target: %v, want some of each", changed)
	}
}

// alarmOutcome is what a write's changes of a target leave of its alarm,
// as store.ApplyAlarms reads them: the last change, whether it cleared on
// the way, whether it rose.
type alarmOutcome struct {
	last          store.AlarmChange
	cleared, rose bool
}

func outcomes(changes []store.AlarmChange) map[int64]alarmOutcome {
	out := map[int64]alarmOutcome{}
	for _, c := range changes {
		o := out[c.TargetID]
		o.last, o.cleared, o.rose = c, o.cleared || c.To == 0, o.rose || c.To > c.From
		out[c.TargetID] = o
	}
	return out
}

// naiveSensor is a sensor of TestEvaluateKept: what its rules keep, and
// every reading so far, stepped one by one against those before it.
type naiveSensor struct {
	store.Sensor
	rules   []store.AlarmRule
	rng     *rand.Rand
	newest  *time.Time
	history []store.Reading
	states  []alarms.State
	level   map[int64]int // by target
}

// step steps the rules with r, the newest reading, and appends the
// changes of level it makes to changes.
func (sn *naiveSensor) step(r store.Reading, changes []store.AlarmChange) []store.AlarmChange {
	u, p := r.Values[0], r.Values[0]*r.Values[1]*2
	us := r.Time.UnixMicro()
	value := func(rule store.AlarmRule) float64 {
		if rule.TargetID == 1 {
			return u
		}
		if rule.Window == 0 {
			return p
		}
		from := us - rule.Window*1e6
		for _, h := range sn.history {
			if t := h.Time.UnixMicro(); t >= from {
				v0 := h.Values[0] * h.Values[1] * 2
				return (p - v0) / (time.Duration(us-t) * time.Microsecond).Seconds() * float64(rule.Per)
			}
		}
		return math.NaN()
	}
	for _, target := range []int64{1, 3} {
		var (
			rules []alarms.Rule
			idx   []int
		)
		for i, rule := range sn.rules {
			if rule.TargetID == target {
				rules, idx = append(rules, rule.Rule), append(idx, i)
			}
		}
		states := make([]alarms.State, len(idx))
		for j, i := range idx {
			states[j] = sn.rules[i].Step(sn.states[i], value(sn.rules[i]))
			sn.states[i] = states[j]
		}
		v := p
		if target == 1 {
			v = u
		}
		from, to := sn.level[target], alarms.Level(rules, states)
		if from != to {
			changes = append(changes, store.AlarmChange{TargetID: target, Kind: string(alarms.Classify(from, to)), From: from, To: to, At: r.Time, Value: v})
			sn.level[target] = to
		}
	}
	sn.history = append(sn.history, r)
	return changes
}

// TestOutcome: of random moves of three targets, late exceedances among
// them, outcome's events are coalesce's of every change, and its changes
// leave the alarms every change does.
func TestOutcome(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for round := range 500 {
		tg := &targets{ids: []int64{4, 7, 9}}
		readings := make([]store.Reading, 1+rng.IntN(60))
		level := make([]int, len(tg.ids))
		var (
			moves []move
			all   []store.AlarmChange
		)
		for i := range readings {
			readings[i].Time = start.Add(time.Duration(i) * time.Second)
			for k := range tg.ids {
				if rng.IntN(3) > 0 {
					continue
				}
				v := rng.Float64()
				if rng.IntN(4) == 0 {
					rank := 1 + rng.IntN(3)
					moves = append(moves, move{k: int32(k), i: int32(i), to: int32(rank), late: true, v: v})
					all = append(all, store.AlarmChange{TargetID: tg.ids[k], Kind: "late", To: rank, Late: true, At: readings[i].Time, Value: v})
					continue
				}
				to := rng.IntN(4)
				if to == level[k] {
					continue
				}
				moves = append(moves, move{k: int32(k), i: int32(i), from: int32(level[k]), to: int32(to), v: v})
				all = append(all, store.AlarmChange{TargetID: tg.ids[k], Kind: string(alarms.Classify(level[k], to)), From: level[k], To: to, At: readings[i].Time, Value: v})
				level[k] = to
			}
		}
		changes, events := tg.outcome(moves, readings)
		var levels []store.AlarmChange // without the late exceedances, which ApplyAlarms leaves out
		for _, c := range all {
			if !c.Late {
				levels = append(levels, c)
			}
		}
		if got, want := outcomes(changes), outcomes(levels); !maps.Equal(got, want) {
			t.Fatalf("round %d: the changes leave %v, want %v", round, got, want)
		}
		want := slices.Clone(all)
		coalesce(want)
		want = slices.DeleteFunc(want, func(c store.AlarmChange) bool { return c.Folded })
		if !slices.Equal(events, want) {
			t.Fatalf("round %d: events\n%+v\nwant\n%+v", round, events, want)
		}
	}
}
