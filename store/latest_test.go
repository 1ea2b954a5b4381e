package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sensorreadings/readings/migrations"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// latestSteps write one sensor's readings in turn; after each, its latest
// value must be want (nil: no reading), and the same as the readings table's
// newest row.
var latestSteps = []struct {
	name     string
	insert   []store.Reading
	from, to time.Time // a delete, when insert is nil
	want     *store.Reading
}{
	{
		name: "InsertUnordered",
		insert: []store.Reading{
			{Time: dayOf2024(3), InputIDs: []int64{1}, Values: []float64{3}},
			{Time: dayOf2024(1), InputIDs: []int64{1}, Values: []float64{1}},
			{Time: dayOf2024(3), InputIDs: []int64{1, 2}, Values: []float64{3.5, 4}}, // later of two at one instant wins
			{Time: dayOf2024(2), InputIDs: []int64{1}, Values: []float64{2}},
		},
		want: &store.Reading{Time: dayOf2024(3), InputIDs: []int64{1, 2}, Values: []float64{3.5, 4}},
	},
	{
		name:   "OverwriteNewest",
		insert: []store.Reading{{Time: dayOf2024(3), InputIDs: []int64{2}, Values: []float64{30}}},
		want:   &store.Reading{Time: dayOf2024(3), InputIDs: []int64{2}, Values: []float64{30}},
	},
	{
		name:   "InsertOlder",
		insert: []store.Reading{{Time: dayOf2024(0), InputIDs: []int64{1}, Values: []float64{0}}},
		want:   &store.Reading{Time: dayOf2024(3), InputIDs: []int64{2}, Values: []float64{30}},
	},
	{
		name:   "OverwriteOlder",
		insert: []store.Reading{{Time: dayOf2024(2), InputIDs: []int64{1}, Values: []float64{20}}},
		want:   &store.Reading{Time: dayOf2024(3), InputIDs: []int64{2}, Values: []float64{30}},
	},
	{
		name: "DeleteNewest",
		from: dayOf2024(3), to: dayOf2024(4),
		want: &store.Reading{Time: dayOf2024(2), InputIDs: []int64{1}, Values: []float64{20}},
	},
	{
		name: "DeleteOlder",
		from: dayOf2024(0), to: dayOf2024(1),
		want: &store.Reading{Time: dayOf2024(2), InputIDs: []int64{1}, Values: []float64{20}},
	},
	{
		name: "DeleteAll",
		from: store.MinTime, to: store.MaxTime,
	},
	{
		name:   "InsertAfterDeleteAll",
		insert: []store.Reading{{Time: dayOf2024(1), InputIDs: []int64{5}, Values: []float64{-1}}},
		want:   &store.Reading{Time: dayOf2024(1), InputIDs: []int64{5}, Values: []float64{-1}},
	},
	{
		name:   "InsertNewer",
		insert: []store.Reading{{Time: dayOf2024(400), InputIDs: []int64{5}, Values: []float64{400}}},
		want:   &store.Reading{Time: dayOf2024(400), InputIDs: []int64{5}, Values: []float64{400}},
	},
}

// dayOf2024 is a day of 2024, so that the readings span several chunks.
func dayOf2024(n int) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
}

