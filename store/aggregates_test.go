package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// rollUp recomputes the rollups of the sensor's queued hours, its
// outputs' of output id 99 as each reading's first input, as the
// maintainer does.
func rollUp(t *testing.T, db *store.DB, key store.SensorKey) {
	t.Helper()
	err := db.InTx(t.Context(), func(tx *store.Tx) error {
		q, err := tx.ClaimQueuedHours(t.Context(), key.SensorID, 100)
		if err != nil || len(q.Hours) == 0 {
			return err
		}
		if err := tx.RecomputeHours(t.Context(), q); err != nil {
			return err
		}
		var rows []store.OutputRollup
		err = tx.HourReadings(t.Context(), q, func(hour time.Time, r *store.Reading) error {
			if n := len(rows); n == 0 || !rows[n-1].Hour.Equal(hour) {
				rows = append(rows, store.OutputRollup{Hour: hour, OutputID: 99})
			}
			rows[len(rows)-1].Add(r.Time, r.Values[0])
			return nil
		})
		if err != nil {
			return err
		}
		if err := tx.StoreOutputRollups(t.Context(), q, rows); err != nil {
			return err
		}
		return tx.FinishQueuedHours(t.Context(), q)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAggregateRows reads an aggregate's rows in one snapshot: a plan
// that reads the readings alone, one that reads the rollups of whole
// hours and the readings of the edges and of a queued hour, and the
// counts, inputs' statistics, outputs' rollups and readings each plan
// reads.
func TestAggregateRows(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	sensor := store.Sensor{ID: key.SensorID, ProjectID: key.ProjectID}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var readings []store.Reading
	for m := 0; m < 4*60; m += 10 { // 4 hours, a reading every 10 minutes
		readings = append(readings, store.Reading{Time: start.Add(time.Duration(m) * time.Minute), InputIDs: []int64{1, 2}, Values: []float64{float64(m), 1}})
	}
	mustInsert(t, db, key, readings...)
	rollUp(t, db, key)
	mustInsert(t, db, key, store.Reading{Time: start.Add(2*time.Hour + 5*time.Minute), InputIDs: []int64{1}, Values: []float64{1000}}) // queues hour 2

	type read struct {
		use     store.RollupUse
		counts  []store.BucketCount
		inputs  []store.InputStats
		rolled  map[time.Time]int64 // outputs' rollups: count by bucket
		rows    int                 // readings read for the inputs
		outRows int                 // and for the outputs
	}
	aggregate := func(q store.BucketQuery) read {
		t.Helper()
		var r read
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			plan, err := tx.PlanBuckets(ctx, sensor, q, true)
			if err != nil {
				return err
			}
			r.use = plan.Use()
			if r.counts, err = tx.BucketCounts(ctx, plan); err != nil {
				return err
			}
			if err := tx.InputStats(ctx, plan, func(s *store.InputStats) error {
				r.inputs = append(r.inputs, *s)
				return nil
			}); err != nil {
				return err
			}
			r.rolled = map[time.Time]int64{}
			if err := tx.OutputRollups(ctx, plan, func(bucket time.Time, id int64, p *stats.Partial) error {
				if id != 99 {
					t.Errorf("output rollup of output %d, want 99", id)
				}
				r.rolled[bucket] += p.Count
				return nil
			}); err != nil {
				return err
			}
			if err := tx.BucketReadings(ctx, plan, false, func(time.Time, *store.Reading) error { r.rows++; return nil }); err != nil {
				return err
			}
			return tx.BucketReadings(ctx, plan, true, func(time.Time, *store.Reading) error { r.outRows++; return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	hourly := store.BucketQuery{From: start, To: start.Add(4 * time.Hour), Interval: time.Hour}
	t.Run("Raw", func(t *testing.T) {
		q := hourly
		q.Raw = true
		r := aggregate(q)
		if r.use != store.RollupsNone || r.rows != len(readings)+1 || r.outRows != r.rows || len(r.rolled) != 0 {
			t.Errorf("raw: use %s, %d readings read (%d for outputs), rollups %v; want none, %d, from the readings alone", r.use, r.rows, r.outRows, r.rolled, len(readings)+1)
		}
		if got := countsOf(r.counts); !slices.Equal(got, []int64{6, 6, 7, 6}) {
			t.Errorf("counts %v, want 6, 6, 7, 6", got)
		}
	})
	t.Run("FromRollups", func(t *testing.T) {
		r := aggregate(hourly)
		if r.use != store.RollupsPartial || r.rows != 7 || r.outRows != 7 {
			t.Errorf("use %s, %d readings read (%d for outputs); want partial, the queued hour's 7", r.use, r.rows, r.outRows)
		}
		if got := countsOf(r.counts); !slices.Equal(got, []int64{6, 6, 7, 6}) {
			t.Errorf("counts %v, want 6, 6, 7, 6", got)
		}
		if len(r.rolled) != 3 || r.rolled[start.Add(2*time.Hour)] != 0 || r.rolled[start] != 6 {
			t.Errorf("outputs' rollups %v, want 6 in each hour but the queued one", r.rolled)
		}
		// Input 1 of hour 0: 0, 10, ... 50.
		first := r.inputs[0]
		if first.InputID != 1 || first.Count != 6 || first.Min != 0 || first.Max != 50 || first.Sum != 150 || !first.Bucket.Equal(start) {
			t.Errorf("input 1 in the first hour = %+v, want 6 values of 0 to 50, summing to 150", first)
		}
		if len(r.inputs) != 4*2 {
			t.Errorf("%d input statistics, want 2 inputs in each of 4 hours", len(r.inputs))
		}
	})
	t.Run("Buckets", func(t *testing.T) {
		starts, err := db.Buckets(ctx, store.BucketQuery{From: start.Add(30 * time.Minute), To: start.Add(3 * time.Hour), Interval: time.Hour, Zone: "Asia/Kolkata"})
		if err != nil {
			t.Fatal(err)
		}
		// Kolkata's hours start at half past, UTC.
		want := []time.Time{start.Add(30 * time.Minute), start.Add(90 * time.Minute), start.Add(150 * time.Minute)}
		if !slices.EqualFunc(starts, want, time.Time.Equal) {
			t.Errorf("Buckets = %v, want %v", starts, want)
		}
	})
	t.Run("SnapshotIsReadOnly", func(t *testing.T) {
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			_, err := tx.LockSensorWrite(ctx, key, nil)
			return err
		})
		if err == nil {
			t.Error("a write in a snapshot passed, want it refused")
		}
	})
}

func countsOf(counts []store.BucketCount) []int64 {
	out := make([]int64, len(counts))
	for i, c := range counts {
		out[i] = c.Count
	}
	return out
}
