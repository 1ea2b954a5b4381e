package sensing_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// answerSink writes an aggregate's answer down, bucket by bucket.
type answerSink struct{ strings.Builder }

func (s *answerSink) Start(store.Sensor, []time.Time, []int64, []int64) error { return nil }
func (s *answerSink) Counts(counts []store.BucketCount) error {
	fmt.Fprintln(s, counts)
	return nil
}
func (s *answerSink) Outputs(time.Time, []*stats.Stats) error { return nil }
func (s *answerSink) Input(in *store.InputStats) error {
	fmt.Fprintln(s, in.Bucket, in.InputID, in.Count, in.Sum, in.Min, in.Max)
	return nil
}

// A grain PostgreSQL cannot sum in part (a value of 2^1000 where other
// readings of the hour have other inputs) is read reading by reading for
// that part alone: the answer is the one from the readings.
func TestAggregateGrainInPart(t *testing.T) {
	core, db := newService(t)
	f := newFixture(t, db)
	ingest(t, core, f.key,
		store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 2}},
		store.Reading{Time: minute(10), InputIDs: []int64{f.u()}, Values: []float64{0x1p1000}},
		store.Reading{Time: minute(20), InputIDs: []int64{f.u(), f.i()}, Values: []float64{3, 4}})
	q := store.BucketQuery{From: minute(-60), To: minute(60), Interval: time.Hour, Raw: true}
	answer := func(core *sensing.Service) string {
		var sink answerSink
		if _, err := core.Aggregate(t.Context(), f.key, q, sensing.AggregateOptions{}, &sink); err != nil {
			t.Fatal(err)
		}
		return sink.String()
	}
	got := answer(core)
	want := answer(sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{ReadingsOnly: true}))
	if got != want {
		t.Errorf("aggregate =\n%swant, from the readings alone,\n%s", got, want)
	}
	if !strings.Contains(want, "[{2024-05-01 12:00:00 +0000 UTC 3}]") {
		t.Errorf("answer from the readings alone\n%shas not 3 readings at noon", want)
	}
}

// Days of inputs alone are summed by PostgreSQL day by day, in time
// order: the very sums that the readings added one by one give, bit for
// bit (0.1, then 0.2 and 0.3 in the next hour, sum to 0.6000000000000001;
// summed by hour or quarter first, to 0.6). A day with readings of other
// inputs and a value its sum cannot add (2^1000) is the readings' too.
func TestAggregateDaysAreTheReadings(t *testing.T) {
	core, db := newService(t)
	f := newFixture(t, db)
	ingest(t, core, f.key,
		store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.1, 1}},
		store.Reading{Time: minute(70), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.2, 2}},
		store.Reading{Time: minute(72), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.3, 3}},
		store.Reading{Time: minute(24 * 60), InputIDs: []int64{f.u()}, Values: []float64{0x1p1000}},
		store.Reading{Time: minute(24*60 + 10), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 2}})
	readingsOnly := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{ReadingsOnly: true})
	for _, zone := range []string{"UTC", "Asia/Kolkata"} {
		t.Run(zone, func(t *testing.T) {
			q := store.BucketQuery{From: minute(-12 * 60), To: minute(36 * 60), Interval: 24 * time.Hour, Zone: zone, Raw: true}
			answer := func(core *sensing.Service) string {
				var sink answerSink
				if _, err := core.Aggregate(t.Context(), f.key, q, sensing.AggregateOptions{}, &sink); err != nil {
					t.Fatal(err)
				}
				return sink.String()
			}
			got, want := answer(core), answer(readingsOnly)
			if got != want {
				t.Errorf("aggregate =\n%swant, from the readings alone,\n%s", got, want)
			}
			if !strings.Contains(want, fmt.Sprint(f.u(), 3, 0.6000000000000001)) {
				t.Errorf("answer from the readings alone\n%shas not 0.6000000000000001 for the 3 readings of the first day", want)
			}
		})
	}
}

// outputsSink writes an aggregate's answer down with its outputs.
type outputsSink struct{ answerSink }

func (s *outputsSink) Outputs(bucket time.Time, outputs []*stats.Stats) error {
	for k, o := range outputs {
		if o != nil {
			fmt.Fprintln(s, bucket, "output", k, o.Count, o.Sum, o.Min, o.Max)
		}
	}
	return nil
}

