package server_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// newAlarm gives the tenant's project a webhook, its piezometer a rule at
// Alarm on digits and a reading that raises it, and its sensor an overdue
// rule; it returns an unused level (Maintenance), the rule, the alarm and
// the webhook (refused by default, being on loopback).
func (e *env) newAlarm(t *testing.T, tn tenant) (levelID, ruleID, alarmID, webhookID int64) {
	t.Helper()
	ctx := context.Background()
	key := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID}
	levels, _, err := e.db.ListAlarmLevels(ctx, tn.orgID, tn.projectID, 0, 1000)
	if err != nil || len(levels) == 0 {
		t.Fatalf("list alarm levels: %v %v", levels, err)
	}
	hook, err := e.db.CreateWebhook(ctx, tn.orgID, tn.projectID, "http://127.0.0.1:9/hook", "a-secret-of-16-chars")
	if err != nil {
		t.Fatal(err)
	}
	rule, err := e.core.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "digits", Level: "Alarm", Direction: "above", Threshold: 1000, Persistence: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.core.Ingest(ctx, key, sensing.NewBatch([]store.Reading{{Time: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), InputIDs: []int64{e.freqID(t, tn)}, Values: []float64{2000}}})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.SetOverdueRule(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.sensorID}, "Action", time.Hour); err != nil {
		t.Fatal(err)
	}
	alarms, _, err := e.db.ListAlarms(ctx, tn.orgID, tn.projectID, store.AlarmKey{}, 1000)
	if err != nil || len(alarms) != 1 {
		t.Fatalf("alarms %+v, %v; want the one the reading raised", alarms, err)
	}
	return levels[0].ID, rule.ID, alarms[0].ID, hook.ID
}

// freqID is the input id of the tenant's piezometer's frequency.
func (e *env) freqID(t *testing.T, tn tenant) int64 {
	t.Helper()
	sensor, err := e.db.GetSensor(context.Background(), store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	return sensor.Instance.Inputs[0].ID
}

// alarmSite is a tenant whose piezometer has Alert above 5000 digits
// (deadband 100) and Alarm above 8000; digits is freq²/1000.
type alarmSite struct {
	e      *env
	tn     tenant
	admin  *client.ClientWithResponses
	editor *client.ClientWithResponses
	freq   string
	rules  map[string]int64 // by level
	minute int              // of the next reading a batch posts
}

func newAlarmSite(t *testing.T, e *env, name string) *alarmSite {
	t.Helper()
	tn := e.newTenant(name)
	a := &alarmSite{e: e, tn: tn, admin: e.client(tn.tokens[store.Admin]), editor: e.client(tn.tokens[store.Editor]),
		freq: strconv.FormatInt(e.freqID(t, tn), 10), rules: map[string]int64{}}
	a.rule(t, client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 5000, Deadband: ptr(100.0)})
	a.rule(t, client.AlarmRuleInput{Target: "digits", Level: "Alarm", Direction: "above", Threshold: 8000})
	return a
}

func (a *alarmSite) rule(t *testing.T, in client.AlarmRuleInput) client.AlarmRule {
	t.Helper()
	res, err := a.admin.CreateAlarmRuleWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, in)
	if err != nil || res.JSON201 == nil {
		t.Fatalf("create rule %+v: %v %s", in, err, res.Body)
	}
	a.rules[in.Level] = res.JSON201.Id
	return *res.JSON201
}

// post stores one reading of the piezometer at minute m with frequency
// freq; digits is then freq²/1000.
func (a *alarmSite) post(t *testing.T, m int, freq float64) {
	t.Helper()
	res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, []client.ReadingInput{
		{Datetime: time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC), Inputs: client.Values{a.freq: freq}},
	})
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("POST reading at minute %d: %v %s", m, err, res.Body)
	}
}

func (a *alarmSite) alarms(t *testing.T) []client.Alarm {
	t.Helper()
	res, err := a.e.client(a.tn.tokens[store.Viewer]).ListAlarmsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, nil)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list alarms: %v %s", err, res.Body)
	}
	return res.JSON200.Items
}

// level is the piezometer's digits' current level, "" at rest.
func (a *alarmSite) level(t *testing.T) string {
	t.Helper()
	items := a.alarms(t)
	if len(items) == 0 {
		return ""
	}
	return items[0].Level
}

