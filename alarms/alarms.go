// Package alarms decides, reading after reading, which alarm level one of a
// sensor's inputs or outputs (a target) is at: rules above or below a
// threshold, each at a level, with a deadband against flapping and a
// persistence against single spikes. It holds the decisions only, no SQL
// and no HTTP, so that ingest, the re-evaluation after an edit and the
// tests all run the same few lines; and when a silent sensor is overdue.
package alarms

import (
	"fmt"
	"math"
	"time"

	"github.com/sensorreadings/readings/apperr"
)

// MaxPersistence bounds a rule's persistence: past a thousand readings a
// duration is the better tool, and the streak fits any integer column.
const MaxPersistence = 1000

// Rule raises its level when the target's value goes beyond its threshold
// for Persistence consecutive readings, and clears once the value comes
// back past the threshold by more than Deadband.
type Rule struct {
	Rank        int // the level's rank: higher is more severe, 1 or more
	Below       bool
	Threshold   float64
	Deadband    float64
	Persistence int // 1 to MaxPersistence
}

// State is what a rule remembers between readings.
type State struct {
	Active bool
	// Streak counts the consecutive readings, to the newest, beyond the
	// threshold, up to the rule's persistence.
	Streak int
}

// Check returns Invalid, naming the field, for a rule that cannot be
// evaluated: a threshold or deadband that is not a finite number, a
// negative deadband, a persistence out of 1 to MaxPersistence.
func (r Rule) Check() error {
	switch {
	case math.IsNaN(r.Threshold) || math.IsInf(r.Threshold, 0):
		return invalid("threshold", "the threshold must be a finite number")
	case math.IsNaN(r.Deadband) || math.IsInf(r.Deadband, 0) || r.Deadband < 0:
		return invalid("deadband", "the deadband must be a finite number, 0 or more")
	case r.Persistence < 1 || r.Persistence > MaxPersistence:
		return invalid("persistence", fmt.Sprintf("the persistence must be 1 to %d readings", MaxPersistence))
	case r.Rank < 1:
		return invalid("level", "the level's rank must be 1 or more")
	}
	return nil
}

func invalid(field, message string) error {
	return &apperr.Error{Code: apperr.Invalid, Message: message, Details: map[string]any{"field": field}}
}

// beyond is the condition that triggers the rule.
func (r Rule) beyond(v float64) bool {
	if r.Below {
		return v < r.Threshold
	}
	return v > r.Threshold
}

// holds is the condition that keeps a triggered rule: the deadband widens
// it, so that a value hovering at the threshold does not flap.
func (r Rule) holds(v float64) bool {
	if r.Below {
		return v < r.Threshold+r.Deadband
	}
	return v > r.Threshold-r.Deadband
}

// Step is s after a reading newer than any before it, of value v. A value
// that is not a finite number leaves the state as it was: it says nothing
// about the target.
func (r Rule) Step(s State, v float64) State {
	if !finite(v) {
		return s
	}
	if r.beyond(v) {
		s.Streak = min(s.Streak+1, r.Persistence)
	} else {
		s.Streak = 0
	}
	return r.settle(s, v)
}

// Recheck is s after an edit, given v, the target's value in the newest
// reading, which the streak has counted already (a rule new or changed
// starts from the zero State). It is how an edit takes effect at once,
// without waiting for the next reading.
func (r Rule) Recheck(s State, v float64) State {
	if !finite(v) {
		return s
	}
	switch {
	case !r.beyond(v):
		s.Streak = 0
	case s.Streak == 0:
		s.Streak = 1
	}
	s.Streak = min(s.Streak, r.Persistence)
	return r.settle(s, v)
}

func (r Rule) settle(s State, v float64) State {
	if s.Active {
		s.Active = r.holds(v)
	} else {
		s.Active = s.Streak >= r.Persistence
	}
	return s
}

// Level is the rank of the most severe active rule: the target's level, 0
// when none holds. rules[i] has states[i].
func Level(rules []Rule, states []State) int {
	level := 0
	for i, s := range states {
		if s.Active {
			level = max(level, rules[i].Rank)
		}
	}
	return level
}

// Late is the rank that v, the value of a reading older than the target's
// newest, reaches on its own: the most severe rule whose threshold it is
// beyond. Its neighbours in time were evaluated already, so neither the
// persistence nor the state applies; a late reading never changes the
// current level, but its exceedance is not lost.
func Late(rules []Rule, v float64) int {
	return LateEach(rules, func(int) float64 { return v })
}

