package server_test

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen"
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
	levels, err := e.db.ListAlarmLevels(ctx, tn.orgID, tn.projectID)
	if err != nil || len(levels) == 0 {
		t.Fatalf("list alarm levels: %v %v", levels, err)
	}
	hook, err := e.db.CreateWebhook(ctx, tn.orgID, tn.projectID, "http://127.0.0.1:9/hook", "a-secret-of-16-chars")
	if err != nil {
		t.Fatal(err)
	}
	rule, err := e.db.CreateAlarmRule(ctx, key, store.AlarmRuleSpec{TargetKey: "digits", Level: "Alarm", Direction: "above", Threshold: 1000, Persistence: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.InsertReadings(ctx, key, []store.Reading{{Time: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), InputIDs: []int64{e.freqID(t, tn)}, Values: []float64{2000}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.SetOverdueRule(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.sensorID}, "Action", time.Hour); err != nil {
		t.Fatal(err)
	}
	alarms, err := e.db.ListAlarms(ctx, tn.orgID, tn.projectID)
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
	admin  *gen.ClientWithResponses
	editor *gen.ClientWithResponses
	freq   string
	rules  map[string]int64 // by level
	minute int              // of the next reading a batch posts
}

func newAlarmSite(t *testing.T, e *env, name string) *alarmSite {
	t.Helper()
	tn := e.newTenant(name)
	a := &alarmSite{e: e, tn: tn, admin: e.client(tn.tokens[store.Admin]), editor: e.client(tn.tokens[store.Editor]),
		freq: strconv.FormatInt(e.freqID(t, tn), 10), rules: map[string]int64{}}
	a.rule(t, gen.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 5000, Deadband: ptr(100.0)})
	a.rule(t, gen.AlarmRuleInput{Target: "digits", Level: "Alarm", Direction: "above", Threshold: 8000})
	return a
}

func (a *alarmSite) rule(t *testing.T, in gen.AlarmRuleInput) gen.AlarmRule {
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
	res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, []gen.ReadingInput{
		{Datetime: time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC), Inputs: gen.Values{a.freq: freq}},
	})
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("POST reading at minute %d: %v %s", m, err, res.Body)
	}
}

