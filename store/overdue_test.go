package store_test

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// TestOverdueCheck: one transaction at a time holds the check's lock; the
// states read are each rule's silence; raising skips a sensor raised
// already or whose project was archived meanwhile; clearing names the
// reading that ended the silence.
func TestOverdueCheck(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	org := newOrg(t, db)
	project, archived := newProject(t, db, org), newProject(t, db, org)
	silent, reported, gone := newSensor(t, db, project, nil), newSensor(t, db, project, nil), newSensor(t, db, archived, nil)
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	mustInsert(t, db, reported, store.Reading{Time: at, InputIDs: []int64{1}, Values: []float64{1}})
	for _, key := range []store.SensorKey{silent, reported, gone} {
		if _, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.UpdateProject(ctx, org.ID, archived.ID, store.ProjectPatch{State: ptr(store.Archived)}); err != nil {
		t.Fatal(err)
	}

	t.Run("OneCheckAtATime", func(t *testing.T) {
		held, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
		go func() {
			done <- db.InTx(ctx, func(tx *store.Tx) error {
				ours, err := tx.LockOverdueCheck(ctx)
				if err == nil && !ours {
					t.Error("the first check did not get the lock")
				}
				close(held)
				<-release
				return err
			})
		}()
		<-held
		err := db.InTx(ctx, func(tx *store.Tx) error {
			ours, err := tx.LockOverdueCheck(ctx)
			if err == nil && ours {
				t.Error("a second check got the lock the first holds")
			}
			return err
		})
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatal(err)
		}
	})

	var states []store.OverdueState
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		states, err = tx.OverdueStates(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].SensorID != silent.SensorID || states[1].SensorID != reported.SensorID {
		t.Fatalf("states %+v, want the two sensors of the active project", states)
	}
	if st := states[1]; !st.Reported || !st.Last.Equal(at) || st.After != time.Hour || st.Raised {
		t.Errorf("state of the sensor that reported = %+v, want its reading's time, an hour, not raised", st)
	}
	if st := states[0]; st.Reported || st.Raised {
		t.Errorf("state of the silent sensor = %+v, want no reading, not raised", st)
	}

	now := time.Now()
	raise := func(due ...store.OverdueState) int64 {
		t.Helper()
		var n int64
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			var err error
			n, err = tx.RaiseOverdue(ctx, due, now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	goneState := store.OverdueState{SensorID: gone.SensorID, Last: at}
	if n := raise(states[0], states[1], goneState); n != 2 {
		t.Errorf("raised %d, want 2: not the archived project's sensor", n)
	}
	if n := raise(states[0]); n != 0 {
		t.Errorf("raised %d again, want 0", n)
	}
	alarms, _, err := db.ListAlarms(ctx, org.ID, project.ID, store.AlarmKey{}, 100)
	if err != nil || len(alarms) != 2 || alarms[0].TargetKey != store.OverdueTarget || alarms[0].LevelName != "Maintenance" {
		t.Fatalf("alarms %+v, %v; want 2 overdue at Maintenance", alarms, err)
	}
	var cleared int64
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		cleared, err = tx.ClearOverdue(ctx, []store.OverdueState{states[1]})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if cleared != 1 {
		t.Errorf("cleared %d, want 1", cleared)
	}
	events, _, err := db.ListAlarmEvents(ctx, org.ID, project.ID, store.AlarmEventQuery{SensorID: reported.SensorID, Desc: true, From: store.MinTime, To: store.MaxTime, Limit: 1})
	if err != nil || len(events) != 1 || events[0].Kind != "cleared" || events[0].ReadingAt == nil || !events[0].ReadingAt.Equal(at) {
		t.Errorf("last event %+v, %v; want cleared, at the reading that ended the silence", events, err)
	}
}
