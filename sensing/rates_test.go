package sensing

import (
	"math"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// TestRate: a rate is the change from the window's first value to the
// reading's, per the rule's unit; a window with no earlier value has none.
func TestRate(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	rs := rates{7: &rateSeries{}}
	for m, v := range []float64{10, 11, 13, 16} {
		rs.add(7, at(m*10), v) // every 10 minutes
	}
	rs.add(7, at(50), math.NaN()) // no value: left out
	rule := store.AlarmRule{TargetID: 7, Window: 1800, Per: 3600}
	cursor := rs.cursor(rule)
	tests := []struct {
		name string
		t    time.Time
		v    float64
		want float64
	}{
		{"WindowFromTheFirst", at(30), 16, (16 - 10) / 0.5},         // 12:00 is exactly the window's start
		{"WindowSlides", at(40), 20, (20 - 11) / 0.5},               // from 12:10
		{"FirstInWindowLater", at(45), 20, (20 - 13) / (25.0 / 60)}, // from 12:20, 25 minutes
		{"AloneInItsWindow", at(90), 1, math.NaN()},
		{"EarlierAgain", at(40), 20, (20 - 11) / 0.5}, // out of order: as found
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cursor.rate(tt.t.UnixMicro(), tt.v)
			if math.IsNaN(tt.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("rate at %s of %v = %v, want %v", tt.t.Format("15:04"), tt.v, got, tt.want)
			}
		})
	}
	none := rates{}.cursor(rule)
	if got := none.rate(at(30).UnixMicro(), 1); !math.IsNaN(got) {
		t.Errorf("rate of a target without a series = %v, want NaN", got)
	}
}

// TestRateInOrder: rates of readings evaluated in order, each added to
// its series after its rates, as a write does, with two windows on one
// target and gaps between the readings, are those of their windows' first
// values, found anew.
func TestRateInOrder(t *testing.T) {
	rs := rates{7: &rateSeries{}}
	rules := []store.AlarmRule{{TargetID: 7, Window: 60, Per: 1}, {TargetID: 7, Window: 600, Per: 1}}
	cursors := []rateCursor{rs.cursor(rules[0]), rs.cursor(rules[1])}
	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var times []int64
	var values []float64
	for i := range 3000 {
		at := start.Add(time.Duration(i+i/500*700) * time.Second) // every 500 readings, a gap of 700 s
		v := float64(i % 97)
		for k, rule := range rules {
			from := at.UnixMicro() - rule.Window*1e6
			want := math.NaN()
			for j, us := range times {
				if us >= from {
					want = (v - values[j]) / (time.Duration(at.UnixMicro()-us) * time.Microsecond).Seconds()
					break
				}
			}
			if got := cursors[k].rate(at.UnixMicro(), v); math.IsNaN(want) != math.IsNaN(got) || !math.IsNaN(got) && got != want {
				t.Fatalf("reading %d: rate over %d s = %v, want %v", i, rule.Window, got, want)
			}
		}
		rs.add(7, at, v)
		times, values = append(times, at.UnixMicro()), append(values, v)
	}
}

// TestFlagSet: a reading's marks are the strongest flag of the whole
// reading and of each input, rejected before suspect; without drops the
// rejected values, and says when the whole reading is rejected.
func TestFlagSet(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	in := func(id int64) *int64 { return &id }
	fs := newFlagSet([]store.Flag{
		{Flag: store.Suspect, From: at(0), To: at(10)},                   // a range of whole readings
		{Flag: store.Rejected, InputID: in(101), From: at(5), To: at(5)}, // one value
		{Flag: store.Suspect, InputID: in(101), From: at(5), To: at(5)},
		{Flag: store.Rejected, From: at(20), To: at(20)},
	})
	r := store.Reading{Time: at(5), InputIDs: []int64{101, 102}, Values: []float64{1, 2}}
	if marks := fs.lookup(r.Time); len(marks) != 2 || marks[0] != (Mark{0, store.Suspect}) || marks[1] != (Mark{101, store.Rejected}) {
		t.Errorf("marks at 12:05 = %v, want the reading suspect and 101 rejected", marks)
	}
	kept, whole := fs.without(&r)
	if whole || len(kept.InputIDs) != 1 || kept.InputIDs[0] != 102 || len(r.InputIDs) != 2 {
		t.Errorf("without at 12:05 = %v (whole %v), want 102 alone and the reading untouched", kept, whole)
	}
	if got := fs.flag(102); got != store.Suspect {
		t.Errorf("flag of 102 at 12:05 = %q, want its reading's, suspect", got)
	}
	fs.lookup(at(20))
	if _, whole := fs.without(&store.Reading{Time: at(20), InputIDs: []int64{101}, Values: []float64{1}}); !whole {
		t.Error("the reading at 12:20 is not rejected whole")
	}
	if got := fs.rejectedWhole(); len(got) != 1 || !got[0][0].Equal(at(20)) {
		t.Errorf("rejectedWhole = %v, want 12:20 alone", got)
	}
	if marks := fs.lookup(at(30)); len(marks) != 0 {
		t.Errorf("marks at 12:30 = %v, want none", marks)
	}
	if newFlagSet(nil) != nil || (*flagSet)(nil).rejects() {
		t.Error("no flags make a flag set that rejects")
	}
}