func (a *alarmSite) alarms(t *testing.T) []gen.Alarm {
	t.Helper()
	res, err := a.e.client(a.tn.tokens[store.Viewer]).ListAlarmsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID)
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
func (a *alarmSite) events(t *testing.T, params gen.ListAlarmEventsParams) []string {
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
			res, err := a.editor.AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, list[0].Id, gen.AlarmAcknowledge{Note: ptr("crew on site")})
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
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}),
		"triggered Alert", "escalated Alarm", "acknowledged Alarm", "de-escalated Alert", "cleared Alert")

	t.Run("ViewerCannotAcknowledge", func(t *testing.T) {
		a.post(t, 10, 3000)
		id := a.alarms(t)[0].Id
		res, err := e.client(a.tn.tokens[store.Viewer]).AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, id, gen.AlarmAcknowledge{})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 403, "forbidden")
	})

	t.Run("EventsFilterAndPage", func(t *testing.T) {
		alarmLevel := a.alarms(t)[0].LevelId
		wantEvents(t, a.events(t, gen.ListAlarmEventsParams{LevelId: &alarmLevel}),
			"escalated Alarm", "acknowledged Alarm", "triggered Alarm")
		wantEvents(t, a.events(t, gen.ListAlarmEventsParams{SensorId: ptr(a.tn.sensorID)}))
		wantEvents(t, a.events(t, gen.ListAlarmEventsParams{DatetimeLt: ptr("946684800000")}))
		all := a.events(t, gen.ListAlarmEventsParams{})
		atAlarm := []string{"escalated Alarm", "acknowledged Alarm", "triggered Alarm"}
		newest := gen.EventsNewestFirst
		for _, c := range []struct {
			name   string
			params gen.ListAlarmEventsParams
			want   []string
		}{
			{"Asc", gen.ListAlarmEventsParams{}, all},
			{"Desc", gen.ListAlarmEventsParams{Order: &newest}, reversed(all)},
			{"AscAtAlarm", gen.ListAlarmEventsParams{LevelId: &alarmLevel, Order: ptr(gen.EventsOldestFirst)}, atAlarm},
			{"DescAtAlarm", gen.ListAlarmEventsParams{LevelId: &alarmLevel, Order: &newest}, reversed(atAlarm)},
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
		_, ascCursor := a.pages(t, gen.ListAlarmEventsParams{})
		_, descCursor := a.pages(t, gen.ListAlarmEventsParams{Order: ptr(gen.EventsNewestFirst)})
		for _, c := range []struct {
			name   string
			params gen.ListAlarmEventsParams
			want   string // in the message
		}{
			{"AscCursorDesc", gen.ListAlarmEventsParams{Cursor: &ascCursor, Order: ptr(gen.EventsNewestFirst)}, "order=asc"},
			{"DescCursorAsc", gen.ListAlarmEventsParams{Cursor: &descCursor, Order: ptr(gen.EventsOldestFirst)}, "order=desc"},
			{"DescCursorDefault", gen.ListAlarmEventsParams{Cursor: &descCursor}, "order=desc"},
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
func (a *alarmSite) pages(t *testing.T, params gen.ListAlarmEventsParams) (events []string, first string) {
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

// TestAlarmPersistence: a rule with persistence 3 waits for three
// consecutive readings beyond its threshold.
func TestAlarmPersistence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Persistence")
	a.rule(t, gen.AlarmRuleInput{Target: "freq", Level: "Action", Direction: "below", Threshold: 1000, Persistence: ptr(3)})
	for m, want := range []string{"", "", "", "", "Action"} {
		freq := 900.0
		if m == 1 {
			freq = 1100 // breaks the streak
		}
		a.post(t, m, freq)
		if got := a.level(t); got != want {
			t.Fatalf("after reading %d: level %q, want %q", m, got, want)
		}
	}
}

// TestAlarmLateReading: a reading older than the newest is evaluated, its
// exceedance recorded as a late event, and the current state left alone.
func TestAlarmLateReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Late")
	a.post(t, 30, 2000)
	a.post(t, 10, 3000) // older, and past Alarm's threshold
	if got := a.level(t); got != "" {
		t.Errorf("level after a late exceedance %q, want none: the newest reading is at rest", got)
	}
	res, err := a.editor.ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &gen.ListAlarmEventsParams{})
	if err != nil || res.JSON200 == nil || len(res.JSON200.Items) != 1 {
		t.Fatalf("events: %v %s, want the late one", err, res.Body)
	}
	ev := res.JSON200.Items[0]
	if ev.Kind != "late" || !ev.Late || ev.Level != "Alarm" || deref(ev.Value) != 9000 || deref(ev.ReadingDatetime) != "2024-05-01T12:10:00.000Z" {
		t.Errorf("late event %+v, want late at Alarm, value 9000, reading at 12:10", ev)
	}
}

// TestAlarmRolledBackBatch: a batch refused as a whole raises nothing,
// though a reading of it was past a threshold.
func TestAlarmRolledBackBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Rollback")
	res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, []gen.ReadingInput{
		{Datetime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), Inputs: gen.Values{a.freq: 3000}},
		{Datetime: time.Date(2024, 5, 1, 12, 1, 0, 0, time.UTC), Inputs: gen.Values{"999999999": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.StatusCode(), res.Body, 400, "invalid")
	if got := a.level(t); got != "" {
		t.Errorf("level %q after a refused batch, want none", got)
	}
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}))
}

// TestAlarmChangesInOneBatch: a batch whose readings move a target
// several times leaves the alarm the last reading makes, with every change
// in the history, in order: a rise on the way asks for a new
// acknowledgement, and a target that came to rest on the way has a new
// alarm.
func TestAlarmChangesInOneBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Batch")
	ack := func() gen.Alarm {
		t.Helper()
		list := a.alarms(t)
		if len(list) != 1 {
			t.Fatalf("%d alarms, want 1", len(list))
		}
		res, err := a.editor.AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, list[0].Id, gen.AlarmAcknowledge{})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("acknowledge: %v %s", err, res.Body)
		}
		return *res.JSON200
	}
	batch := func(freqs ...float64) {
		t.Helper()
		var readings []gen.ReadingInput
		for _, f := range freqs {
			readings = append(readings, gen.ReadingInput{Datetime: time.Date(2024, 5, 1, 12, len(readings)+a.minute, 0, 0, time.UTC), Inputs: gen.Values{a.freq: f}})
		}
		a.minute += len(readings)
		res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, readings)
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("POST %v: %v %s", freqs, err, res.Body)
		}
	}
	batch(2500) // 6250: Alert
	first := ack()
	batch(2400, 2300) // 5760, 5290: still Alert, no change
	if got := a.alarms(t)[0]; !got.Acknowledged || got.Id != first.Id {
		t.Errorf("after a batch that changes nothing: %+v, want alarm %d acknowledged", got, first.Id)
	}
	batch(3000, 2500) // Alarm, then back to Alert
	if got := a.alarms(t)[0]; got.Acknowledged || got.Id != first.Id || got.Level != "Alert" || got.Value != 6250 {
		t.Errorf("after a rise and a fall in one batch: %+v, want alarm %d at Alert, 6250, to acknowledge again", got, first.Id)
	}
	ack()
	batch(2000, 2500) // rest, then Alert again
	if got := a.alarms(t)[0]; got.Acknowledged || got.Id == first.Id || got.Level != "Alert" {
		t.Errorf("after a clear and a trigger in one batch: %+v, want a new alarm at Alert, not acknowledged", got)
	}
	batch(3000, 2000) // Alarm, then rest
	if got := a.alarms(t); len(got) != 0 {
		t.Errorf("after a rise and a clear in one batch: %+v, want no alarm", got)
	}
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}),
		"triggered Alert", "acknowledged Alert", "escalated Alarm", "de-escalated Alert", "acknowledged Alert",
		"cleared Alert", "triggered Alert", "escalated Alarm", "cleared Alarm")
}

