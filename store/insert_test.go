package store_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// insertStart is the instant of the k-th reading of these tests: second(k).
var insertStart = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

func second(k int) time.Time { return insertStart.Add(time.Duration(k) * time.Second) }

// batchOf is a reading at second(k) for each k, input 1 holding value.
func batchOf(value float64, ks ...int) []store.Reading {
	readings := make([]store.Reading, len(ks))
	for i, k := range ks {
		readings[i] = store.Reading{Time: second(k), InputIDs: []int64{1}, Values: []float64{value}}
	}
	return readings
}

func span(from, to int) []int {
	ks := make([]int, 0, to-from)
	for k := from; k < to; k++ {
		ks = append(ks, k)
	}
	return ks
}

// newPlainSensor creates a sensor without a blueprint in a fresh
// organization and project of db.
func newPlainSensor(t *testing.T, db *store.DB) (store.Sensor, store.SensorKey) {
	t.Helper()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	return getSensor(t, db, key), key
}

// stored is the sensor's readings as k → value of input 1.
func stored(t *testing.T, db *store.DB, sensor store.Sensor) map[int]float64 {
	t.Helper()
	got := map[int]float64{}
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
	err := db.ListReadings(t.Context(), sensor, q, func(r *store.Reading) error {
		got[int(r.Time.Sub(insertStart)/time.Second)] = r.Values[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestInsertReadingsOverwrite writes a batch over stored readings and
// checks what it reports and what is stored: every instant of the batch
// holds its value, every other stored instant is untouched. Each case runs
// as a small batch, which the lock's round trip upserts, and as a large
// one, deleted and COPYed: the case's batch and, after the stored
// readings, store.UpsertMax new ones more.
func TestInsertReadingsOverwrite(t *testing.T) {
	db := newDB(t)
	tests := []struct {
		name   string
		stored []int // holding value 1
		batch  []store.Reading
		want   store.Written
		after  map[int]float64
	}{
		{
			name:   "all new, between stored ones",
			stored: []int{0, 10},
			batch:  batchOf(2, 1, 2, 3),
			want:   store.Written{New: 3},
			after:  map[int]float64{0: 1, 1: 2, 2: 2, 3: 2, 10: 1},
		},
		{
			name:   "some",
			stored: span(0, 4),
			batch:  batchOf(2, 1, 3),
			want:   store.Written{Replaced: 2},
			after:  map[int]float64{0: 1, 1: 2, 2: 1, 3: 2},
		},
		{
			name:   "all",
			stored: span(0, 3),
			batch:  batchOf(2, 0, 1, 2),
			want:   store.Written{Replaced: 3},
			after:  map[int]float64{0: 2, 1: 2, 2: 2},
		},
		{
			name:   "mix",
			stored: []int{1, 3},
			batch:  batchOf(2, 0, 1, 2, 3, 4),
			want:   store.Written{New: 3, Replaced: 2},
			after:  map[int]float64{0: 2, 1: 2, 2: 2, 3: 2, 4: 2},
		},
		{
			name:   "duplicates in the batch, the later wins",
			stored: []int{1},
			batch:  append(append(batchOf(2, 2, 1), batchOf(3, 1)...), batchOf(4, 2)...),
			want:   store.Written{New: 1, Replaced: 1},
			after:  map[int]float64{1: 3, 2: 4},
		},
	}
	for _, large := range []bool{false, true} {
		for _, tt := range tests {
			name := "Small/" + tt.name
			batch, want, after := tt.batch, tt.want, maps.Clone(tt.after)
			if large {
				name = "Large/" + tt.name
				more := span(100, 100+store.UpsertMax)
				batch = append(slices.Clone(batch), batchOf(5, more...)...)
				want.New += len(more)
				for _, k := range more {
					after[k] = 5
				}
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				sensor, key := newPlainSensor(t, db)
				written, err := insert(ctx, db, key, batchOf(1, tt.stored...))
				if err != nil {
					t.Fatal(err)
				}
				if want := (store.Written{New: len(tt.stored)}); written != want {
					t.Fatalf("first InsertReadings = %+v, want %+v", written, want)
				}
				written, err = insert(ctx, db, key, batch)
				if err != nil {
					t.Fatal(err)
				}
				if written != want {
					t.Errorf("InsertReadings = %+v, want %+v", written, want)
				}
				got := stored(t, db, sensor)
				if len(got) != len(after) {
					t.Errorf("%d readings stored, want %d: %v", len(got), len(after), got)
				}
				for k, want := range after {
					if v, ok := got[k]; !ok || v != want {
						t.Errorf("reading at %d: %v (stored %v), want %v", k, v, ok, want)
					}
				}
			})
		}
	}
}

// TestInsertReadingsInputs stores readings of different inputs, in a small
// batch and a large one: each reads back with its own inputs.
func TestInsertReadingsInputs(t *testing.T) {
	db := newDB(t)
	for _, size := range []int{3, store.UpsertMax + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			sensor, key := newPlainSensor(t, db)
			batch := make([]store.Reading, size)
			for i := range batch {
				r := store.Reading{Time: second(i)}
				for id := range int64(1 + i%4) {
					r.InputIDs = append(r.InputIDs, id+1)
					r.Values = append(r.Values, float64(i)+float64(id)/10)
				}
				batch[i] = r
			}
			// Twice: new, then over themselves.
			for _, want := range []store.Written{{New: size}, {Replaced: size}} {
				if written, err := insert(t.Context(), db, key, batch); err != nil || written != want {
					t.Fatalf("insert = %+v, %v; want %+v", written, err, want)
				}
			}
			i := 0
			q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
			err := db.ListReadings(t.Context(), sensor, q, func(r *store.Reading) error {
				want := batch[i]
				if !r.Time.Equal(want.Time) || !slices.Equal(r.InputIDs, want.InputIDs) || !slices.Equal(r.Values, want.Values) {
					t.Errorf("reading %d = %v %v %v, want %v %v %v", i, r.Time, r.InputIDs, r.Values, want.Time, want.InputIDs, want.Values)
				}
				i++
				return nil
			})
			if err != nil || i != size {
				t.Fatalf("%d readings, %v; want %d", i, err, size)
			}
		})
	}
}

// TestInsertReadingsConcurrentOverlap posts overlapping batches of one
// sensor at once: each succeeds whole, each instant is new to exactly one
// of them, and each stored reading is one of the batches that hold its
// instant.
func TestInsertReadingsConcurrentOverlap(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	sensor, key := newPlainSensor(t, db)
	const (
		batches = 8
		size    = 200
		step    = 50 // each batch starts this far after the previous one
	)
	var (
		wg      sync.WaitGroup
		written [batches]store.Written
		errs    [batches]error
	)
	for b := range batches {
		wg.Go(func() {
			written[b], errs[b] = insert(ctx, db, key, batchOf(float64(b), span(b*step, b*step+size)...))
		})
	}
	wg.Wait()
	var total store.Written
	for b := range batches {
		if errs[b] != nil {
			t.Fatalf("batch %d: %v", b, errs[b])
		}
		total.New += written[b].New
		total.Replaced += written[b].Replaced
	}
	distinct := (batches-1)*step + size
	if want := (store.Written{New: distinct, Replaced: batches*size - distinct}); total != want {
		t.Errorf("InsertReadings' counts add up to %+v, want %+v", total, want)
	}
	got := stored(t, db, sensor)
	if len(got) != distinct {
		t.Errorf("%d readings stored, want %d", len(got), distinct)
	}
	for k, v := range got {
		b := int(v)
		if b < 0 || b >= batches || k < b*step || k >= b*step+size {
			t.Errorf("reading at %d holds %v, a batch that does not cover it", k, fmt.Sprint(v))
		}
	}
}

// The lock's round trip reads a batch's hours with the generic plan of
// their statement, planned once per connection: PostgreSQL's plan cache
// would plan it for every batch, which cost more than running it.
func TestBatchHoursPlannedOnce(t *testing.T) {
	t.Parallel()
	pool, err := store.Open(t.Context(), storetest.NewDatabase(t), store.PoolConfig{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	org := newOrg(t, db)
	project, err := db.CreateProject(t.Context(), org.ID, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	key := newSensor(t, db, project, nil)
	const batches = 8
	for k := range batches {
		mustInsert(t, db, key, batchOf(1, k*3600, k*3600+1)...)
	}
	var generic, custom int
	err = pool.QueryRow(t.Context(), `
SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM rollup_dirty d WHERE d.sensor_id = $1 AND d.hour = h.hour%'`).Scan(&generic, &custom)
	if err != nil {
		t.Fatal(err)
	}
	if generic != batches || custom != 0 {
		t.Errorf("the batches' hours were read with %d generic and %d custom plans, want %d and 0", generic, custom, batches)
	}
}
