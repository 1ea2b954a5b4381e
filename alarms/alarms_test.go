package alarms

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
)

// The levels of the tests, as the default set ranks them.
const (
	alert  = 1
	action = 2
	alarm  = 3
)

var stepTests = []struct {
	name   string
	rules  []Rule
	values []float64
	want   []int // the level after each value
}{
	{
		name:   "above triggers past the threshold, not at it",
		rules:  []Rule{{Rank: alert, Threshold: 10, Persistence: 1}},
		values: []float64{9, 10, 10.5, 10, 9},
		want:   []int{0, 0, alert, 0, 0},
	},
	{
		name:   "below triggers under the threshold",
		rules:  []Rule{{Rank: alert, Below: true, Threshold: -5, Persistence: 1}},
		values: []float64{0, -5, -5.1, -4},
		want:   []int{0, 0, alert, 0},
	},
	{
		name:   "the deadband keeps a hovering value from flapping",
		rules:  []Rule{{Rank: alert, Threshold: 10, Deadband: 1, Persistence: 1}},
		values: []float64{10.2, 9.8, 10.1, 9.5, 9, 8.9, 9.5, 10.1},
		want:   []int{alert, alert, alert, alert, 0, 0, 0, alert},
	},
	{
		name:   "a below rule's deadband lies above its threshold",
		rules:  []Rule{{Rank: alert, Below: true, Threshold: 0, Deadband: 2, Persistence: 1}},
		values: []float64{-1, 1, 1.99, 2, -0.5},
		want:   []int{alert, alert, alert, 0, alert},
	},
	{
		name:   "persistence waits for consecutive readings",
		rules:  []Rule{{Rank: alert, Threshold: 10, Persistence: 3}},
		values: []float64{11, 12, 9, 11, 11, 11, 11, 9},
		want:   []int{0, 0, 0, 0, 0, alert, alert, 0},
	},
	{
		name: "rules at several levels escalate and de-escalate",
		rules: []Rule{
			{Rank: alert, Threshold: 100, Persistence: 1},
			{Rank: action, Threshold: 150, Persistence: 1},
			{Rank: alarm, Threshold: 200, Persistence: 1},
		},
		values: []float64{90, 120, 210, 160, 99},
		want:   []int{0, alert, alarm, action, 0},
	},
	{
		name:   "a value that is not a number changes nothing",
		rules:  []Rule{{Rank: alert, Threshold: 10, Persistence: 2}},
		values: []float64{11, math.NaN(), 11, math.Inf(-1), 5},
		want:   []int{0, 0, alert, alert, 0},
	},
}

func TestObserve(t *testing.T) {
	for _, tt := range stepTests {
		t.Run(tt.name, func(t *testing.T) {
			target := Target{Rules: tt.rules, States: make([]State, len(tt.rules))}
			for i, v := range tt.values {
				_, got := target.Observe(v)
				if want := tt.want[i]; got != want {
					t.Fatalf("level after value %d (%v) = %d, want %d", i, v, got, want)
				}
			}
		})
	}
}

func TestRecheck(t *testing.T) {
	tests := []struct {
		name  string
		rule  Rule
		state State
		value float64
		want  State
	}{
		{"a raised threshold clears at once", Rule{Rank: alert, Threshold: 20, Persistence: 1}, State{Active: true, Streak: 1}, 15, State{}},
		{"a lowered threshold triggers at once", Rule{Rank: alert, Threshold: 10, Persistence: 1}, State{}, 15, State{Active: true, Streak: 1}},
		{"the newest reading counts once toward persistence", Rule{Rank: alert, Threshold: 10, Persistence: 2}, State{}, 15, State{Streak: 1}},
		{"a streak already counted is kept", Rule{Rank: alert, Threshold: 10, Persistence: 2}, State{Streak: 2}, 15, State{Active: true, Streak: 2}},
		{"the deadband still holds an active rule", Rule{Rank: alert, Threshold: 10, Deadband: 5, Persistence: 1}, State{Active: true, Streak: 1}, 8, State{Active: true}},
		{"a lowered persistence caps the streak", Rule{Rank: alert, Threshold: 10, Persistence: 2}, State{Streak: 5}, 15, State{Active: true, Streak: 2}},
		{"no value keeps the state", Rule{Rank: alert, Threshold: 10, Persistence: 1}, State{Active: true, Streak: 1}, math.NaN(), State{Active: true, Streak: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Recheck(tt.state, tt.value); got != tt.want {
				t.Errorf("Recheck(%+v, %v) = %+v, want %+v", tt.state, tt.value, got, tt.want)
			}
		})
	}
}