// events lists the kinds and levels of the project's events, in order.
func (a *alarmSite) events(t *testing.T, params client.ListAlarmEventsParams) []string {
	t.Helper()
	res, err := a.e.client(a.tn.tokens[store.Viewer]).ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &params)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list events: %v %s", err, res.Body)
	}
	var out []string
	for _, ev := range res.JSON200.Items {
		out = append(out, string(ev.Kind)+" "+ev.Level)
	}
	return out
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("events\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// TestAlarmLifecycle walks a target through every change of level: the
// current state follows the newest reading, escalates, asks for an
// acknowledgement, de-escalates within the deadband and clears.
func TestAlarmLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Lifecycle")

	steps := []struct {
		freq float64 // digits = freq²/1000
		want string
	}{
		{2000, ""},      // 4000
		{2500, "Alert"}, // 6250
		{3000, "Alarm"}, // 9000
		{2400, "Alert"}, // 5760: below Alarm's 8000
		{2225, "Alert"}, // 4950.6: within Alert's deadband
		{2200, ""},      // 4840: past it
	}
	for m, s := range steps {
		if m == 3 {
			// Acknowledged at Alarm; the de-escalation keeps it.
			list := a.alarms(t)
			res, err := a.editor.AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, list[0].Id, client.AlarmAcknowledge{Note: ptr("crew on site")})
			if err != nil || res.JSON200 == nil || !res.JSON200.Acknowledged || deref(res.JSON200.Note) != "crew on site" {
				t.Fatalf("acknowledge: %v %s", err, res.Body)
			}
			if got, want := deref(res.JSON200.AcknowledgedBy), a.tn.userIDs[store.Editor]; got != want {
				t.Errorf("acknowledged_by %d, want the editor %d", got, want)
			}
		}
		a.post(t, m, s.freq)
		if got := a.level(t); got != s.want {
			t.Fatalf("after reading %d (freq %v): level %q, want %q", m, s.freq, got, s.want)
		}
		if m == 3 {
			if list := a.alarms(t); !list[0].Acknowledged || list[0].Value != 5760 {
				t.Errorf("after the de-escalation: %+v, want acknowledged, value 5760", list[0])
			}
		}
	}
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}),
		"triggered Alert", "escalated Alarm", "acknowledged Alarm", "de-escalated Alert", "cleared Alert")

	t.Run("ViewerCannotAcknowledge", func(t *testing.T) {
		a.post(t, 10, 3000)
		id := a.alarms(t)[0].Id
		res, err := e.client(a.tn.tokens[store.Viewer]).AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, id, client.AlarmAcknowledge{})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 403, "forbidden")
	})

	t.Run("EventsFilterAndPage", func(t *testing.T) {
		alarmLevel := a.alarms(t)[0].LevelId
		wantEvents(t, a.events(t, client.ListAlarmEventsParams{LevelId: &alarmLevel}),
			"escalated Alarm", "acknowledged Alarm", "triggered Alarm")
		wantEvents(t, a.events(t, client.ListAlarmEventsParams{SensorId: ptr(a.tn.sensorID)}))
		wantEvents(t, a.events(t, client.ListAlarmEventsParams{DatetimeLt: ptr("946684800000")}))
		all := a.events(t, client.ListAlarmEventsParams{})
		atAlarm := []string{"escalated Alarm", "acknowledged Alarm", "triggered Alarm"}
		newest := client.EventsNewestFirst
		for _, c := range []struct {
			name   string
			params client.ListAlarmEventsParams
			want   []string
		}{
			{"Asc", client.ListAlarmEventsParams{}, all},
			{"Desc", client.ListAlarmEventsParams{Order: &newest}, reversed(all)},
			{"AscAtAlarm", client.ListAlarmEventsParams{LevelId: &alarmLevel, Order: ptr(client.EventsOldestFirst)}, atAlarm},
			{"DescAtAlarm", client.ListAlarmEventsParams{LevelId: &alarmLevel, Order: &newest}, reversed(atAlarm)},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got, _ := a.pages(t, c.params); !slices.Equal(got, c.want) {
					t.Errorf("paging by 2 gave %v, want %v", got, c.want)
				}
			})
		}
		if len(all) != 6 {
			t.Errorf("%d events, want 6", len(all))
		}
	})

	t.Run("CursorKeepsItsOrder", func(t *testing.T) {
		_, ascCursor := a.pages(t, client.ListAlarmEventsParams{})
		_, descCursor := a.pages(t, client.ListAlarmEventsParams{Order: ptr(client.EventsNewestFirst)})
		for _, c := range []struct {
			name   string
			params client.ListAlarmEventsParams
			want   string // in the message
		}{
			{"AscCursorDesc", client.ListAlarmEventsParams{Cursor: &ascCursor, Order: ptr(client.EventsNewestFirst)}, "order=asc"},
			{"DescCursorAsc", client.ListAlarmEventsParams{Cursor: &descCursor, Order: ptr(client.EventsOldestFirst)}, "order=desc"},
			{"DescCursorDefault", client.ListAlarmEventsParams{Cursor: &descCursor}, "order=desc"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res, err := a.e.client(a.tn.tokens[store.Viewer]).ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &c.params)
				if err != nil {
					t.Fatal(err)
				}
				if got := wantError(t, res.StatusCode(), res.Body, 400, "invalid"); !strings.Contains(got.Message, c.want) {
					t.Errorf("message %q, want it to name %s", got.Message, c.want)
				}
			})
		}
	})
}

// pages lists the project's events two at a time with params, following
// next_cursor, and returns their kinds and levels and the first cursor.
func (a *alarmSite) pages(t *testing.T, params client.ListAlarmEventsParams) (events []string, first string) {
	t.Helper()
	params.Limit = ptr(2)
	for range 10 {
		res, err := a.e.client(a.tn.tokens[store.Viewer]).ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &params)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list events: %v %s", err, res.Body)
		}
		for _, ev := range res.JSON200.Items {
			events = append(events, string(ev.Kind)+" "+ev.Level)
		}
		if res.JSON200.NextCursor == nil {
			return events, first
		}
		if first == "" {
			first = *res.JSON200.NextCursor
		}
		params.Cursor = res.JSON200.NextCursor
	}
	t.Fatalf("more than 10 pages of events: %v", events)
	return nil, ""
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