// TestLatestReadings checks that the latest values follow every write of
// a sensor's readings: inserts in and out of order, overwrites of the
// newest reading and of older ones, deletes that take the newest reading
// and deletes that do not, a delete of everything. A sensor without
// readings is listed without one.
func TestLatestReadings(t *testing.T) {
	ctx := t.Context()
	db := store.New(storetest.NewPool(t))
	sensor, key := newPlainSensor(t, db)
	idle, err := db.CreateSensor(ctx, key.OrgID, key.ProjectID, "idle", "", nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, step := range latestSteps {
		t.Run(step.name, func(t *testing.T) {
			if step.insert != nil {
				if _, err := insert(ctx, db, key, step.insert); err != nil {
					t.Fatal(err)
				}
			} else if _, err := deleteReadings(ctx, db, key, step.from, step.to); err != nil {
				t.Fatal(err)
			}
			latest, more, err := db.LatestReadings(ctx, key.OrgID, key.ProjectID, 0, 10, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(latest) != 2 || more || latest[0].Sensor.ID != sensor.ID || latest[1].Sensor.ID != idle.ID {
				t.Fatalf("LatestReadings = %d sensors (more %v), want sensors %d and %d", len(latest), more, sensor.ID, idle.ID)
			}
			if got := latest[1].Reading; got != nil {
				t.Errorf("idle sensor's latest = %s, want none", describe(got))
			}
			if got, want := describe(latest[0].Reading), describe(step.want); got != want {
				t.Errorf("latest = %s, want %s", got, want)
			}
			if got, want := describe(latest[0].Reading), describe(newestStored(t, db, sensor)); got != want {
				t.Errorf("latest = %s, but the newest stored reading is %s", got, want)
			}
		})
	}
}

// newestStored is the newest reading of the readings table.
func newestStored(t *testing.T, db *store.DB, sensor store.Sensor) *store.Reading {
	t.Helper()
	var newest *store.Reading
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Desc: true, Limit: 1}
	err := db.ListReadings(t.Context(), sensor, q, func(r *store.Reading) error {
		newest = &store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newest
}

func describe(r *store.Reading) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s %v=%v", r.Time.Format(time.RFC3339Nano), r.InputIDs, r.Values)
}

// TestSensorLatestBackfill undoes migration 00007, stores readings as an
// older service did (into readings alone), and applies 00007 again: its
// backfill gives each sensor its newest reading, and none to a sensor
// without readings.
func TestSensorLatestBackfill(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	sensor, key := newPlainSensor(t, db)
	idle, err := db.CreateSensor(ctx, key.OrgID, key.ProjectID, "idle", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Close()
	if _, err := provider.DownTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO readings SELECT $1, t, '{1}', ARRAY[extract(epoch FROM t)]
FROM generate_series('2024-01-01'::timestamptz, '2024-03-01', '1 day') t`, sensor.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	// What 7 backfilled, read as the store reads it now: no later
	// migration touches sensor_latest, and the store's read needs their
	// tables (reading_flags).
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	latest, _, err := db.LatestReadings(ctx, key.OrgID, key.ProjectID, 0, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	newest := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	want := &store.Reading{Time: newest, InputIDs: []int64{1}, Values: []float64{float64(newest.Unix())}}
	if len(latest) != 2 || latest[1].Sensor.ID != idle.ID {
		t.Fatalf("LatestReadings = %d sensors, want %d and %d", len(latest), sensor.ID, idle.ID)
	}
	if got, want := describe(latest[0].Reading), describe(want); got != want {
		t.Errorf("latest after the backfill = %s, want %s", got, want)
	}
	if got := latest[1].Reading; got != nil {
		t.Errorf("idle sensor's latest after the backfill = %s, want none", describe(got))
	}
}

// TestLatestReadingsPlan reads the latest values of a project whose
// sensors' ids straddle another project's thousands, under the generic
// plan PostgreSQL keeps for the statement from its sixth run on and under
// the custom plans of the five runs before: the statement must read the
// project's own sensors and no other's (it read every other sensor with a
// higher id through the primary key when it said project_id = $2), and
// their newest readings and no other's (a custom plan hashed all of
// sensor_latest when the newest readings were joined, not looked up),
// and page through them as before.
func TestLatestReadingsPlan(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	org := newOrg(t, db)
	read, fleet := newProject(t, db, org), newProject(t, db, org)
	want := []int64{newSensor(t, db, read, nil).SensorID, newSensor(t, db, read, nil).SensorID}
	if _, err := pool.Exec(ctx, `INSERT INTO sensors (project_id, name) SELECT $1, 'logger ' || n FROM generate_series(1, 3000) n`, fleet.ID); err != nil {
		t.Fatal(err)
	}
	want = append(want, newSensor(t, db, read, nil).SensorID)
	// The bench's shape: a project of 105 sensors beside a fleet of
	// 10,000, each with a newest reading.
	rows, err := pool.Query(ctx, `INSERT INTO sensors (project_id, name) SELECT $1, 'gauge ' || n FROM generate_series(1, 102) n RETURNING id`, read.ID)
	if err != nil {
		t.Fatal(err)
	}
	gauges, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gauges)
	want = append(want, gauges...)
	if _, err := pool.Exec(ctx, `INSERT INTO sensors (project_id, name) SELECT $1, 'logger ' || n FROM generate_series(3001, 10000) n`, fleet.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sensor_latest (sensor_id, datetime, input_ids, vals)
		SELECT id, now(), '{1}', '{1}' FROM sensors WHERE project_id IN ($1, $2)`, read.ID, fleet.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE sensors, sensor_latest`); err != nil {
		t.Fatal(err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `PREPARE latest AS `+store.LatestReadingsSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE latest; RESET plan_cache_mode`, pgx.QueryExecModeSimpleProtocol)
	// The generic plan, kept from the sixth run on, and the custom plans
	// of the five before it.
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		if err := conn.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE latest(%d, %d, 0, 1001, false)`, org.ID, read.ID)).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		root := plan[0]["Plan"].(map[string]any)
		if got := rowsRead(root, "sensors"); got != float64(len(want)) {
			t.Errorf("%s: the plan read %v sensors, want the project's %d:\n%v", mode, got, len(want), plan)
		}
		if got := rowsRead(root, "sensor_latest"); got > float64(len(want)) {
			t.Errorf("%s: the plan read %v rows of sensor_latest, want at most the project's %d:\n%v", mode, got, len(want), plan)
		}
	}

	for _, after := range []int64{0, want[0], want[1], want[2]} {
		latest, _, err := db.LatestReadings(ctx, org.ID, read.ID, after, 1000, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, l := range latest {
			got = append(got, l.Sensor.ID)
		}
		if rest := want[slices.Index(append([]int64{0}, want...), after):]; !slices.Equal(got, rest) {
			t.Errorf("LatestReadings after %d = sensors %v, want %v", after, got, rest)
		}
	}
}

// rowsRead is how many rows the scans of table in plan took, the ones
// their filter removed included, over all their loops.
func rowsRead(plan map[string]any, table string) float64 {
	var n float64
	if plan["Relation Name"] == table {
		loops, _ := plan["Actual Loops"].(float64)
		for _, k := range []string{"Actual Rows", "Rows Removed by Filter", "Rows Removed by Index Recheck"} {
			v, _ := plan[k].(float64)
			n += v * loops
		}
	}
	children, _ := plan["Plans"].([]any)
	for _, c := range children {
		n += rowsRead(c.(map[string]any), table)
	}
	return n
}