func TestLate(t *testing.T) {
	rules := []Rule{
		{Rank: alert, Threshold: 100, Deadband: 10, Persistence: 5},
		{Rank: alarm, Threshold: 200, Persistence: 5},
		{Rank: action, Below: true, Threshold: 0, Persistence: 1},
	}
	tests := []struct {
		value float64
		want  int
	}{
		{50, 0}, {100, 0}, {95, 0}, {101, alert}, {250, alarm}, {-1, action}, {math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := Late(rules, tt.value); got != tt.want {
			t.Errorf("Late(%v) = %d, want %d", tt.value, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		from, to int
		want     Change
	}{
		{0, 0, None}, {2, 2, None}, {0, 1, Triggered}, {0, 3, Triggered},
		{1, 3, Escalated}, {3, 2, Deescalated}, {2, 0, Cleared},
	}
	for _, tt := range tests {
		if got := Classify(tt.from, tt.to); got != tt.want {
			t.Errorf("Classify(%d, %d) = %q, want %q", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	ok := Rule{Rank: alert, Threshold: 1, Persistence: 1}
	tests := []struct {
		name  string
		edit  func(*Rule)
		field string // "": valid
	}{
		{"valid", func(*Rule) {}, ""},
		{"NaN threshold", func(r *Rule) { r.Threshold = math.NaN() }, "threshold"},
		{"infinite threshold", func(r *Rule) { r.Threshold = math.Inf(1) }, "threshold"},
		{"negative deadband", func(r *Rule) { r.Deadband = -0.1 }, "deadband"},
		{"infinite deadband", func(r *Rule) { r.Deadband = math.Inf(1) }, "deadband"},
		{"zero persistence", func(r *Rule) { r.Persistence = 0 }, "persistence"},
		{"too much persistence", func(r *Rule) { r.Persistence = MaxPersistence + 1 }, "persistence"},
		{"no rank", func(r *Rule) { r.Rank = 0 }, "level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			err := r.Check()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			var e *apperr.Error
			if !errors.As(err, &e) || e.Code != apperr.Invalid {
				t.Fatalf("Check() = %v, want an Invalid apperr.Error", err)
			}
			if got := e.Details["field"]; got != tt.field {
				t.Errorf("Check() names field %v, want %q", got, tt.field)
			}
		})
	}
}

var coalesceTests = []struct {
	name string
	to   []int // the level of each change
	want []int // the changes kept
}{
	{"no change", nil, nil},
	{"one change", []int{alert}, []int{0}},
	{"two changes", []int{alarm, alert}, []int{0, 1}},
	{"a flapping value keeps its first and last change", []int{alert, 0, alert, 0, alert, 0}, []int{0, 5}},
	{"the first change to the highest level is kept", []int{alert, 0, alert, alarm, alert, alarm, 0}, []int{0, 3, 6}},
	{"a peak at the end is the last change", []int{alert, action, alarm}, []int{0, 2}},
	{"a peak at the start is the first change", []int{alarm, alert, 0, alert}, []int{0, 3}},
	{"a rise back to the first change's level is folded", []int{action, alert, action, alert}, []int{0, 3}},
}

func TestCoalesce(t *testing.T) {
	for _, tt := range coalesceTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Coalesce(tt.to); !slices.Equal(got, tt.want) {
				t.Errorf("Coalesce(%v) = %v, want %v", tt.to, got, tt.want)
			}
		})
	}
}

// TestCoalesceBound: whatever the changes, at most three are kept, the
// first and the last among them, and one that reaches the highest level.
func TestCoalesceBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		to := make([]int, 1+r.IntN(50))
		for i := range to {
			to[i] = r.IntN(5)
		}
		kept := Coalesce(to)
		if len(kept) > 3 || kept[0] != 0 || kept[len(kept)-1] != len(to)-1 || !slices.IsSorted(kept) {
			t.Fatalf("Coalesce(%v) = %v, want at most 3, ascending, from the first to the last", to, kept)
		}
		if !slices.ContainsFunc(kept, func(i int) bool { return to[i] == slices.Max(to) }) {
			t.Fatalf("Coalesce(%v) = %v, keeps no change to the highest level %d", to, kept, slices.Max(to))
		}
	}
}

func TestCoalesceLate(t *testing.T) {
	for _, tt := range []struct {
		ranks []int
		want  int
	}{
		{nil, -1},
		{[]int{alert}, 0},
		{[]int{alert, alarm, action, alarm}, 1},
		{[]int{action, alert}, 0},
	} {
		if got := CoalesceLate(tt.ranks); got != tt.want {
			t.Errorf("CoalesceLate(%v) = %d, want %d", tt.ranks, got, tt.want)
		}
	}
}

var checkOverdueTests = []struct {
	name             string
	raised, reported bool
	silence, after   time.Duration
	want             OverdueStep
}{
	{"QuietWithinAfter", false, true, 59 * time.Minute, time.Hour, OverdueKeep},
	{"QuietExactlyAfter", false, true, time.Hour, time.Hour, OverdueKeep},
	{"QuietPastAfter", false, true, time.Hour + time.Microsecond, time.Hour, OverdueRaise},
	{"NeverReportedPastAfter", false, false, 2 * time.Hour, time.Hour, OverdueRaise},
	{"RaisedStillSilent", true, true, 2 * time.Hour, time.Hour, OverdueKeep},
	{"RaisedReportedSince", true, true, time.Minute, time.Hour, OverdueClear},
	{"RaisedReportedExactlyAfter", true, true, time.Hour, time.Hour, OverdueClear},
	// A rule made longer while its alarm stands, before any reading: only
	// a reading clears an overdue alarm.
	{"RaisedNeverReported", true, false, time.Minute, time.Hour, OverdueKeep},
}

func TestCheckOverdue(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range checkOverdueTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckOverdue(tt.raised, tt.reported, now.Add(-tt.silence), tt.after, now); got != tt.want {
				t.Errorf("CheckOverdue(raised %v, reported %v, silent %v, after %v) = %v, want %v", tt.raised, tt.reported, tt.silence, tt.after, got, tt.want)
			}
		})
	}
}
