package server_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestAlarmLevels: the default set, edits, and the refusals that keep
// rules meaningful.
func TestAlarmLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Levels")
	ctx := t.Context()
	res, err := e.client(a.tn.tokens[store.Viewer]).ListAlarmLevelsWithResponse(ctx, a.tn.orgID, a.tn.projectID, nil)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list levels: %v %s", err, res.Body)
	}
	var names []string
	byName := map[string]int64{}
	for _, l := range res.JSON200.Items {
		names = append(names, l.Name)
		byName[l.Name] = l.Id
	}
	if got, want := strings.Join(names, ","), "Maintenance,Alert,Action,Alarm"; got != want {
		t.Errorf("default levels %s, want %s", got, want)
	}

	created, err := a.admin.CreateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, client.AlarmLevelCreate{Name: "Evacuate", Rank: 5, Colour: "#9b51e0"})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create level: %v %s", err, created.Body)
	}
	dup, _ := a.admin.CreateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, client.AlarmLevelCreate{Name: "Evacuate", Rank: 6, Colour: "#9b51e0"})
	wantError(t, dup.StatusCode(), dup.Body, 409, "conflict")

	renamed, err := a.admin.UpdateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, byName["Alert"], client.AlarmLevelUpdate{Name: ptr("Watch")})
	if err != nil || renamed.JSON200 == nil || renamed.JSON200.Name != "Watch" {
		t.Fatalf("rename a level in use: %v %s", err, renamed.Body)
	}
	reranked, _ := a.admin.UpdateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, byName["Alert"], client.AlarmLevelUpdate{Rank: ptr(9)})
	wantError(t, reranked.StatusCode(), reranked.Body, 409, "conflict")
	inUse, _ := a.admin.DeleteAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, byName["Alarm"])
	wantError(t, inUse.StatusCode(), inUse.Body, 409, "conflict")
	unused, err := a.admin.DeleteAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, created.JSON201.Id)
	if err != nil || unused.StatusCode() != 204 {
		t.Fatalf("delete an unused level: %v %s", err, unused.Body)
	}
	other := e.newTenant("Levels elsewhere")
	foreign, _ := a.admin.DeleteAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, e.mustLevel(t, other, "Alert"))
	wantError(t, foreign.StatusCode(), foreign.Body, 404, "not_found")
}

func (e *env) mustLevel(t *testing.T, tn tenant, name string) int64 {
	t.Helper()
	levels, _, err := e.db.ListAlarmLevels(t.Context(), tn.orgID, tn.projectID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range levels {
		if l.Name == name {
			return l.ID
		}
	}
	t.Fatalf("no level %q", name)
	return 0
}

// TestAlarmRuleRefusals: bad rules get a 400 naming the field and change
// nothing.
func TestAlarmRuleRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Refusals")
	path := "/api/v1/org/" + strconv.FormatInt(a.tn.orgID, 10) + "/proj/" + strconv.FormatInt(a.tn.projectID, 10) +
		"/sensors/" + strconv.FormatInt(a.tn.instanceID, 10) + "/alarm-rules"
	tests := []struct {
		name, body string
	}{
		{"UnknownTarget", `{"target": "depth", "level": "Alert", "direction": "above", "threshold": 1}`},
		{"UnknownLevel", `{"target": "digits", "level": "Panic", "direction": "above", "threshold": 1}`},
		{"NonFiniteThreshold", `{"target": "digits", "level": "Alert", "direction": "above", "threshold": 1e999}`},
		{"NegativeDeadband", `{"target": "digits", "level": "Alert", "direction": "above", "threshold": 1, "deadband": -1}`},
		{"ZeroPersistence", `{"target": "digits", "level": "Alert", "direction": "above", "threshold": 1, "persistence": 0}`},
		{"UnknownDirection", `{"target": "digits", "level": "Alert", "direction": "sideways", "threshold": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot(t, a.tn.orgID)
			res, body := e.do(a.tn.tokens[store.Admin], http.MethodPost, path, "application/json", strings.NewReader(tt.body))
			wantError(t, res.StatusCode, body, 400, "invalid")
			if e.snapshot(t, a.tn.orgID) != before {
				t.Error("a refused rule changed the organization")
			}
		})
	}
	t.Run("NoInstance", func(t *testing.T) {
		res, err := a.admin.CreateAlarmRuleWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.sensorID,
			client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: math.MaxFloat64})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 400, "invalid")
	})
}

// TestAlarmOverdue: a sensor silent past its rule's duration raises an
// alarm at the check, and a reading clears it at the next.
func TestAlarmOverdue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Overdue")
	ctx := t.Context()
	// The rules' list says whether there is an overdue rule, with no 404.
	overdue := func() *client.OverdueRule {
		t.Helper()
		res, err := e.client(a.tn.tokens[store.Viewer]).ListAlarmRulesWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list alarm rules: %v %s", err, res.Body)
		}
		return res.JSON200.Overdue
	}
	if got := overdue(); got != nil {
		t.Errorf("overdue rule %+v before one is set, want none", got)
	}
	res, err := a.admin.SetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, client.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 3600})
	if err != nil || res.JSON200 == nil || res.JSON200.Level != "Maintenance" || res.JSON200.AfterSeconds != 3600 {
		t.Fatalf("set overdue rule: %v %s", err, res.Body)
	}
	if got := overdue(); got == nil || got.Level != "Maintenance" || got.AfterSeconds != 3600 {
		t.Errorf("listed overdue rule %+v, want Maintenance after 3600 s", got)
	}
	a.post(t, 0, 2000) // 2024-05-01T12:00, long ago

	check := func(now time.Time, wantRaised, wantCleared int64) {
		t.Helper()
		raised, cleared, err := e.core.CheckOverdueOnce(ctx, now)
		if err != nil || raised != wantRaised || cleared != wantCleared {
			t.Fatalf("CheckOverdue(%v) = %d raised, %d cleared, %v; want %d, %d", now, raised, cleared, err, wantRaised, wantCleared)
		}
	}
	check(time.Date(2024, 5, 1, 12, 59, 0, 0, time.UTC), 0, 0) // within the hour
	check(time.Date(2024, 5, 1, 13, 1, 0, 0, time.UTC), 1, 0)
	check(time.Date(2024, 5, 1, 13, 2, 0, 0, time.UTC), 0, 0) // raised once
	list := a.alarms(t)
	if len(list) != 1 || list[0].Target != "overdue" || list[0].Level != "Maintenance" || list[0].Value != 3660 {
		t.Fatalf("alarms %+v, want overdue at Maintenance, 3660 s since the reading", list)
	}
	// A rule edit leaves the overdue alarm to the check.
	a.rule(t, client.AlarmRuleInput{Target: "freq", Level: "Action", Direction: "below", Threshold: 1})
	a.post(t, 30, 2000) // 12:30, reported late: within the hour of 13:05
	check(time.Date(2024, 5, 1, 13, 5, 0, 0, time.UTC), 0, 1)
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}), "triggered Maintenance", "cleared Maintenance")

	del, err := a.admin.DeleteOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID)
	if err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete overdue rule: %v %s", err, del.Body)
	}
	get, _ := a.admin.GetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID)
	wantError(t, get.StatusCode(), get.Body, 404, "not_found")
	if got := overdue(); got != nil {
		t.Errorf("overdue rule %+v listed after its delete, want none", got)
	}
	short, _ := a.admin.SetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, client.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 10})
	wantError(t, short.StatusCode(), short.Body, 400, "invalid")
}