// TestAlarmRecheckOnDelete: a delete that takes the newest reading moves
// the current alarm to the newest reading left, or clears it when none is
// left; a delete of older readings changes nothing, and history stays.
func TestAlarmRecheckOnDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Delete")
	a.post(t, 0, 2000) // 4000: rest
	a.post(t, 1, 2500) // 6250: Alert
	a.post(t, 2, 3000) // 9000: Alarm
	steps := []struct {
		from, to  int // minutes after 12:00 of the deleted range
		wantLevel string
	}{
		{0, 1, "Alarm"}, // older than the newest: nothing moves
		{2, 3, "Alert"}, // the newest: back to 12:01's 6250
		{0, 60, ""},     // every reading: nothing holds
	}
	for _, step := range steps {
		minute := func(m int) string { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC).Format(time.RFC3339) }
		res, err := a.admin.DeleteReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
			&gen.DeleteReadingsParams{DatetimeGte: minute(step.from), DatetimeLt: minute(step.to)})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("delete 12:%02d to 12:%02d: %v %s", step.from, step.to, err, res.Body)
		}
		if got := a.level(t); got != step.wantLevel {
			t.Errorf("level after deleting 12:%02d to 12:%02d %q, want %q", step.from, step.to, got, step.wantLevel)
		}
	}
	a.post(t, 5, 2500) // the rules start from rest again
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}),
		"triggered Alert", "escalated Alarm", "de-escalated Alert", "cleared Alert", "triggered Alert")

	res, err := a.editor.ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &gen.ListAlarmEventsParams{})
	if err != nil || res.JSON200 == nil || len(res.JSON200.Items) != 5 {
		t.Fatalf("events: %v %s, want 5", err, res.Body)
	}
	if ev := res.JSON200.Items[2]; deref(ev.Value) != 6250 || deref(ev.ReadingDatetime) != "2024-05-01T12:01:00.000Z" {
		t.Errorf("de-escalation %+v, want value 6250 of the reading at 12:01 it was evaluated on", ev)
	}
}

// TestAlarmRecheckOnEdit: editing a rule, a formula or a calibration
// re-evaluates the newest reading at once; history stays.
func TestAlarmRecheckOnEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Recheck")
	ctx := t.Context()
	a.post(t, 0, 2500) // 6250: Alert
	if got := a.level(t); got != "Alert" {
		t.Fatalf("level %q, want Alert", got)
	}

	// Raising the threshold clears without a new reading.
	res, err := a.admin.UpdateAlarmRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, a.rules["Alert"],
		gen.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 7000})
	if err != nil || res.JSON200 == nil || res.JSON200.Active {
		t.Fatalf("update rule: %v %s, want an inactive rule", err, res.Body)
	}
	if got := a.level(t); got != "" {
		t.Errorf("level %q after raising the threshold, want none", got)
	}

	// A formula that doubles digits escalates to Alarm (12500).
	f, err := a.admin.UpdateFormulasWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, gen.FormulasUpdate{
		Outputs: &map[string]string{"digits": "freq^2 / 500"},
	})
	if err != nil || f.StatusCode() != 200 {
		t.Fatalf("update formulas: %v %s", err, f.Body)
	}
	if got := a.level(t); got != "Alarm" {
		t.Errorf("level %q after the formula edit, want Alarm", got)
	}

	// A rule on pressure, then a calibration in force at the reading's
	// datetime that brings pressure past it.
	a.rule(t, gen.AlarmRuleInput{Target: "pressure", Level: "Maintenance", Direction: "below", Threshold: -1000})
	c, err := a.admin.UpdateCalibrationsWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, gen.CalibrationsUpdate{
		"G": {{From: "2024-01-01T00:00:00Z", Value: 1}},
	})
	if err != nil || c.StatusCode() != 200 {
		t.Fatalf("update calibrations: %v %s", err, c.Body)
	}
	if got := len(a.alarms(t)); got != 2 {
		t.Errorf("%d alarms after the calibration, want 2 (digits at Alarm, pressure at Maintenance)", got)
	}

	// Deleting the rules de-escalates, then clears their targets: the
	// Alert rule holds at 12500 too.
	for _, level := range []string{"Alarm", "Maintenance", "Alert"} {
		d, err := a.admin.DeleteAlarmRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, a.rules[level])
		if err != nil || d.StatusCode() != 204 {
			t.Fatalf("delete rule: %v %s", err, d.Body)
		}
	}
	if got := len(a.alarms(t)); got != 0 {
		t.Errorf("%d alarms after deleting the rules, want 0", got)
	}
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}),
		"triggered Alert", "cleared Alert", "triggered Alarm", "triggered Maintenance",
		"de-escalated Alert", "cleared Maintenance", "cleared Alert")
}

