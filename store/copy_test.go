package store_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestCopyRoundTrip stores readings at the edges of what a reading can hold
// through the hand-encoded binary COPY, on both of its paths (new readings,
// then the same instants again, deleted and copied anew, in that order),
// and reads back exactly what was sent, through
// the store's scanner and through PostgreSQL's own formatting. A batch of
// at most store.UpsertMax readings is upserted instead of COPYed, so the
// edges go once alone, through the upsert, and once with that many
// ordinary readings more, through the COPY.
func TestCopyRoundTrip(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	org, err := db.CreateOrg(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	project, err := db.CreateProject(ctx, org.ID, "copy", "")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err) // the literals below are valid
		}
		return v
	}
	readings := []store.Reading{
		{Time: store.MinTime, InputIDs: []int64{1}, Values: []float64{0}},
		{Time: at("1969-12-31T23:59:59.999999Z"), InputIDs: []int64{1, 2}, Values: []float64{math.Copysign(0, -1), -1.5}},
		{Time: at("1999-12-31T23:59:59.999999Z"), InputIDs: []int64{3}, Values: []float64{math.SmallestNonzeroFloat64}},
		{Time: at("2000-01-01T00:00:00Z"), InputIDs: []int64{math.MaxInt64}, Values: []float64{math.MaxFloat64}},
		{Time: at("2024-05-01T14:00:00.123456+02:00"), InputIDs: []int64{101, 102, 103}, Values: []float64{2803.5, -math.MaxFloat64, 1e-300}},
		{Time: store.MaxTime, InputIDs: []int64{7}, Values: []float64{0.1}},
	}
	check := func(t *testing.T, sensor store.Sensor, want []store.Reading) {
		t.Helper()
		var got []store.Reading
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
		err := db.ListReadings(ctx, sensor, q, func(r *store.Reading) error {
			got = append(got, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("read %d readings, want %d", len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if !g.Time.Equal(w.Time) || !slices.Equal(g.InputIDs, w.InputIDs) || !sameBits(g.Values, w.Values) {
				t.Errorf("reading %d: got %v %v %v, want %v %v %v", i, g.Time, g.InputIDs, g.Values, w.Time, w.InputIDs, w.Values)
			}
		}
	}

	for _, path := range []struct {
		name  string
		extra int // ordinary readings sent with the edges
	}{{"Upsert", 0}, {"Copy", store.UpsertMax}} {
		sensor, err := db.CreateSensor(ctx, org.ID, project.ID, path.name, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		key := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
		// The ordinary readings, in 2030, sort between the edges of 2024 and
		// 9999.
		with := func(edges []store.Reading) []store.Reading {
			all := slices.Clone(edges[:len(edges)-1])
			for i := range path.extra {
				all = append(all, store.Reading{Time: at("2030-01-01T00:00:00Z").Add(time.Duration(i) * time.Second), InputIDs: []int64{1}, Values: []float64{float64(i)}})
			}
			return append(all, edges[len(edges)-1])
		}
		t.Run(path.name+"/new", func(t *testing.T) {
			if _, err := insert(ctx, db, key, with(readings)); err != nil {
				t.Fatal(err)
			}
			check(t, sensor, with(readings))
			// The server's own reading of the bytes, independent of the
			// scanner, which shares the encoder's epoch.
			rows, err := pool.Query(ctx, `SELECT to_char(datetime AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), vals[1]::text
FROM readings WHERE sensor_id = $1 AND date_part('year', datetime) <> 2030 ORDER BY datetime`, sensor.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var at, first string
				if err := rows.Scan(&at, &first); err != nil {
					t.Fatal(err)
				}
				got = append(got, at+" "+first)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			want := []string{
				"0001-01-01T00:00:00.000000 0",
				"1969-12-31T23:59:59.999999 -0",
				"1999-12-31T23:59:59.999999 5e-324",
				"2000-01-01T00:00:00.000000 1.7976931348623157e+308",
				"2024-05-01T12:00:00.123456 2803.5",
				"9999-12-31T23:59:59.999999 0.1",
			}
			if !slices.Equal(got, want) {
				t.Errorf("PostgreSQL reads\n%q\nwant\n%q", got, want)
			}
		})
		t.Run(path.name+"/overwrite", func(t *testing.T) {
			again := make([]store.Reading, len(readings))
			for i, r := range readings {
				again[i] = store.Reading{Time: r.Time, InputIDs: []int64{9}, Values: []float64{float64(i) + 0.25}}
			}
			written, err := insert(ctx, db, key, with(again))
			if err != nil {
				t.Fatal(err)
			}
			if want := (store.Written{Replaced: len(readings) + path.extra}); written != want {
				t.Errorf("overwrite = %+v, want %+v", written, want)
			}
			check(t, sensor, with(again))
		})
	}
	t.Run("many", func(t *testing.T) {
		// Enough rows for the COPY to be encoded in several chunks.
		other, err := db.CreateSensor(ctx, org.ID, project.ID, "many", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		many := make([]store.Reading, 2500)
		for i := range many {
			many[i] = store.Reading{
				Time:     at("2024-05-01T00:00:00Z").Add(time.Duration(i) * time.Second),
				InputIDs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
				Values:   []float64{float64(i), 1, 2, 3, 4, 5, 6, 7, 8, -float64(i) / 3},
			}
		}
		otherKey := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: other.ID}
		if _, err := insert(ctx, db, otherKey, many); err != nil {
			t.Fatal(err)
		}
		check(t, other, many)
	})
}

// sameBits tells float slices apart by their bits, so that -0 is not 0.
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestBenchWrites: the bench's raw figures run the service's own code:
// CopyReadings is the COPY of new readings alone, WriteReadings ingest's
// storage (the sensor's newest kept, a batch over stored readings
// replacing them), and ScanReadings reads rows as every read does.
func TestBenchWrites(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if err := store.CopyReadings(ctx, conn.Conn().PgConn(), key.SensorID, []store.Reading{one(0, 0), one(1, 1)}); err != nil {
		t.Fatal(err)
	}
	write := func(readings ...store.Reading) store.Written {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		written, err := store.WriteReadings(ctx, tx, key.SensorID, readings, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return written
	}
	// CopyReadings keeps no newest reading: a batch after what it wrote
	// goes straight in, and keeps its own.
	if got := write(one(2, 2)); got.New != 1 || got.Replaced != 0 {
		t.Errorf("WriteReadings of a new reading = %+v, want 1 new", got)
	}
	if got := write(one(1, 11), one(2, 22)); got.New != 0 || got.Replaced != 2 {
		t.Errorf("WriteReadings over stored readings = %+v, want 2 replaced", got)
	}
	rows, err := pool.Query(ctx, `SELECT datetime, input_ids, vals FROM readings WHERE sensor_id = $1 ORDER BY datetime`, key.SensorID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := store.ScanReadings(rows, func(r *store.Reading) error {
		got = append(got, fmt.Sprintf("%d=%v", r.Time.Minute(), r.Values[0]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0=0", "1=11", "2=22"}; !slices.Equal(got, want) {
		t.Errorf("readings %v, want %v", got, want)
	}
	var latest time.Time
	if err := pool.QueryRow(ctx, `SELECT datetime FROM sensor_latest WHERE sensor_id = $1`, key.SensorID).Scan(&latest); err != nil || latest.Minute() != 2 {
		t.Errorf("sensor_latest at %v, %v; want minute 2", latest, err)
	}
}
