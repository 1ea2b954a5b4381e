package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// thresholdEvaluator is an evaluator of the store's hook for the tests: a
// rule holds while the reading's first input is above its threshold, and
// late readings are reported as such.
type thresholdEvaluator struct {
	calls int
}

func (e *thresholdEvaluator) Evaluate(_ context.Context, _ store.LinkReader, _ store.Sensor, rules []store.AlarmRule, readings []store.Reading, newest *time.Time) ([]store.AlarmChange, error) {
	e.calls++
	var changes []store.AlarmChange
	for _, r := range readings {
		if newest != nil && r.Time.Before(*newest) {
			changes = append(changes, store.AlarmChange{TargetID: rules[0].TargetID, Kind: "late", To: rules[0].Rank, Late: true, At: r.Time, Value: r.Values[0]})
			continue
		}
		changes = append(changes, step(rules, r)...)
	}
	return changes, nil
}

func (e *thresholdEvaluator) Recheck(_ context.Context, _ store.LinkReader, _ store.Sensor, rules []store.AlarmRule, newest store.Reading) ([]store.AlarmChange, error) {
	return step(rules, newest), nil
}

func step(rules []store.AlarmRule, r store.Reading) []store.AlarmChange {
	from, to := rules[0].TargetRank, 0
	for i := range rules {
		rules[i].Active = r.Values[0] > rules[i].Threshold
		if rules[i].Active {
			to = max(to, rules[i].Rank)
		}
	}
	if from == to {
		return nil
	}
	for i := range rules {
		rules[i].TargetRank = to
	}
	kind := map[bool]string{true: "triggered", false: "cleared"}[to > 0]
	return []store.AlarmChange{{TargetID: rules[0].TargetID, Kind: kind, From: from, To: to, At: r.Time, Value: r.Values[0]}}
}

func TestAlarmLevels(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"DefaultsForEveryProject": func(t *testing.T, db *store.DB) {
			p := newProject(t, db, newOrg(t, db))
			levels, _, err := db.ListAlarmLevels(t.Context(), p.OrgID, p.ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range levels {
				names = append(names, l.Name)
			}
			if got, want := len(names), 4; got != want || names[0] != "Maintenance" || names[3] != "Alarm" {
				t.Errorf("levels %v, want Maintenance, Alert, Action, Alarm", names)
			}
		},
		"ErrNotFound": func(t *testing.T, db *store.DB) {
			p := newProject(t, db, newOrg(t, db))
			_, _, err := db.ListAlarmLevels(t.Context(), unknownID, p.ID, 0, 1000)
			wantCode(t, err, apperr.NotFound)
			_, err = db.UpdateAlarmLevel(t.Context(), p.OrgID, p.ID, unknownID, store.AlarmLevelPatch{Name: ptr("x")})
			wantCode(t, err, apperr.NotFound)
			wantCode(t, db.DeleteAlarmLevel(t.Context(), p.OrgID, p.ID, unknownID), apperr.NotFound)
		},
		"ErrConflictNameTaken": func(t *testing.T, db *store.DB) {
			p := newProject(t, db, newOrg(t, db))
			_, err := db.CreateAlarmLevel(t.Context(), p.OrgID, p.ID, store.AlarmLevel{Name: "Alert", Rank: 7, Colour: "#000000"})
			wantCode(t, err, apperr.Conflict)
		},
		"ErrInvalidColour": func(t *testing.T, db *store.DB) {
			p := newProject(t, db, newOrg(t, db))
			_, err := db.CreateAlarmLevel(t.Context(), p.OrgID, p.ID, store.AlarmLevel{Name: "Red", Rank: 7, Colour: "red"})
			wantCode(t, err, apperr.Invalid)
		},
	})
}