// With outputs, a range long enough is read on two connections, each
// about half of it: cut where a day starts, so that each day's values are
// added in time order, the very sums that the readings added one by one
// give (0.1, 0.2, 0.3 sum to 0.6000000000000001 in that order; cut
// between the first two, to 0.6), in UTC and in Kolkata.
func TestAggregateOutputsDaysAreTheReadings(t *testing.T) {
	core, db := newService(t)
	f := newFixture(t, db)
	day := 24 * 60
	// The range's middle is 6:00 UTC on the second day.
	ingest(t, core, f.key,
		store.Reading{Time: minute(-60), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}},
		store.Reading{Time: minute(day - 7*60), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.1, 1}},
		store.Reading{Time: minute(day - 5*60), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.2, 1}},
		store.Reading{Time: minute(day - 5*60 + 2), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.3, 1}},
		store.Reading{Time: minute(2*day - 60), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}})
	readingsOnly := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{ReadingsOnly: true})
	for _, zone := range []string{"UTC", "Asia/Kolkata"} {
		t.Run(zone, func(t *testing.T) {
			q := store.BucketQuery{From: minute(-12 * 60), To: minute(2 * day), Interval: 24 * time.Hour, Zone: zone, Raw: true}
			answer := func(core *sensing.Service) string {
				var sink outputsSink
				if _, err := core.Aggregate(t.Context(), f.key, q, sensing.AggregateOptions{Outputs: true}, &sink); err != nil {
					t.Fatal(err)
				}
				return sink.String()
			}
			got, want := answer(core), answer(readingsOnly)
			if got != want {
				t.Errorf("aggregate =\n%swant, from the readings alone,\n%s", got, want)
			}
			// p = u * i * 2: 0.2, 0.4, 0.6.
			for _, sum := range []string{fmt.Sprint(f.u(), 3, 0.6000000000000001), fmt.Sprint("output 0 3 ", 1.2000000000000002)} {
				if !strings.Contains(want, sum) {
					t.Errorf("answer from the readings alone\n%shas not %s for the 3 readings of the second day", want, sum)
				}
			}
		})
	}
}

// Equivalence test: on TimescaleDB, the readings' chunks compressed (as
// the compression policy leaves readings older than its compress_after)
// give the answers they gave before, bit for bit, and those of the
// readings alone: days of inputs alone summed by PostgreSQL day by day
// (a day with a value its sum cannot add, read reading by reading), and
// with outputs, read on two connections. It is skipped on plain
// PostgreSQL, which has no chunks.
func TestAggregateOnCompressedChunks(t *testing.T) {
	pool := storetest.NewPool(t)
	db := store.New(pool)
	if mode, _, err := db.StorageMode(t.Context()); err != nil || mode != store.TimescaleDB {
		t.Skipf("storage mode %s (%v): no chunks to compress", mode, err)
	}
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour})
	readingsOnly := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{ReadingsOnly: true})
	f := newFixture(t, db)
	day := 24 * 60
	ingest(t, core, f.key,
		store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.1, 1}},
		store.Reading{Time: minute(70), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.2, 2}},
		store.Reading{Time: minute(72), InputIDs: []int64{f.u(), f.i()}, Values: []float64{0.3, 3}},
		store.Reading{Time: minute(day), InputIDs: []int64{f.u()}, Values: []float64{0x1p1000}},
		store.Reading{Time: minute(day + 10), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 2}},
		store.Reading{Time: minute(2*day - 60), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}})
	type query struct {
		zone    string
		outputs bool
	}
	var queries []query
	for _, zone := range []string{"UTC", "Asia/Kolkata"} {
		for _, outputs := range []bool{false, true} {
			queries = append(queries, query{zone, outputs})
		}
	}
	answer := func(core *sensing.Service, q query) string {
		var sink outputsSink
		bq := store.BucketQuery{From: minute(-12 * 60), To: minute(2 * day), Interval: 24 * time.Hour, Zone: q.zone, Raw: true}
		if _, err := core.Aggregate(t.Context(), f.key, bq, sensing.AggregateOptions{Outputs: q.outputs}, &sink); err != nil {
			t.Fatal(err)
		}
		return sink.String()
	}
	before := map[query]string{}
	for _, q := range queries {
		before[q] = answer(core, q)
	}
	var compressed int
	if err := pool.QueryRow(t.Context(), `SELECT count(compress_chunk(c)) FROM show_chunks('readings') c`).Scan(&compressed); err != nil {
		t.Fatal(err)
	}
	if compressed == 0 {
		t.Fatal("no chunk compressed")
	}
	for _, q := range queries {
		got, want := answer(core, q), answer(readingsOnly, q)
		if got != before[q] {
			t.Errorf("%+v: aggregate on compressed chunks =\n%swant, as before,\n%s", q, got, before[q])
		}
		if got != want {
			t.Errorf("%+v: aggregate on compressed chunks =\n%swant, from the readings alone,\n%s", q, got, want)
		}
		if !strings.Contains(got, fmt.Sprint(f.u(), 3, 0.6000000000000001)) && q.zone == "UTC" {
			t.Errorf("%+v: answer\n%shas not 0.6000000000000001 for the 3 readings of the first day", q, got)
		}
	}
}
