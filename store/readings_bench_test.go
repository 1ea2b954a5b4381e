package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkListReadings reads a page of 1,000 readings of 10 inputs, as the
// service does, with the store's binary scanner and, for comparison, with
// pgx's generic Scan of the same query.
func BenchmarkListReadings(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	db := store.New(pool)
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	readings := make([]store.Reading, 1000)
	for i := range readings {
		r := store.Reading{Time: base.Add(time.Duration(i) * time.Second)}
		for k := int64(1); k <= 10; k++ {
			r.InputIDs = append(r.InputIDs, k)
			r.Values = append(r.Values, float64(i)*1.37+float64(k))
		}
		readings[i] = r
	}
	key := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
	if _, err := insert(ctx, db, key, readings); err != nil {
		b.Fatal(err)
	}
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}

	// The server's CPU a page, as well as the service's time: sending the
	// rows is most of PostgreSQL's work for a page.
	b.Run("Store", func(b *testing.B) {
		b.ReportAllocs()
		server := storetest.ServerCPU(b, pool)
		for b.Loop() {
			n := 0
			if err := db.ListReadings(ctx, sensor, q, func(*store.Reading) error { n++; return nil }); err != nil || n != 1000 {
				b.Fatalf("%d readings, %v", n, err)
			}
		}
		b.ReportMetric(float64(storetest.ServerCPU(b, pool)-server)/float64(b.N), "server-ns/op")
	})
	b.Run("PgxScan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, err := pool.Query(ctx, `SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 ORDER BY datetime LIMIT $4 OFFSET $5`, sensor.ID, q.From, q.To, 1000, 0)
			if err != nil {
				b.Fatal(err)
			}
			var r store.Reading
			for rows.Next() {
				if err := rows.Scan(&r.Time, &r.InputIDs, &r.Values); err != nil {
					b.Fatal(err)
				}
			}
			rows.Close()
		}
	})
}
