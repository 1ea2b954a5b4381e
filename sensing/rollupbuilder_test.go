package sensing

import (
	"reflect"
	"testing"
	"time"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// rollupBuilderTests are hours of readings as the builder may be given
// them: mostly in time order with the ids of the one before, and the
// readings that leave that path.
var rollupBuilderTests = []struct {
	name     string
	seed     []store.Reading // rolled up first, then seeded as a stored rollup
	readings []store.Reading
}{
	{name: "InOrder", readings: []store.Reading{
		at(0, []int64{1, 2}, 1, 2), at(1, []int64{1, 2}, 3, -4), at(20*60, []int64{1, 2}, 5, 6), at(59*60, []int64{1, 2}, 7, 8),
	}},
	{name: "EarlierThanTheOneBefore", readings: []store.Reading{
		at(10, []int64{1, 2}, 1, 2), at(5, []int64{1, 2}, 3, 4), at(20, []int64{1, 2}, 5, 6),
	}},
	{name: "EarlierInAnotherQuarter", readings: []store.Reading{
		at(16*60, []int64{1}, 1), at(60, []int64{1}, 2), at(61, []int64{1}, 3), at(17*60, []int64{1}, 4), at(62, []int64{1}, 5),
	}},
	{name: "OtherIDs", readings: []store.Reading{
		at(0, []int64{1, 2}, 1, 2), at(1, []int64{2, 3}, 3, 4), at(2, []int64{1, 2, 3}, 5, 6, 7), at(3, []int64{3}, 8),
	}},
	{name: "InOrderThenEarlier", readings: []store.Reading{
		at(0, []int64{1, 2}, 4, 2), at(16*60, []int64{1, 2}, 3, -4), at(31*60, []int64{1, 2}, 9, 6), at(32*60, []int64{1, 2}, -7, 8), at(10, []int64{1, 2}, 11, -12),
	}},
	{name: "SeededInOrder", seed: []store.Reading{at(60, []int64{1, 2}, 1, 20), at(16*60, []int64{1, 2}, 3, -4)}, readings: []store.Reading{
		at(17*60, []int64{1, 2}, 5, 6), at(46*60, []int64{1, 2}, -7, 8), at(47*60, []int64{1, 2}, 9, 10),
	}},
	{name: "SeededLater", seed: []store.Reading{at(20*60, []int64{1, 2}, 1, 2), at(35*60, []int64{1, 2}, 3, 4)}, readings: []store.Reading{
		at(25*60, []int64{1, 2}, 5, 6),
	}},
	{name: "SeededEarlier", seed: []store.Reading{at(60, []int64{1, 2}, 1, 2)}, readings: []store.Reading{
		at(120, []int64{1, 2}, 3, 4), at(40*60, []int64{2}, 5),
	}},
}

var builderHour = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// at is a reading s seconds into builderHour.
func at(s int, ids []int64, values ...float64) store.Reading {
	return store.Reading{Time: builderHour.Add(time.Duration(s) * time.Second), InputIDs: ids, Values: values}
}

// TestRollupBuilderInAnyOrder holds the builder to the rollup that adds
// each value to its series with stats.Partial.AddAny, whatever the order
// of the readings and of their ids.
func TestRollupBuilderInAnyOrder(t *testing.T) {
	for _, tt := range rollupBuilderTests {
		t.Run(tt.name, func(t *testing.T) {
			b := newRollupBuilder(1, nil)
			var want store.HourRollup
			if tt.seed != nil {
				s := newRollupBuilder(1, nil)
				for i := range tt.seed {
					s.add(builderHour, &tt.seed[i])
				}
				seeded := s.finish()[0]
				b.seed(&seeded)
				want = seeded
			} else {
				want = store.HourRollup{Hour: builderHour, Version: 1, Whole: true}
			}
			for _, r := range tt.readings {
				want.Count++
				q := &want.Quarters[r.Time.Sub(builderHour)/(15*time.Minute)]
				q.Count++
				for j, id := range r.InputIDs {
					addAny(&want.Inputs, id, r.Time, r.Values[j])
					addAny(&q.Inputs, id, r.Time, r.Values[j])
				}
			}
			for i := range tt.readings {
				b.add(builderHour, &tt.readings[i])
			}
			rows := b.finish()
			tidySeries(&want.Inputs, &want.Outputs)
			for k := range want.Quarters {
				tidySeries(&want.Quarters[k].Inputs, &want.Quarters[k].Outputs)
			}
			if len(rows) != 1 {
				t.Fatalf("rows = %d, want 1", len(rows))
			}
			if got := rows[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("rollup =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// addAny adds v of t to id's series in s with stats.Partial.AddAny.
func addAny(s *[]store.Series, id int64, t time.Time, v float64) {
	for k := range *s {
		if (*s)[k].ID == id {
			(*s)[k].AddAny(t, v)
			return
		}
	}
	p := store.Series{ID: id, Partial: stats.Partial{}}
	p.AddAny(t, v)
	*s = append(*s, p)
}
