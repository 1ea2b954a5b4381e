package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkSensorStatuses reads the status board of a project of 500
// sensors of a blueprint, each with a reading, 100 with two alarms and 50
// with an overdue rule: one statement for the whole page.
func BenchmarkSensorStatuses(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	db := store.New(pool)
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	blueprint, err := db.CreateBlueprint(ctx, org.ID, testBlueprint())
	if err != nil {
		b.Fatal(err)
	}
	inst, err := blueprint.Instantiate(nil)
	if err != nil {
		b.Fatal(err)
	}
	const sensors = 500
	now := time.Now()
	for i := range sensors {
		sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "meter", "", &store.Attachment{BlueprintID: blueprint.ID, Instance: inst.Clone()})
		if err != nil {
			b.Fatal(err)
		}
		key := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
		r := store.Reading{Time: now.Add(-time.Minute), InputIDs: []int64{sensor.Instance.Inputs[0].ID, sensor.Instance.Inputs[1].ID}, Values: []float64{230, 1.5}}
		if _, err := insert(ctx, db, key, []store.Reading{r}); err != nil {
			b.Fatal(err)
		}
		if i%5 == 0 {
			_, err = pool.Exec(ctx, `
INSERT INTO alarms (project_id, sensor_id, target_id, target_key, level_id, since, value)
SELECT $1, $2, t.id, t.key, l.id, now(), 1 FROM (VALUES ($3::bigint, 'u'), ($4::bigint, 'i')) t(id, key)
JOIN alarm_levels l ON l.project_id = $1 AND l.rank = 2 + (t.id % 2)::int`,
				project.ID, sensor.ID, sensor.Instance.Inputs[0].ID, sensor.Instance.Inputs[1].ID)
			if err != nil {
				b.Fatal(err)
			}
		}
		if i%10 == 0 {
			if _, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	}
	q := store.StatusQuery{OrgID: org.ID, ProjectID: project.ID, Limit: 1000}

	b.ReportAllocs()
	for b.Loop() {
		statuses, more, err := db.SensorStatuses(ctx, q)
		if err != nil || more || len(statuses) != sensors {
			b.Fatalf("%d statuses, more %v, %v", len(statuses), more, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*sensors), "µs/sensor")
}
