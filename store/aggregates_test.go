package store_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// rollUp recomputes the rollups of the sensor's queued hours, as the
// maintainer does: each hour's count, its inputs' statistics, and those
// of output 99, each reading's first input.
func rollUp(t *testing.T, db *store.DB, key store.SensorKey) {
	t.Helper()
	err := db.InTx(t.Context(), func(tx *store.Tx) error {
		q, err := tx.ClaimQueuedHours(t.Context(), key.SensorID, 100, 0)
		if err != nil || len(q.Hours) == 0 {
			return err
		}
		var rows []store.HourRollup
		err = tx.HourReadings(t.Context(), q, func(hour time.Time, r *store.Reading) error {
			if n := len(rows); n == 0 || !rows[n-1].Hour.Equal(hour) {
				rows = append(rows, store.HourRollup{Hour: hour, Version: 7, Outputs: []store.Series{{ID: 99}}})
			}
			row := &rows[len(rows)-1]
			row.Count++
			for i, id := range r.InputIDs {
				k := slices.IndexFunc(row.Inputs, func(s store.Series) bool { return s.ID == id })
				if k < 0 {
					k = len(row.Inputs)
					row.Inputs = append(row.Inputs, store.Series{ID: id})
				}
				row.Inputs[k].Add(r.Time, r.Values[i])
			}
			row.Outputs[0].Add(r.Time, r.Values[0])
			quarter := &row.Quarters[r.Time.Minute()/15]
			quarter.Count++
			quarter.Inputs = append(quarter.Inputs, store.Series{ID: r.InputIDs[0], Partial: stats.Partial{Count: 1, Min: r.Values[0]}})
			return nil
		})
		if err != nil {
			return err
		}
		return tx.StoreHourRollups(t.Context(), q, rows)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAggregateRows reads what an aggregate reads, in one snapshot: the
// queued hours, the hours' rollups as the maintainer stored them, the
// readings of spans, and the buckets' starts.
func TestAggregateRows(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var readings []store.Reading
	for m := 0; m < 4*60; m += 10 { // 4 hours, a reading every 10 minutes
		readings = append(readings, store.Reading{Time: start.Add(time.Duration(m) * time.Minute), InputIDs: []int64{1, 2}, Values: []float64{float64(m), 1}})
	}
	mustInsert(t, db, key, readings...)
	rollUp(t, db, key)
	mustInsert(t, db, key, store.Reading{Time: start.Add(2*time.Hour + 5*time.Minute), InputIDs: []int64{1}, Values: []float64{1000}}) // queues hour 2

	t.Run("Rollups", func(t *testing.T) {
		var hours []store.HourRollup
		var queued []store.QueuedHour
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			var err error
			if queued, err = tx.QueuedHoursIn(ctx, key.SensorID, start, start.Add(4*time.Hour)); err != nil {
				return err
			}
			return tx.HourRollups(ctx, key.SensorID, start, start.Add(4*time.Hour), true, true, func(r *store.HourRollup) error {
				c := *r
				c.Inputs, c.Outputs = slices.Clone(r.Inputs), slices.Clone(r.Outputs)
				hours = append(hours, c)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(queued) != 1 || !queued[0].Hour.Equal(start.Add(2*time.Hour)) || !queued[0].Inputs {
			t.Errorf("queued %v, want hour 2, its inputs", queued)
		}
		if len(hours) != 4 {
			t.Fatalf("%d hours of rollups, want 4", len(hours))
		}
		slices.SortFunc(hours, func(a, b store.HourRollup) int { return a.Hour.Compare(b.Hour) })
		// Input 1 of hour 0: 0, 10, ... 50.
		h := hours[0]
		in := h.Inputs[0]
		want := stats.Partial{Count: 6, Sums: stats.Sums{Lo: 150}, Min: 0, Max: 50, First: 0, FirstAt: start, Last: 50, LastAt: start.Add(50 * time.Minute)}
		if !h.Whole || h.Count != 6 || h.Version != 7 || len(h.Inputs) != 2 || in.ID != 1 || in.Partial != want {
			t.Errorf("hour 0 = %+v, want 6 readings of version 7, input 1 of 0 to 50 summing to 150", h)
		}
		if len(h.Outputs) != 1 || h.Outputs[0].ID != 99 || h.Outputs[0].Partial != want {
			t.Errorf("hour 0's outputs = %+v, want output 99 as input 1", h.Outputs)
		}
	})
	t.Run("Quarters", func(t *testing.T) {
		var counts []int64
		var inputs []int
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			return tx.QuarterRollups(ctx, key.SensorID, []time.Time{start}, func(hour time.Time, quarters *[4]store.Quarter) error {
				for _, q := range quarters {
					counts, inputs = append(counts, q.Count), append(inputs, len(q.Inputs))
					if q.Outputs != nil {
						t.Errorf("quarter's outputs %v, want none kept", q.Outputs)
					}
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		// Readings at 0, 10, 20, 30, 40 and 50 minutes.
		if !slices.Equal(counts, []int64{2, 1, 2, 1}) || !slices.Equal(inputs, []int{2, 1, 2, 1}) {
			t.Errorf("quarters of hour 0 count %v readings and %v series, want 2, 1, 2, 1 of each", counts, inputs)
		}
	})
	t.Run("WithoutOutputs", func(t *testing.T) {
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			return tx.HourRollups(ctx, key.SensorID, start, start.Add(time.Hour), false, false, func(r *store.HourRollup) error {
				if r.Outputs != nil {
					t.Errorf("outputs %v read without outputs, want none", r.Outputs)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SpanReadings", func(t *testing.T) {
		var got []time.Time
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			from := []time.Time{start, start.Add(2 * time.Hour)}
			to := []time.Time{start.Add(15 * time.Minute), start.Add(2*time.Hour + 6*time.Minute)}
			return tx.SpanReadings(ctx, key.SensorID, from, to, []int64{1, 2}, func(r *store.Reading) error {
				got = append(got, r.Time)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Time{start, start.Add(10 * time.Minute), start.Add(2 * time.Hour), start.Add(2*time.Hour + 5*time.Minute)}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("SpanReadings = %v, want %v", got, want)
		}
	})
	t.Run("SpanInputGroups", func(t *testing.T) {
		type group struct {
			start time.Time
			count int64
			ids   string
			apart bool
			sums  string
		}
		groups := func(key store.SensorKey, from, to []time.Time, grain time.Duration, common []int64) ([]group, bool) {
			var got []group
			var ok bool
			err := db.InSnapshot(ctx, func(tx *store.Tx) error {
				var err error
				ok, err = tx.SpanInputGroups(ctx, key.SensorID, from, to, grain, common, func(g *store.InputGroup) error {
					sums := ""
					if !g.Apart {
						sums = fmt.Sprint(g.Sums, g.Min, g.Max)
					}
					got = append(got, group{g.Start, g.Count, fmt.Sprint(g.InputIDs), g.Apart, sums})
					return nil
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b group) int { return cmp.Or(a.start.Compare(b.start), cmp.Compare(a.ids, b.ids)) })
			return got, ok
		}
		// Input 1 is 0, 10, ... 230 by minute, input 2 is 1; hour 2 also
		// has input 1 alone, 1000 at 2:05. The spans leave out 1:00-2:00
		// and 3:20 on.
		from, to := []time.Time{start, start.Add(2 * time.Hour)}, []time.Time{start.Add(time.Hour), start.Add(3*time.Hour + 20*time.Minute)}
		got, ok := groups(key, from, to, time.Hour, []int64{1, 2})
		want := []group{
			{start, 6, "[1 2]", false, "[150 6] [0 1] [50 1]"},
			{start.Add(2 * time.Hour), 6, "[1 2]", false, "[870 6] [120 1] [170 1]"},
			{start.Add(2 * time.Hour), 1, "[1]", false, "[1000] [1000] [1000]"},
			{start.Add(3 * time.Hour), 2, "[1 2]", false, "[370 2] [180 1] [190 1]"},
		}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("SpanInputGroups by hour = %v, %v, want %v, true", got, ok, want)
		}
		got, _ = groups(key, []time.Time{start}, []time.Time{start.Add(20 * time.Minute)}, 15*time.Minute, []int64{1, 2})
		want = []group{{start, 2, "[1 2]", false, "[10 2] [0 1] [10 1]"}}
		if !slices.Equal(got, want) {
			t.Errorf("SpanInputGroups by quarter = %v, want %v", got, want)
		}
		// Readings of more inputs than the positions aggregated.
		got, _ = groups(key, []time.Time{start}, []time.Time{start.Add(20 * time.Minute)}, 15*time.Minute, []int64{1})
		if want := []group{{start, 2, "[1 2]", true, ""}}; !slices.Equal(got, want) {
			t.Errorf("SpanInputGroups of one position = %v, want %v", got, want)
		}
		if got, ok := groups(key, from, to, time.Hour, nil); ok || got != nil {
			t.Errorf("SpanInputGroups without common ids = %v, %v, want nothing, false", got, ok)
		}
		// A value PostgreSQL's float8 sum cannot add as stats.Sums does.
		huge := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		mustInsert(t, db, huge, store.Reading{Time: start, InputIDs: []int64{1}, Values: []float64{1}},
			store.Reading{Time: start.Add(time.Hour), InputIDs: []int64{1}, Values: []float64{-0x1p1000}})
		got, ok = groups(huge, []time.Time{start}, []time.Time{start.Add(2 * time.Hour)}, time.Hour, []int64{1})
		want = []group{{start, 1, "[1]", false, "[1] [1] [1]"}, {start.Add(time.Hour), 1, "[1]", true, ""}}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("SpanInputGroups with a value of -2^1000 = %v, %v, want %v, true: its hour apart", got, ok, want)
		}
	})
	t.Run("SpanInputBuckets", func(t *testing.T) {
		type piece struct {
			start time.Time
			count int64
			apart bool
			sums  string
		}
		pieces := func(key store.SensorKey, from, to []time.Time, common []int64) ([]piece, bool) {
			var got []piece
			var ok bool
			err := db.InSnapshot(ctx, func(tx *store.Tx) error {
				var err error
				ok, err = tx.SpanInputBuckets(ctx, key.SensorID, from, to, common, func(g *store.InputGroup) error {
					sums := ""
					if !g.Apart {
						sums = fmt.Sprint(g.InputIDs, g.Sums, g.Min, g.Max)
					}
					got = append(got, piece{g.Start, g.Count, g.Apart, sums})
					return nil
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return got, ok
		}
		// As SpanInputGroups' readings: hour 2 has input 1 alone at 2:05,
		// and nothing is after 3:50.
		from := []time.Time{start, start.Add(2 * time.Hour), start.Add(3 * time.Hour), start.Add(5 * time.Hour)}
		to := []time.Time{start.Add(time.Hour), start.Add(3 * time.Hour), start.Add(3*time.Hour + 20*time.Minute), start.Add(6 * time.Hour)}
		got, ok := pieces(key, from, to, []int64{1, 2})
		want := []piece{
			{start, 6, false, "[1 2] [150 6] [0 1] [50 1]"},
			{start.Add(2 * time.Hour), 7, true, ""},
			{start.Add(3 * time.Hour), 2, false, "[1 2] [370 2] [180 1] [190 1]"},
		}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("SpanInputBuckets = %v, %v, want %v, true", got, ok, want)
		}
		if got, ok := pieces(key, from, to, nil); ok || got != nil {
			t.Errorf("SpanInputBuckets without common ids = %v, %v, want nothing, false", got, ok)
		}
		huge := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		mustInsert(t, db, huge, store.Reading{Time: start, InputIDs: []int64{1}, Values: []float64{1}},
			store.Reading{Time: start.Add(time.Hour), InputIDs: []int64{1}, Values: []float64{-0x1p1000}})
		got, ok = pieces(huge, []time.Time{start}, []time.Time{start.Add(2 * time.Hour)}, []int64{1})
		if want := []piece{{start, 2, true, ""}}; !ok || !slices.Equal(got, want) {
			t.Errorf("SpanInputBuckets with a value of -2^1000 = %v, %v, want %v, true", got, ok, want)
		}
		// As many ids as common, not common's: the sensor has had an id
		// common lacks, so each reading's ids are compared.
		other := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		mustInsert(t, db, other, store.Reading{Time: start, InputIDs: []int64{1, 2}, Values: []float64{1, 2}},
			store.Reading{Time: start.Add(time.Hour), InputIDs: []int64{1, 3}, Values: []float64{1, 3}})
		got, ok = pieces(other, []time.Time{start, start.Add(time.Hour)}, []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour)}, []int64{1, 2})
		if want := []piece{{start, 1, false, "[1 2] [1 2] [1 2] [1 2]"}, {start.Add(time.Hour), 1, true, ""}}; !ok || !slices.Equal(got, want) {
			t.Errorf("SpanInputBuckets with ids [1 3] of common [1 2] = %v, %v, want %v, true", got, ok, want)
		}
	})
	t.Run("SpanReadingsIDs", func(t *testing.T) {
		ids := func(key store.SensorKey, common []int64) string {
			var got []string
			err := db.InSnapshot(ctx, func(tx *store.Tx) error {
				return tx.SpanReadings(ctx, key.SensorID, []time.Time{start}, []time.Time{start.Add(4 * time.Hour)}, common, func(r *store.Reading) error {
					got = append(got, fmt.Sprint(r.InputIDs, r.Values))
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(got)
		}
		// Every id the sensor has had is common's: a reading's ids are
		// common's when it has as many.
		mixed := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		mustInsert(t, db, mixed, store.Reading{Time: start, InputIDs: []int64{1, 2}, Values: []float64{1, 2}},
			store.Reading{Time: start.Add(time.Hour), InputIDs: []int64{2}, Values: []float64{3}},
			store.Reading{Time: start.Add(2 * time.Hour), InputIDs: []int64{1}, Values: []float64{4}})
		if got, want := ids(mixed, []int64{1, 2}), "[[1 2] [1 2] [2] [3] [1] [4]]"; got != want {
			t.Errorf("SpanReadings of common [1 2] = %s, want %s", got, want)
		}
		if got, want := ids(mixed, []int64{1, 2, 3}), "[[1 2] [1 2] [2] [3] [1] [4]]"; got != want {
			t.Errorf("SpanReadings of common [1 2 3] = %s, want %s", got, want)
		}
		// As many ids as common, not common's: the sensor has had an id
		// common lacks, so each reading's ids are compared.
		other := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		mustInsert(t, db, other, store.Reading{Time: start, InputIDs: []int64{1, 2}, Values: []float64{1, 2}},
			store.Reading{Time: start.Add(time.Hour), InputIDs: []int64{1, 3}, Values: []float64{1, 3}})
		if got, want := ids(other, []int64{1, 2}), "[[1 2] [1 2] [1 3] [1 3]]"; got != want {
			t.Errorf("SpanReadings of common [1 2], ids [1 3] stored = %s, want %s", got, want)
		}
	})
	t.Run("BucketStarts", func(t *testing.T) {
		var starts []store.BucketStart
		err := db.InSnapshot(ctx, func(tx *store.Tx) error {
			var err error
			starts, err = tx.BucketStarts(ctx, store.BucketQuery{From: start, To: start.Add(3 * time.Hour), Interval: 24 * time.Hour, Zone: "Asia/Kolkata"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// Kolkata's days start at 18:30 UTC; a day's margin either side.
		if len(starts) != 3 || !starts[0].Local.Equal(time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC)) ||
			!starts[1].At.Equal(time.Date(2024, 4, 30, 18, 30, 0, 0, time.UTC)) {
			t.Errorf("BucketStarts = %v, want the local days 30 April to 2 May, the first of May from 18:30 UTC", starts)
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

// TestCommonIDsByStoredSize reads readings whose ids are common's, or
// fewer, by SpanReadings and SpanInputBuckets, which tell them apart by
// the values' stored size: arrays of 2 values (stored with a short header)
// and of 16 (a long one), and, on TimescaleDB, once compressed.
func TestCommonIDsByStoredSize(t *testing.T) {
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	mode, _, err := db.StorageMode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{2, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
			common := make([]int64, n)
			values := make([]float64, n)
			for i := range common {
				common[i], values[i] = int64(i+1), float64(i+1)
			}
			mustInsert(t, db, key,
				store.Reading{Time: start, InputIDs: common, Values: values},
				store.Reading{Time: start.Add(time.Minute), InputIDs: common[1:], Values: values[1:]},
				store.Reading{Time: start.Add(2 * time.Minute), InputIDs: common, Values: values})
			want := fmt.Sprint([]string{fmt.Sprint(common, values), fmt.Sprint(common[1:], values[1:]), fmt.Sprint(common, values)})
			check := func(t *testing.T) {
				var got []string
				var groups []store.InputGroup
				err := db.InSnapshot(ctx, func(tx *store.Tx) error {
					from, to := []time.Time{start, start.Add(time.Minute)}, []time.Time{start.Add(time.Minute), start.Add(time.Hour)}
					err := tx.SpanReadings(ctx, key.SensorID, from, to, common, func(r *store.Reading) error {
						got = append(got, fmt.Sprint(r.InputIDs, r.Values))
						return nil
					})
					if err != nil {
						return err
					}
					_, err = tx.SpanInputBuckets(ctx, key.SensorID, from, to, common, func(g *store.InputGroup) error {
						c := *g
						c.Sums = slices.Clone(g.Sums)
						groups = append(groups, c)
						return nil
					})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != want {
					t.Errorf("SpanReadings = %v, want %s", got, want)
				}
				// The first piece's reading has common's ids; the reading of
				// fewer ids makes the second apart.
				if len(groups) != 2 || groups[0].Apart || groups[0].Count != 1 || !slices.Equal(groups[0].Sums, values) ||
					!groups[1].Apart || groups[1].Count != 2 {
					t.Errorf("SpanInputBuckets = %+v, want a piece of 1 reading summing to %v, and one of 2 apart", groups, values)
				}
			}
			check(t)
			if mode != store.TimescaleDB {
				return
			}
			if _, err := pool.Exec(ctx, `SELECT compress_chunk($1::regclass)`, chunkOf(t, pool, start)); err != nil {
				t.Fatal(err)
			}
			t.Run("Compressed", check)
		})
	}
}

// TestValueBytes holds readings_vals_bytes (migration 00073), and the
// array_send it falls back to, to the values: odd ones, none and many,
// bit for bit; and, for a superuser on a little-endian server (the test
// clusters), to the held form, which is what it is for.
func TestValueBytes(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := t.Context()
	var superuser bool
	if err := pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&superuser); err != nil {
		t.Fatal(err)
	}
	many := make([]float64, 300)
	for i := range many {
		many[i] = float64(i) / 7
	}
	for _, values := range [][]float64{
		{1.5, -2},
		{math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64, 0x1p960},
		{},
		many,
	} {
		var held, sent []byte
		if err := pool.QueryRow(ctx, `SELECT readings_vals_bytes($1::float8[]), array_send($1::float8[])`, values).Scan(&held, &sent); err != nil {
			t.Fatal(err)
		}
		sameBits := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
		for _, b := range [][]byte{held, sent} {
			if got, err := store.DecodeValueBytes(b, nil); err != nil || !slices.EqualFunc(got, values, sameBits) {
				t.Errorf("decodeValueBytes(%x) = %v, %v; want %v", b, got, err, values)
			}
		}
		if superuser && len(values) > 0 && (len(held) != 20+8*len(values) || bytes.Equal(held, sent)) {
			t.Errorf("readings_vals_bytes of %d values = %d bytes, %x…; want the array as held, %d bytes", len(values), len(held), held[:min(len(held), 20)], 20+8*len(values))
		}
	}
}

// TestInputBucketsPlanTheRangesChunks holds SpanInputBuckets' statement
// to the chunks its pieces can touch: on TimescaleDB a chunk of readings
// far from the pieces is not in its plan (with 150 such chunks PostgreSQL
// planned a sequential scan and a sort of every chunk a piece), and on
// both modes the readings far away are not counted.
func TestInputBucketsPlanTheRangesChunks(t *testing.T) {
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	far := start.AddDate(-2, 0, 0)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	common := []int64{1, 2}
	mustInsert(t, db, key,
		store.Reading{Time: far, InputIDs: common, Values: []float64{5, 6}},
		store.Reading{Time: start, InputIDs: common, Values: []float64{1, 2}},
		store.Reading{Time: start.Add(25 * time.Hour), InputIDs: common, Values: []float64{3, 4}})
	from := []time.Time{start, start.Add(24 * time.Hour)}
	to := []time.Time{start.Add(24 * time.Hour), start.Add(48 * time.Hour)}
	var got []string
	err := db.InSnapshot(ctx, func(tx *store.Tx) error {
		_, err := tx.SpanInputBuckets(ctx, key.SensorID, from, to, common, func(g *store.InputGroup) error {
			got = append(got, fmt.Sprint(g.Start.Format(time.DateOnly), " ", g.Count, " ", g.Sums))
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2024-05-01 1 [1 2]", "2024-05-02 1 [3 4]"}; !slices.Equal(got, want) {
		t.Errorf("SpanInputBuckets = %q, want %q", got, want)
	}
	mode, _, err := db.StorageMode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mode != store.TimescaleDB {
		return // no chunks
	}
	rows, _ := pool.Query(ctx, `EXPLAIN (COSTS OFF) `+store.InputBucketsSQL(len(common)),
		key.SensorID, from, to, common, from[0], to[len(to)-1])
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	chunkName := func(at time.Time) string {
		_, name, _ := strings.Cut(chunkOf(t, pool, at), ".")
		return name
	}
	if name := chunkName(start); !strings.Contains(plan, name+" ") {
		t.Errorf("plan without %s, the range's chunk:\n%s", name, plan)
	}
	if name := chunkName(far); strings.Contains(plan, name+" ") {
		t.Errorf("plan with %s, a chunk of readings two years away:\n%s", name, plan)
	}
}
