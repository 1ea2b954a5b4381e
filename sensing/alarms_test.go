package sensing_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// TestAlarms: a write steps the sensor's rules in its transaction, with
// the rules and the newest instant before it, and writes what they decide;
// an edit of the rules rechecks them against the newest reading.
func TestAlarms(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	key, u := f.key, f.u()
	insert := func(m int, v float64) error {
		_, err := core.Ingest(ctx, key, sensing.NewBatch([]store.Reading{{Time: minute(m), InputIDs: []int64{u}, Values: []float64{v}}}))
		return err
	}

	if err := insert(0, 50); err != nil {
		t.Fatal(err)
	}
	rule, err := core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rule.LevelName != "Alarm" || rule.Rank != 4 || rule.TargetID != u {
		t.Errorf("rule %+v, want at Alarm (rank 4) on input %d", rule, u)
	}

	t.Run("TriggerWritesAlarmAndEvent", func(t *testing.T) {
		if err := insert(1, 150); err != nil {
			t.Fatal(err)
		}
		alarms := currentAlarms(t, db, key)
		if len(alarms) != 1 || alarms[0].LevelName != "Alarm" || alarms[0].Value != 150 || !alarms[0].Since.Equal(minute(1)) {
			t.Fatalf("alarms %+v; want one at Alarm since minute 1, value 150", alarms)
		}
	})
	t.Run("RolledBackBatchWritesNothing", func(t *testing.T) {
		_, err := core.Ingest(ctx, key, sensing.NewBatch([]store.Reading{
			{Time: minute(2), InputIDs: []int64{u}, Values: []float64{10}},
			{Time: minute(3), InputIDs: []int64{1 << 40}, Values: []float64{1}},
		}))
		wantCode(t, err, apperr.Invalid)
		if got := len(events(t, db, key)); got != 1 {
			t.Errorf("%d events after a refused batch, want the 1 before", got)
		}
	})
	t.Run("LateReadingIsAnEvent", func(t *testing.T) {
		if err := insert(0, 500); err != nil { // older than minute 1
			t.Fatal(err)
		}
		if alarms := currentAlarms(t, db, key); len(alarms) != 1 || alarms[0].Value != 150 {
			t.Errorf("alarms %+v after a late reading, want the current one unchanged", alarms)
		}
	})
	t.Run("AcknowledgeAppendsEvent", func(t *testing.T) {
		alarms := currentAlarms(t, db, key)
		user, err := db.EnsureUser(ctx, "ack@acme.example.com", "ack")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.SetMembership(ctx, key.OrgID, user.ID, store.Editor); err != nil {
			t.Fatal(err)
		}
		got, err := db.AcknowledgeAlarm(ctx, key.OrgID, key.ProjectID, alarms[0].ID, user.ID, "seen")
		if err != nil || got.AcknowledgedAt == nil || *got.AcknowledgedBy != user.ID || got.Note != "seen" {
			t.Fatalf("acknowledge: %+v, %v", got, err)
		}
	})
	t.Run("RuleEditRechecks", func(t *testing.T) {
		_, err := core.UpdateAlarmRule(ctx, key, rule.ID, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 200, Persistence: 1})
		if err != nil {
			t.Fatal(err)
		}
		if alarms := currentAlarms(t, db, key); len(alarms) != 0 {
			t.Errorf("alarms %+v after raising the threshold past the newest reading, want none", alarms)
		}
	})
	t.Run("ErrInvalidRule", func(t *testing.T) {
		_, err := core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "nope", Level: "Alarm", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.Invalid)
		_, err = core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Panic", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.Invalid)
		_, err = core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: math.NaN(), Persistence: 1})
		wantCode(t, err, apperr.Invalid)
		_, err = core.UpdateAlarmRule(ctx, key, 1<<40, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.NotFound)
		wantCode(t, core.DeleteAlarmRule(ctx, key, 1<<40), apperr.NotFound)
	})
	want := "triggered Alarm,late Alarm,acknowledged Alarm,cleared Alarm"
	if got := strings.Join(events(t, db, key), ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

// TestAlarmsDeleteReadings: a delete that takes the newest reading moves
// the current alarms back to the newest reading left, or to rest when none
// is; the events stay.
func TestAlarmsDeleteReadings(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	key, u := f.key, f.u()
	if _, err := core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1}); err != nil {
		t.Fatal(err)
	}
	ingest(t, core, key, store.Reading{Time: minute(0), InputIDs: []int64{u}, Values: []float64{10}})
	ingest(t, core, key, store.Reading{Time: minute(1), InputIDs: []int64{u}, Values: []float64{150}})
	if got := len(currentAlarms(t, db, key)); got != 1 {
		t.Fatalf("%d alarms, want 1", got)
	}
	deleted, err := core.DeleteReadings(ctx, key, minute(1), minute(2))
	if err != nil || deleted != 1 {
		t.Fatalf("DeleteReadings = %d, %v; want 1", deleted, err)
	}
	if got := currentAlarms(t, db, key); len(got) != 0 {
		t.Errorf("alarms %+v once the newest reading is 10, want none", got)
	}
	if _, err := core.DeleteReadings(ctx, key, store.MinTime, store.MaxTime); err != nil {
		t.Fatal(err)
	}
	want := "triggered Alarm,cleared Alarm"
	if got := strings.Join(events(t, db, key), ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}
