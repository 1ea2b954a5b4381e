package store_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

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

// TestApplyAlarms writes what an evaluation decided, as the domain hands
// it over: the rules' states, the current alarms the changes leave, and
// the events, in order. An escalation asks for a new acknowledgement; a
// late exceedance is an event that moves no alarm; a target cleared and
// raised again within one write has a new alarm; a target left without
// rules is cleared.
func TestApplyAlarms(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	sensor, key := newBlueprintSensor(t, db)
	u := sensor.Instance.Inputs[0].ID
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	alert := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alert", Direction: "above", Threshold: 50, Persistence: 1})
	alarm := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1})
	if alarm.LevelName != "Alarm" || alarm.Rank != 4 || alarm.TargetID != u || alarm.Below {
		t.Errorf("rule %+v, want above, at Alarm (rank 4) on input %d", alarm, u)
	}
	apply := func(changes []store.AlarmChange, active ...bool) {
		t.Helper()
		err := db.InTx(ctx, func(tx *store.Tx) error {
			rules, err := tx.SensorRules(ctx, key.SensorID)
			if err != nil {
				return err
			}
			before := make([]alarms.State, len(rules))
			for i := range rules {
				before[i] = rules[i].State
				rules[i].State = alarms.State{Active: active[i], Streak: min(1, btoi(active[i]))}
			}
			return tx.ApplyAlarms(ctx, sensor, rules, before, changes, changes)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	current := func() []store.Alarm {
		t.Helper()
		list, _, err := db.ListAlarms(ctx, key.OrgID, key.ProjectID, store.AlarmKey{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	kinds := func() []string {
		t.Helper()
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

	t.Run("TriggerWritesStateAlarmAndEvent", func(t *testing.T) {
		apply([]store.AlarmChange{{TargetID: u, Kind: "triggered", To: alert.Rank, At: at(1), Value: 60}}, true, false)
		list := current()
		if len(list) != 1 || list[0].LevelName != "Alert" || list[0].Value != 60 || !list[0].Since.Equal(at(1)) {
			t.Fatalf("alarms %+v, want one at Alert since minute 1, value 60", list)
		}
		if k := list[0].Key(); k.Rank != alert.Rank || !k.Since.Equal(at(1)) || k.ID != list[0].ID {
			t.Errorf("alarm's key %+v, want its rank, since and id", k)
		}
		rules := listRules(t, db, key)
		if !rules[0].Active || rules[0].Streak != 1 || rules[1].Active || rules[0].TargetRank != alert.Rank {
			t.Errorf("rules %+v, want the Alert rule active with a streak of 1, its target at Alert", rules)
		}
	})
	t.Run("EscalationAsksForANewAcknowledgement", func(t *testing.T) {
		user := newMember(t, db, store.Org{ID: key.OrgID}, "ack", store.Editor)
		if _, err := db.AcknowledgeAlarm(ctx, key.OrgID, key.ProjectID, current()[0].ID, user.ID, "seen"); err != nil {
			t.Fatal(err)
		}
		apply([]store.AlarmChange{{TargetID: u, Kind: "escalated", From: alert.Rank, To: alarm.Rank, At: at(2), Value: 150}}, true, true)
		if list := current(); len(list) != 1 || list[0].LevelName != "Alarm" || list[0].AcknowledgedAt != nil || list[0].Note != "" {
			t.Errorf("alarms %+v after an escalation, want one at Alarm, unacknowledged", list)
		}
	})
	t.Run("LateReadingIsAnEventThatMovesNoAlarm", func(t *testing.T) {
		apply([]store.AlarmChange{{TargetID: u, Kind: "late", To: alarm.Rank, Late: true, At: at(0), Value: 500}}, true, true)
		if list := current(); len(list) != 1 || list[0].Value != 150 {
			t.Errorf("alarms %+v after a late reading, want the current one unchanged", list)
		}
	})
	t.Run("FoldedChangeRaisesNoEvent", func(t *testing.T) {
		before := len(kinds())
		id := current()[0].ID
		apply([]store.AlarmChange{
			{TargetID: u, Kind: "cleared", From: alarm.Rank, At: at(3), Value: 10, Folded: true},
			{TargetID: u, Kind: "triggered", To: alarm.Rank, At: at(4), Value: 200, Coalesced: 1},
		}, true, true)
		list := current()
		if len(list) != 1 || list[0].ID == id || list[0].Value != 200 {
			t.Errorf("alarms %+v, want a new one at minute 4: the target came to rest on the way", list)
		}
		if got := len(kinds()); got != before+1 {
			t.Errorf("%d events, want %d: the folded change raises none", got, before+1)
		}
	})
	t.Run("ClearUnruled", func(t *testing.T) {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.DeleteAlarmRule(ctx, key, alert.ID); err != nil {
				return err
			}
			if _, err := tx.DeleteAlarmRule(ctx, key, alarm.ID); err != nil {
				return err
			}
			return tx.ClearUnruled(ctx, sensor, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if list := current(); len(list) != 0 {
			t.Errorf("alarms %+v of a target without rules, want none", list)
		}
	})
	want := "triggered Alert,acknowledged Alert,escalated Alarm,late Alarm,triggered Alarm,cleared Alarm"
	if got := strings.Join(kinds(), ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAlarmRuleEdits: the rule edits of a transaction lock the sensor,
// check the target and level, and answer NotFound for a rule that is not
// the sensor's; a level in use cannot be deleted or re-ranked.
func TestAlarmRuleEdits(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	_, key := newBlueprintSensor(t, db)
	rule := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "below", Threshold: 100, Deadband: 5, Persistence: 3})
	if !rule.Below || rule.Threshold != 100 || rule.Deadband != 5 || rule.Persistence != 3 || rule.Active || rule.Streak != 0 {
		t.Errorf("rule %+v, want below 100, deadband 5, persistence 3, at rest", rule)
	}
	if got, want := rule.Key(), (store.RuleKey{TargetID: rule.TargetID, ID: rule.ID}); got != want {
		t.Errorf("rule's key %+v, want %+v", got, want)
	}
	edit := func(fn func(tx *store.Tx) error) error {
		return db.InTx(ctx, fn)
	}
	t.Run("Update", func(t *testing.T) {
		err := edit(func(tx *store.Tx) error {
			sensor, err := tx.UpdateAlarmRule(ctx, key, rule.ID, store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 200, Persistence: 1})
			if err == nil && sensor.ID != key.SensorID {
				t.Errorf("sensor %d, want %d", sensor.ID, key.SensorID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		rules := listRules(t, db, key)
		if len(rules) != 1 || rules[0].TargetKey != "p" || rules[0].LevelName != "Alert" || rules[0].Below || rules[0].Threshold != 200 {
			t.Errorf("rules %+v, want one above 200 on p at Alert", rules)
		}
	})
	t.Run("LevelInUse", func(t *testing.T) {
		level := listRules(t, db, key)[0].LevelID
		wantCode(t, db.DeleteAlarmLevel(ctx, key.OrgID, key.ProjectID, level), apperr.Conflict)
		_, err := db.UpdateAlarmLevel(ctx, key.OrgID, key.ProjectID, level, store.AlarmLevelPatch{Rank: ptr(9)})
		wantCode(t, err, apperr.Conflict)
	})
	t.Run("ErrInvalidRule", func(t *testing.T) {
		wantCode(t, edit(func(tx *store.Tx) error {
			_, _, err := tx.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "nope", Level: "Alarm", Direction: "above", Persistence: 1})
			return err
		}), apperr.Invalid)
		wantCode(t, edit(func(tx *store.Tx) error {
			_, _, err := tx.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Panic", Direction: "above", Persistence: 1})
			return err
		}), apperr.Invalid)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantCode(t, edit(func(tx *store.Tx) error {
			_, err := tx.UpdateAlarmRule(ctx, key, unknownID, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Persistence: 1})
			return err
		}), apperr.NotFound)
		wantCode(t, edit(func(tx *store.Tx) error {
			_, err := tx.DeleteAlarmRule(ctx, key, unknownID)
			return err
		}), apperr.NotFound)
		wantCode(t, edit(func(tx *store.Tx) error {
			_, err := tx.AlarmRule(ctx, unknownID)
			return err
		}), apperr.NotFound)
	})
	t.Run("Delete", func(t *testing.T) {
		if err := edit(func(tx *store.Tx) error {
			_, err := tx.DeleteAlarmRule(ctx, key, rule.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if rules := listRules(t, db, key); len(rules) != 0 {
			t.Errorf("rules %+v after the delete, want none", rules)
		}
	})
}

// createRule adds a rule to the sensor in a transaction of its own and
// returns it as stored.
func createRule(t *testing.T, db *store.DB, key store.SensorKey, spec store.AlarmRuleSpec) store.AlarmRule {
	t.Helper()
	var rule store.AlarmRule
	err := db.InTx(t.Context(), func(tx *store.Tx) error {
		id, _, err := tx.CreateAlarmRule(t.Context(), key, spec)
		if err != nil {
			return err
		}
		rule, err = tx.AlarmRule(t.Context(), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rule
}

// listRules returns the sensor's rules, by target.
func listRules(t *testing.T, db *store.DB, key store.SensorKey) []store.AlarmRule {
	t.Helper()
	rules, _, _, err := db.ListAlarmRules(t.Context(), key, store.RuleKey{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// TestListAlarmEvents pages a project's history both ways, whole and
// filtered by level: the cursor is the last id of a page, in either order.
func TestListAlarmEvents(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	sensor, key := newBlueprintSensor(t, db)
	u := sensor.Instance.Inputs[0].ID
	alert := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alert", Direction: "above", Threshold: 50, Persistence: 1})
	alarm := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 100, Persistence: 1})
	alarmLevel := alarm.LevelID
	// Triggered Alert, triggered Alarm, cleared Alarm, triggered Alarm, a
	// write each.
	for m, c := range []struct{ from, to int }{{0, alert.Rank}, {alert.Rank, alarm.Rank}, {alarm.Rank, 0}, {0, alarm.Rank}} {
		at := time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC)
		err := db.InTx(ctx, func(tx *store.Tx) error {
			rules, err := tx.SensorRules(ctx, key.SensorID)
			if err != nil {
				return err
			}
			changes := []store.AlarmChange{{TargetID: u, Kind: "triggered", From: c.from, To: c.to, At: at, Value: float64(m)}}
			if c.to == 0 {
				changes[0].Kind = "cleared"
			}
			return tx.ApplyAlarms(ctx, sensor, rules, nil, changes, changes)
		})
		if err != nil {
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
// while it has none, as GetOverdueRule reads it.
func TestListAlarmRules(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	_, key := newBlueprintSensor(t, db)
	createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alert", Direction: "above", Threshold: 50, Persistence: 1})
	rules, _, overdue, err := db.ListAlarmRules(ctx, key, store.RuleKey{}, 100)
	if err != nil || len(rules) != 1 || overdue != nil {
		t.Fatalf("ListAlarmRules = %d rules, overdue %+v, %v; want 1 rule, no overdue rule", len(rules), overdue, err)
	}
	_, err = db.GetOverdueRule(ctx, key)
	wantCode(t, err, apperr.NotFound)
	if _, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetOverdueRule(ctx, key); err != nil || got.Level != "Maintenance" || got.After != time.Hour || got.SensorID != key.SensorID {
		t.Errorf("GetOverdueRule = %+v, %v; want Maintenance after an hour", got, err)
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