// LateEach is Late where rule i watches value(i), as Target.ObserveEach.
func LateEach(rules []Rule, value func(i int) float64) int {
	level := 0
	for i, r := range rules {
		if v := value(i); finite(v) && r.beyond(v) {
			level = max(level, r.Rank)
		}
	}
	return level
}

// Change is what a move from one level to another is called in the event
// history.
type Change string

// The changes of level.
const (
	None        Change = ""
	Triggered   Change = "triggered"
	Escalated   Change = "escalated"
	Deescalated Change = "de-escalated"
	Cleared     Change = "cleared"
)

// Classify names the move from level from to level to (0: no alarm).
func Classify(from, to int) Change {
	switch {
	case from == to:
		return None
	case from == 0:
		return Triggered
	case to == 0:
		return Cleared
	case to > from:
		return Escalated
	}
	return Deescalated
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Target is the rules on one input or output and their states, States[i]
// of Rules[i].
type Target struct {
	Rules  []Rule
	States []State
}

// Observe steps every rule with v, the value of a reading newer than any
// before it, and returns the target's level before and after.
func (t Target) Observe(v float64) (from, to int) {
	return t.ObserveEach(func(int) float64 { return v })
}

// ObserveEach is Observe where rule i watches value(i): a rate rule watches
// the target's rate of change, the others its value. A value that is not a
// finite number leaves its rule as it was.
func (t Target) ObserveEach(value func(i int) float64) (from, to int) {
	from = Level(t.Rules, t.States)
	for i, r := range t.Rules {
		t.States[i] = r.Step(t.States[i], value(i))
	}
	return from, Level(t.Rules, t.States)
}

// Recheck rechecks every rule against v, the value of the newest reading,
// after an edit, and returns the target's level before and after.
func (t Target) Recheck(v float64) (from, to int) {
	return t.RecheckEach(func(int) float64 { return v })
}

// RecheckEach is Recheck where rule i watches value(i), as ObserveEach.
func (t Target) RecheckEach(value func(i int) float64) (from, to int) {
	from = Level(t.Rules, t.States)
	for i, r := range t.Rules {
		t.States[i] = r.Recheck(t.States[i], value(i))
	}
	return from, Level(t.Rules, t.States)
}

// Storms. A value flapping across a threshold changes its target's level
// at every reading, and a write of thousands of readings would raise
// thousands of events, each a notification to every webhook. The state
// follows every reading all the same; only the events are bounded: of one
// target's changes within one write, Coalesce keeps at most three, and of
// its late exceedances, CoalesceLate keeps one. The readings stay stored,
// so the changes left out can always be recomputed from them.

// Coalesce picks, of the successive changes of one target within one
// write (to[i] the level change i moves to), those that raise an event:
// the first, so the onset is known at once and with its reading; the first
// to reach the highest level that any of them reaches, so no exceedance of
// a more severe level goes unsaid; and the last, so the events end where
// the target is. It returns their indices, ascending: at most three.
func Coalesce(to []int) []int {
	if len(to) == 0 {
		return nil
	}
	peak := 0
	for i, level := range to {
		if level > to[peak] {
			peak = i
		}
	}
	kept := []int{0}
	for _, i := range []int{peak, len(to) - 1} {
		if i != kept[len(kept)-1] {
			kept = append(kept, i)
		}
	}
	return kept
}

// CoalesceLate picks, of the late exceedances of one target within one
// write (ranks[i] the level exceedance i reaches), the one that raises an
// event: the first that reaches the highest of them. It returns -1 for
// none.
func CoalesceLate(ranks []int) int {
	worst := -1
	for i, rank := range ranks {
		if worst < 0 || rank > ranks[worst] {
			worst = i
		}
	}
	return worst
}

// Overdue. A sensor that stays silent longer than its overdue rule allows
// raises the rule's level, at once and whatever its readings were, until it
// reports again: a background check decides, every few seconds, for every
// sensor with a rule.

// OverdueStep is what a check does to a sensor's overdue alarm.
type OverdueStep int

// The steps of an overdue alarm.
const (
	OverdueKeep  OverdueStep = iota // leave it as it is
	OverdueRaise                    // the sensor fell silent too long
	OverdueClear                    // the sensor has reported since
)

// CheckOverdue decides, at now, the overdue alarm of a sensor silent since
// last (its newest reading, or without one, reported false, the creation
// of its rule) under a rule of after: a silence longer than after raises
// it; a reading within after clears it. raised says whether it is raised.
func CheckOverdue(raised, reported bool, last time.Time, after time.Duration, now time.Time) OverdueStep {
	silent := last.Add(after).Before(now)
	switch {
	case !raised && silent:
		return OverdueRaise
	case raised && reported && !silent:
		return OverdueClear
	}
	return OverdueKeep
}
