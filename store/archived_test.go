package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// writesUnderAProject are the store's writes that an archived project
// refuses: every write under a project but restoring or deleting it.
var writesUnderAProject = []struct {
	name  string
	write func(ctx context.Context, db *store.DB, key store.SensorKey) error
}{
	{"UpdateProject", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.UpdateProject(ctx, key.OrgID, key.ProjectID, store.ProjectPatch{Name: ptr("renamed")})
		return err
	}},
	{"CreateSensor", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.CreateSensor(ctx, key.OrgID, key.ProjectID, "another", "", nil)
		return err
	}},
	{"UpdateSensor", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := updateSensor(ctx, db, key, store.SensorPatch{Name: ptr("renamed")})
		return err
	}},
	{"SetSensorLinks", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := setSensorLinks(ctx, db, key, nil)
		return err
	}},
	{"DeleteSensor", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.DeleteSensor(ctx, key)
	}},
	{"WriteReadings", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		at := time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)
		_, err := insert(ctx, db, key, []store.Reading{{Time: at, InputIDs: []int64{1}, Values: []float64{2}}})
		return err
	}},
	{"CopyReadingStream", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		at := time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)
		_, err := insertStream(ctx, db, key, &sliceStream{readings: []store.Reading{{Time: at, InputIDs: []int64{1}, Values: []float64{2}}}})
		return err
	}},
	{"DeleteReadings", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := deleteReadings(ctx, db, key, store.MinTime, store.MaxTime)
		return err
	}},
	{"CreateAlarmLevel", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.CreateAlarmLevel(ctx, key.OrgID, key.ProjectID, store.AlarmLevel{Name: "Evacuate", Rank: 9, Colour: "#000000"})
		return err
	}},
	{"UpdateAlarmLevel", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.UpdateAlarmLevel(ctx, key.OrgID, key.ProjectID, unknownID, store.AlarmLevelPatch{Name: ptr("renamed")})
		return err
	}},
	{"DeleteAlarmLevel", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.DeleteAlarmLevel(ctx, key.OrgID, key.ProjectID, unknownID)
	}},
	{"CreateAlarmRule", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.InTx(ctx, func(tx *store.Tx) error {
			_, _, err := tx.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Persistence: 1})
			return err
		})
	}},
	{"UpdateAlarmRule", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.UpdateAlarmRule(ctx, key, unknownID, store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Persistence: 1})
			return err
		})
	}},
	{"DeleteAlarmRule", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.DeleteAlarmRule(ctx, key, unknownID)
			return err
		})
	}},
	{"SetOverdueRule", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour)
		return err
	}},
	{"DeleteOverdueRule", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.DeleteOverdueRule(ctx, key)
	}},
	{"SetImportProfile", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.SetImportProfile(ctx, key, store.ImportProfileSpec{TZ: "UTC"})
		return err
	}},
	{"DeleteImportProfile", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.DeleteImportProfile(ctx, key)
	}},
	{"CreateWebhook", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.CreateWebhook(ctx, key.OrgID, key.ProjectID, "https://example.com/hook", "0123456789abcdef")
		return err
	}},
	{"DeleteWebhook", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		return db.DeleteWebhook(ctx, key.OrgID, key.ProjectID, unknownID)
	}},
	{"AcknowledgeAlarm", func(ctx context.Context, db *store.DB, key store.SensorKey) error {
		_, err := db.AcknowledgeAlarm(ctx, key.OrgID, key.ProjectID, unknownID, unknownID, "seen")
		return err
	}},
}

// TestArchiveWaitsForWrites shows that no write slips in under an archive:
// while an archive is in flight (its transaction not yet committed), each
// write under the project waits for it, then answers Conflict with the one
// message and changes nothing. A write that read the state without a lock
// the archive conflicts with would go through instead, and land in a
// project archived a moment later. (TestAuthMatrix makes every write of the
// API on a project archived before.)
func TestArchiveWaitsForWrites(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	for _, w := range writesUnderAProject {
		t.Run(w.name, func(t *testing.T) {
			key := newSensorWithReading(t, db)
			before := dump(t, pool, key)
			archive, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer archive.Rollback(ctx)
			if _, err := archive.Exec(ctx, `UPDATE projects SET state = 'archived', updated_at = now() WHERE id = $1`, key.ProjectID); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.write(ctx, db, key) }()
			for waiting := false; !waiting; {
				select {
				case err := <-done:
					t.Fatalf("%s ended (error %v) while an archive of its project was in flight; it must wait for it", w.name, err)
				default:
				}
				err := pool.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			if err := archive.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			wantArchived(t, <-done, key)
			if dump(t, pool, key) != before {
				t.Errorf("%s changed the project while it was being archived", w.name)
			}
		})
	}
}

func wantArchived(t *testing.T, err error, key store.SensorKey) {
	t.Helper()
	if got, want := apperr.CodeOf(err), apperr.Conflict; got != want {
		t.Fatalf("error %v (%s), want %s", err, got, want)
	}
	if got, want := err.Error(), fmt.Sprintf("project %d is archived, so read-only; restore it first", key.ProjectID); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// newSensorWithReading makes an organization, an active project and a
// sensor with a reading in it.
func newSensorWithReading(t *testing.T, db *store.DB) store.SensorKey {
	t.Helper()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	if _, err := insert(t.Context(), db, key, []store.Reading{{Time: at, InputIDs: []int64{1}, Values: []float64{1}}}); err != nil {
		t.Fatal(err)
	}
	return key
}

// dump is what a write under the project could change, but its state: its
// name and description, its sensors and their readings.
func dump(t *testing.T, pool *pgxpool.Pool, key store.SensorKey) string {
	t.Helper()
	var s string
	err := pool.QueryRow(t.Context(), `
SELECT concat_ws('|',
  (SELECT concat_ws(',', name, description) FROM projects WHERE id = $1),
  (SELECT string_agg(concat_ws(',', id, name, description, instance, updated_at), ';' ORDER BY id) FROM sensors WHERE project_id = $1),
  (SELECT string_agg(concat_ws(',', r.sensor_id, r.datetime, r.input_ids, r.vals), ';' ORDER BY r.sensor_id, r.datetime)
     FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.project_id = $1))`, key.ProjectID).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
