package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// queuedHours returns the sensor's hours queued for the maintainer, as tx
// reads them.
func queuedHours(t *testing.T, ctx context.Context, tx *store.Tx, key store.SensorKey) []time.Time {
	t.Helper()
	queued, err := tx.QueuedHoursIn(ctx, key.SensorID, store.MinTime, store.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	hours := make([]time.Time, len(queued))
	for i, q := range queued {
		hours[i] = q.Hour
	}
	return hours
}

// TestBesideReadsTheSameSnapshot: a transaction Beside an InSnapshot one
// sees what it sees, and not a write committed by a third connection
// after its snapshot was taken.
func TestBesideReadsTheSameSnapshot(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	h0 := time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC)
	h1 := h0.Add(time.Hour)
	mustInsert(t, db, key, store.Reading{Time: h0, InputIDs: []int64{1}, Values: []float64{1}})
	err := db.InSnapshot(ctx, func(tx *store.Tx) error {
		if got := queuedHours(t, ctx, tx, key); !slices.Equal(got, []time.Time{h0}) {
			t.Errorf("outer: queued %v, want [%v]", got, h0)
		}
		// Committed after the snapshot, by another connection.
		mustInsert(t, db, key, store.Reading{Time: h1, InputIDs: []int64{1}, Values: []float64{2}})
		var side []time.Time
		called := false
		wait, started, err := tx.Beside(ctx, func(stx *store.Tx) error {
			called = true
			// Not queuedHours: fn runs on a goroutine of its own, where
			// t.Fatal must not be called.
			queued, err := stx.QueuedHoursIn(ctx, key.SensorID, store.MinTime, store.MaxTime)
			for _, q := range queued {
				side = append(side, q.Hour)
			}
			return err
		})
		if err != nil || !started {
			t.Fatalf("Beside: started %v, err %v", started, err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if !called || !slices.Equal(side, []time.Time{h0}) {
			t.Errorf("beside: called %v, queued %v, want [%v]", called, side, h0)
		}
		if got := queuedHours(t, ctx, tx, key); !slices.Equal(got, []time.Time{h0}) {
			t.Errorf("outer after: queued %v, want [%v]", got, h0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.InSnapshot(ctx, func(tx *store.Tx) error {
		if got := queuedHours(t, ctx, tx, key); !slices.Equal(got, []time.Time{h0, h1}) {
			t.Errorf("new snapshot: queued %v, want [%v %v]", got, h0, h1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBesideRefusesTheLastConnection: in a pool of two connections, one
// taken by the snapshot, Beside starts nothing and says so, without error.
func TestBesideRefusesTheLastConnection(t *testing.T) {
	ctx := t.Context()
	pool, err := store.Open(context.Background(), storetest.NewDatabase(t), store.PoolConfig{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	err = db.InSnapshot(ctx, func(tx *store.Tx) error {
		called := false
		wait, started, err := tx.Beside(ctx, func(*store.Tx) error {
			called = true
			return nil
		})
		if err != nil || started || wait != nil {
			t.Errorf("Beside = wait %v, started %v, err %v; want nil, false, nil", wait != nil, started, err)
		}
		if called {
			t.Error("Beside ran fn without a connection to spare")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStoreBatchRollups: the rollups given are written with the batch's
// commit, and the stale hours queued, not the others.
func TestStoreBatchRollups(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	h0 := time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC)
	h1 := h0.Add(time.Hour)
	readings := []store.Reading{
		{Time: h0, InputIDs: []int64{1}, Values: []float64{3}},
		{Time: h0.Add(time.Minute), InputIDs: []int64{1}, Values: []float64{5}},
		{Time: h1, InputIDs: []int64{1}, Values: []float64{7}},
	}
	var p stats.Partial
	p.Add(readings[0].Time, 3)
	p.Add(readings[1].Time, 5)
	err := db.InTx(ctx, func(tx *store.Tx) error {
		w, err := tx.LockSensorWrite(ctx, key, readings)
		if err != nil {
			return err
		}
		if err := tx.RecordInputs(ctx, w, store.InputIDsOf(readings)); err != nil {
			return err
		}
		if _, err := tx.WriteReadings(ctx, w, readings); err != nil {
			return err
		}
		rows := []store.HourRollup{{Hour: h0, Count: 2, Version: w.Sensor.FormulasVersion(), Whole: true,
			Inputs: []store.Series{{ID: 1, Partial: p}}}}
		tx.StoreBatchRollups(w, rows, []time.Time{h1})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.InSnapshot(ctx, func(tx *store.Tx) error {
		var got []store.HourRollup
		err := tx.HourRollups(ctx, key.SensorID, store.MinTime, store.MaxTime, false, true, func(r *store.HourRollup) error {
			got = append(got, store.HourRollup{Hour: r.Hour, Count: r.Count, Inputs: slices.Clone(r.Inputs)})
			return nil
		})
		if err != nil {
			return err
		}
		if len(got) != 1 || !got[0].Hour.Equal(h0) || got[0].Count != 2 || len(got[0].Inputs) != 1 {
			t.Fatalf("rollups = %+v, want one of %v with 2 readings of input 1", got, h0)
		}
		in := got[0].Inputs[0]
		if in.ID != 1 || in.Count != 2 || in.Min != 3 || in.Max != 5 || in.First != 3 || in.Last != 5 {
			t.Errorf("input rollup = %+v, want id 1, count 2, min/first 3, max/last 5", in)
		}
		if q := queuedHours(t, ctx, tx, key); !slices.Equal(q, []time.Time{h1}) {
			t.Errorf("queued %v, want [%v]", q, h1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStreamWriteSpan: the span of a stream is its first and last instant,
// whatever their order in it.
func TestStreamWriteSpan(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	stream := &sliceStream{readings: []store.Reading{one(3, 1), one(1, 2), one(9, 3), one(5, 4)}}
	var first, last time.Time
	err := db.InTxOnce(ctx, func(tx *store.Tx) error {
		sw, _, err := writeStream(ctx, tx, key, stream)
		if err == nil {
			first, last = sw.Span()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(at(1)) || !last.Equal(at(9)) {
		t.Errorf("Span() = %v, %v; want %v, %v", first, last, at(1), at(9))
	}
}

// TestFormulasVersion: 0 for a sensor without an instance, its instance's
// version otherwise.
func TestFormulasVersion(t *testing.T) {
	db := newDB(t)
	plain := getSensor(t, db, newSensor(t, db, newProject(t, db, newOrg(t, db)), nil))
	if v := plain.FormulasVersion(); v != 0 {
		t.Errorf("without an instance: FormulasVersion() = %d, want 0", v)
	}
	sensor, _ := newBlueprintSensor(t, db)
	if sensor.Instance == nil {
		t.Fatal("blueprint sensor has no instance")
	}
	if v := sensor.FormulasVersion(); v != sensor.Instance.Version || v == 0 {
		t.Errorf("FormulasVersion() = %d, want the instance's %d, not 0", v, sensor.Instance.Version)
	}
}
