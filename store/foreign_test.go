package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestWriteNamingAForeignSensor writes readings naming, under a project of
// one organization, a sensor of another, while that sensor's own writer
// holds its rows (its newest reading, its queued hours, its readings): the
// write must be refused, NotFound, without waiting for any of them. The
// statements that share the lock's round trip must not write a sensor that
// the lock did not find: it would hold another organization's rows (and
// could be the deadlock of its writer) before its id was checked.
func TestWriteNamingAForeignSensor(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	at := time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC)
	reading := func(d time.Duration) store.Reading {
		return store.Reading{Time: at.Add(d), InputIDs: []int64{1}, Values: []float64{1}}
	}
	theirs := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	mustInsert(t, db, theirs, reading(0))
	ours := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	foreign := store.SensorKey{OrgID: ours.OrgID, ProjectID: ours.ProjectID, SensorID: theirs.SensorID}

	holds := []struct{ name, sql string }{
		{"Latest", `SELECT FROM sensor_latest WHERE sensor_id = $1 FOR UPDATE`},
		{"QueuedHours", `SELECT FROM rollup_dirty WHERE sensor_id = $1 FOR UPDATE`},
		{"Readings", `INSERT INTO readings (sensor_id, datetime, input_ids, vals) VALUES ($1, '2024-05-06T10:00:30Z', '{1}', '{2}')`},
	}
	for _, h := range holds {
		for _, size := range []int{1, store.UpsertMax + 1} {
			t.Run(fmt.Sprintf("%s/%d", h.name, size), func(t *testing.T) {
				hold := connect(t, pool)
				tx, err := hold.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if _, err := tx.Exec(ctx, h.sql, theirs.SensorID); err != nil {
					t.Fatal(err)
				}
				batch := make([]store.Reading, size)
				for i := range batch {
					batch[i] = reading(30*time.Second + time.Duration(i)*time.Millisecond)
				}
				done := make(chan error, 1)
				go func() {
					_, err := insert(ctx, db, foreign, batch)
					done <- err
				}()
				watch := connect(t, pool)
				for {
					select {
					case err := <-done:
						if got, want := apperr.CodeOf(err), apperr.NotFound; got != want {
							t.Fatalf("write naming a foreign sensor: %v (%s), want %s", err, got, want)
						}
						return
					default:
					}
					if len(lockWaiters(t, watch)) > 0 {
						t.Fatalf("a write of %d readings naming a foreign sensor waits for that sensor's rows", size)
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
}
