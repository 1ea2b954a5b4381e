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
	if _, err := db.InsertReadings(ctx, key, readings); err != nil {
		b.Fatal(err)
	}
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}

	b.Run("Store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			if err := db.ListReadings(ctx, sensor, q, func(*store.Reading) error { n++; return nil }); err != nil || n != 1000 {
				b.Fatalf("%d readings, %v", n, err)
			}
		}
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

// BenchmarkInsertReadings stores batches of 1,000 readings of 10 inputs,
// as a POST does, through the store: new ones (lock, queue, COPY, commit),
// and the same again over themselves (lock, queue and DELETE a chunk of
// readings at a time, COPY, commit).
func BenchmarkInsertReadings(b *testing.B) {
	ctx := context.Background()
	db := store.New(storetest.NewPool(b))
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	key := store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	batch := func(n int) []store.Reading {
		readings := make([]store.Reading, 1000)
		for i := range readings {
			r := store.Reading{Time: start.Add(time.Duration(n*len(readings)+i) * time.Second)}
			for k := int64(1); k <= 10; k++ {
				r.InputIDs = append(r.InputIDs, k)
				r.Values = append(r.Values, float64(i)*1.37+float64(k))
			}
			readings[i] = r
		}
		return readings
	}
	written := 0 // batches stored so far, each at instants of its own
	for _, overwrite := range []bool{false, true} {
		name := "New"
		if overwrite {
			name = "Overwrite"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				if !overwrite {
					n = written
				} else if n >= written {
					n = 0
				}
				readings := batch(n)
				b.StartTimer()
				got, err := db.InsertReadings(ctx, key, readings)
				if err != nil {
					b.Fatal(err)
				}
				if overwrite && got.Replaced != len(readings) {
					b.Fatalf("replaced %d readings of %d", got.Replaced, len(readings))
				}
				if n == written {
					written++
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
		})
	}
}