// TestAlarmLevels: the default set, edits, and the refusals that keep
// rules meaningful.
func TestAlarmLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Levels")
	ctx := t.Context()
	res, err := e.client(a.tn.tokens[store.Viewer]).ListAlarmLevelsWithResponse(ctx, a.tn.orgID, a.tn.projectID)
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

	created, err := a.admin.CreateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, gen.AlarmLevelCreate{Name: "Evacuate", Rank: 5, Colour: "#9b51e0"})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create level: %v %s", err, created.Body)
	}
	dup, _ := a.admin.CreateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, gen.AlarmLevelCreate{Name: "Evacuate", Rank: 6, Colour: "#9b51e0"})
	wantError(t, dup.StatusCode(), dup.Body, 409, "conflict")

	renamed, err := a.admin.UpdateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, byName["Alert"], gen.AlarmLevelUpdate{Name: ptr("Watch")})
	if err != nil || renamed.JSON200 == nil || renamed.JSON200.Name != "Watch" {
		t.Fatalf("rename a level in use: %v %s", err, renamed.Body)
	}
	reranked, _ := a.admin.UpdateAlarmLevelWithResponse(ctx, a.tn.orgID, a.tn.projectID, byName["Alert"], gen.AlarmLevelUpdate{Rank: ptr(9)})
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
	levels, err := e.db.ListAlarmLevels(t.Context(), tn.orgID, tn.projectID)
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
			gen.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: math.MaxFloat64})
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
	overdue := func() *gen.OverdueRule {
		t.Helper()
		res, err := e.client(a.tn.tokens[store.Viewer]).ListAlarmRulesWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list alarm rules: %v %s", err, res.Body)
		}
		return res.JSON200.Overdue
	}
	if got := overdue(); got != nil {
		t.Errorf("overdue rule %+v before one is set, want none", got)
	}
	res, err := a.admin.SetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, gen.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 3600})
	if err != nil || res.JSON200 == nil || res.JSON200.Level != "Maintenance" || res.JSON200.AfterSeconds != 3600 {
		t.Fatalf("set overdue rule: %v %s", err, res.Body)
	}
	if got := overdue(); got == nil || got.Level != "Maintenance" || got.AfterSeconds != 3600 {
		t.Errorf("listed overdue rule %+v, want Maintenance after 3600 s", got)
	}
	a.post(t, 0, 2000) // 2024-05-01T12:00, long ago

	check := func(now time.Time, wantRaised, wantCleared int64) {
		t.Helper()
		raised, cleared, err := e.db.CheckOverdue(ctx, now)
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
	a.rule(t, gen.AlarmRuleInput{Target: "freq", Level: "Action", Direction: "below", Threshold: 1})
	a.post(t, 30, 2000) // 12:30, reported late: within the hour of 13:05
	check(time.Date(2024, 5, 1, 13, 5, 0, 0, time.UTC), 0, 1)
	wantEvents(t, a.events(t, gen.ListAlarmEventsParams{}), "triggered Maintenance", "cleared Maintenance")

	del, err := a.admin.DeleteOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID)
	if err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete overdue rule: %v %s", err, del.Body)
	}
	get, _ := a.admin.GetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID)
	wantError(t, get.StatusCode(), get.Body, 404, "not_found")
	if got := overdue(); got != nil {
		t.Errorf("overdue rule %+v listed after its delete, want none", got)
	}
	short, _ := a.admin.SetOverdueRuleWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, gen.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 10})
	wantError(t, short.StatusCode(), short.Body, 400, "invalid")
}