// TestAlarmHook shows the contract of the evaluation hook: it runs in the
// batch's transaction with the rules and the newest instant before the
// batch, and the store writes what it decides.
func TestAlarmHook(t *testing.T) {
	db := newDB(t)
	ev := &thresholdEvaluator{}
	db.SetAlarmEvaluator(ev)
	ctx := t.Context()
	sensor, key := newBlueprintSensor(t, db)
	u := sensor.Instance.Inputs[0].ID
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	insert := func(m int, v float64) error {
		_, err := db.InsertReadings(ctx, key, []store.Reading{{Time: at(m), InputIDs: []int64{u}, Values: []float64{v}}})
		return err
	}
	kinds := func() []string {
		events, _, err := db.ListAlarmEvents(ctx, key.OrgID, key.ProjectID, store.AlarmEventQuery{From: store.MinTime, To: store.MaxTime, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range events {
			out = append(out, e.Kind+" "+e.LevelName)
		}
		return out
	}

	if err := insert(0, 50); err != nil {
		t.Fatal(err)
	}
	if ev.calls != 0 {
		t.Errorf("the hook ran %d times for a sensor without rules, want 0", ev.calls)
	}
	rule, err := db.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1})
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
		alarms, _, err := db.ListAlarms(ctx, key.OrgID, key.ProjectID, store.AlarmKey{}, 1000)
		if err != nil || len(alarms) != 1 || alarms[0].LevelName != "Alarm" || alarms[0].Value != 150 || !alarms[0].Since.Equal(at(1)) {
			t.Fatalf("alarms %+v, %v; want one at Alarm since minute 1, value 150", alarms, err)
		}
	})
	t.Run("RolledBackBatchWritesNothing", func(t *testing.T) {
		_, err := db.InsertReadings(ctx, key, []store.Reading{
			{Time: at(2), InputIDs: []int64{u}, Values: []float64{10}},
			{Time: at(3), InputIDs: []int64{unknownID}, Values: []float64{1}},
		})
		wantCode(t, err, apperr.Invalid)
		if got := len(kinds()); got != 1 {
			t.Errorf("%d events after a refused batch, want the 1 before", got)
		}
	})
	t.Run("LateReadingIsAnEvent", func(t *testing.T) {
		if err := insert(0, 500); err != nil { // older than minute 1
			t.Fatal(err)
		}
		alarms, _, _ := db.ListAlarms(ctx, key.OrgID, key.ProjectID, store.AlarmKey{}, 1000)
		if len(alarms) != 1 || alarms[0].Value != 150 {
			t.Errorf("alarms %+v after a late reading, want the current one unchanged", alarms)
		}
	})
	t.Run("AcknowledgeAppendsEvent", func(t *testing.T) {
		alarms, _, _ := db.ListAlarms(ctx, key.OrgID, key.ProjectID, store.AlarmKey{}, 1000)
		user := newMember(t, db, store.Org{ID: key.OrgID}, "ack", store.Editor)
		got, err := db.AcknowledgeAlarm(ctx, key.OrgID, key.ProjectID, alarms[0].ID, user.ID, "seen")
		if err != nil || got.AcknowledgedAt == nil || *got.AcknowledgedBy != user.ID || got.Note != "seen" {
			t.Fatalf("acknowledge: %+v, %v", got, err)
		}
		_, err = db.AcknowledgeAlarm(ctx, key.OrgID, key.ProjectID, unknownID, user.ID, "")
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("LevelInUse", func(t *testing.T) {
		wantCode(t, db.DeleteAlarmLevel(ctx, key.OrgID, key.ProjectID, rule.LevelID), apperr.Conflict)
		_, err := db.UpdateAlarmLevel(ctx, key.OrgID, key.ProjectID, rule.LevelID, store.AlarmLevelPatch{Rank: ptr(9)})
		wantCode(t, err, apperr.Conflict)
	})
	t.Run("RuleEditRechecks", func(t *testing.T) {
		_, err := db.UpdateAlarmRule(ctx, key, rule.ID, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 200, Persistence: 1})
		if err != nil {
			t.Fatal(err)
		}
		if alarms, _, _ := db.ListAlarms(ctx, key.OrgID, key.ProjectID, store.AlarmKey{}, 1000); len(alarms) != 0 {
			t.Errorf("alarms %+v after raising the threshold past the newest reading, want none", alarms)
		}
	})
	t.Run("ErrInvalidRule", func(t *testing.T) {
		_, err := db.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "nope", Level: "Alarm", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.Invalid)
		_, err = db.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Panic", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.Invalid)
		_, err = db.UpdateAlarmRule(ctx, key, unknownID, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Persistence: 1})
		wantCode(t, err, apperr.NotFound)
		wantCode(t, db.DeleteAlarmRule(ctx, key, unknownID), apperr.NotFound)
	})
	want := "triggered Alarm,late Alarm,acknowledged Alarm,cleared Alarm"
	if got := strings.Join(kinds(), ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

// TestListAlarmEvents pages a project's history both ways, whole and
// filtered by level: the cursor is the last id of a page, in either order.
func TestListAlarmEvents(t *testing.T) {
	db := newDB(t)
	db.SetAlarmEvaluator(&thresholdEvaluator{})
	ctx := t.Context()
	sensor, key := newBlueprintSensor(t, db)
	u := sensor.Instance.Inputs[0].ID
	var alarmLevel int64
	for _, spec := range []store.AlarmRuleSpec{
		{TargetKey: "u", Level: "Alert", Direction: "above", Threshold: 50, Persistence: 1},
		{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1},
	} {
		rule, err := db.CreateAlarmRule(ctx, key, spec)
		if err != nil {
			t.Fatal(err)
		}
		alarmLevel = rule.LevelID
	}
	// Triggered Alert, triggered Alarm, cleared Alarm, triggered Alarm.
	for m, v := range []float64{60, 150, 10, 150} {
		at := time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC)
		if _, err := db.InsertReadings(ctx, key, []store.Reading{{Time: at, InputIDs: []int64{u}, Values: []float64{v}}}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(q store.AlarmEventQuery) []int64 {
		t.Helper()
		q.From, q.To, q.Limit = store.MinTime, store.MaxTime, 100
		events, _, err := db.ListAlarmEvents(ctx, key.OrgID, key.ProjectID, q)
		if err != nil {
			t.Fatal(err)
		}
		return ids(events, func(e store.AlarmEvent) int64 { return e.ID })
	}
	asc, desc := list(store.AlarmEventQuery{}), list(store.AlarmEventQuery{Desc: true})
	slices.Reverse(desc)
	if len(asc) != 4 || !slices.Equal(desc, asc) {
		t.Fatalf("events %v oldest first and %v newest first reversed, want the same 4", asc, desc)
	}
	alarms := list(store.AlarmEventQuery{LevelID: alarmLevel})
	if !slices.Equal(alarms, asc[1:]) {
		t.Fatalf("events at Alarm %v, want %v", alarms, asc[1:])
	}
	for _, desc := range []bool{false, true} {
		want := slices.Clone(alarms)
		if desc {
			slices.Reverse(want)
		}
		t.Run(map[bool]string{false: "Asc", true: "Desc"}[desc], func(t *testing.T) {
			checkPages(t, want, func(after int64, limit int) ([]int64, bool, error) {
				q := store.AlarmEventQuery{LevelID: alarmLevel, Desc: desc, After: after, From: store.MinTime, To: store.MaxTime, Limit: limit}
				events, more, err := db.ListAlarmEvents(ctx, key.OrgID, key.ProjectID, q)
				return ids(events, func(e store.AlarmEvent) int64 { return e.ID }), more, err
			})
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		_, _, err := db.ListAlarmEvents(ctx, unknownID, key.ProjectID, store.AlarmEventQuery{Desc: true, Limit: 1})
		wantCode(t, err, apperr.NotFound)
	})
	// A filter naming another project's sensor or level is refused, as the
	// id would be in a path, rather than answered with no events.
	_, elsewhere := newBlueprintSensor(t, db)
	otherLevels, _, err := db.ListAlarmLevels(ctx, elsewhere.OrgID, elsewhere.ProjectID, 0, 100)
	if err != nil || len(otherLevels) == 0 {
		t.Fatalf("levels of another project: %v %v", otherLevels, err)
	}
	for name, q := range map[string]store.AlarmEventQuery{
		"SensorOfAnotherProject": {SensorID: elsewhere.SensorID},
		"LevelOfAnotherProject":  {LevelID: otherLevels[0].ID},
		"UnknownSensor":          {SensorID: unknownID},
		"UnknownLevel":           {LevelID: unknownID},
	} {
		t.Run("ErrNotFound/"+name, func(t *testing.T) {
			q.From, q.To, q.Limit = store.MinTime, store.MaxTime, 1
			_, _, err := db.ListAlarmEvents(ctx, key.OrgID, key.ProjectID, q)
			wantCode(t, err, apperr.NotFound)
		})
	}
}

// TestListAlarmRules: the list carries the sensor's overdue rule, nil
// while it has none.
func TestListAlarmRules(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	_, key := newBlueprintSensor(t, db)
	if _, err := db.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alert", Direction: "above", Threshold: 50, Persistence: 1}); err != nil {
		t.Fatal(err)
	}
	rules, _, overdue, err := db.ListAlarmRules(ctx, key, store.RuleKey{}, 100)
	if err != nil || len(rules) != 1 || overdue != nil {
		t.Fatalf("ListAlarmRules = %d rules, overdue %+v, %v; want 1 rule, no overdue rule", len(rules), overdue, err)
	}
	if _, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour); err != nil {
		t.Fatal(err)
	}
	rules, _, overdue, err = db.ListAlarmRules(ctx, key, store.RuleKey{}, 100)
	if err != nil || len(rules) != 1 || overdue == nil || overdue.Level != "Maintenance" || overdue.After != time.Hour {
		t.Fatalf("ListAlarmRules = %d rules, overdue %+v, %v; want 1 rule, overdue at Maintenance after 1h", len(rules), overdue, err)
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		_, _, _, err := db.ListAlarmRules(ctx, store.SensorKey{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: unknownID}, store.RuleKey{}, 100)
		wantCode(t, err, apperr.NotFound)
	})
}
