package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// TestAlarmPersistence: a rule with persistence 3 waits for three
// consecutive readings beyond its threshold.
func TestAlarmPersistence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Persistence")
	a.rule(t, client.AlarmRuleInput{Target: "freq", Level: "Action", Direction: "below", Threshold: 1000, Persistence: ptr(3)})
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
	res, err := a.editor.ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &client.ListAlarmEventsParams{})
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
	res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, []client.ReadingInput{
		{Datetime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), Inputs: client.Values{a.freq: 3000}},
		{Datetime: time.Date(2024, 5, 1, 12, 1, 0, 0, time.UTC), Inputs: client.Values{"999999999": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.StatusCode(), res.Body, 400, "invalid")
	if got := a.level(t); got != "" {
		t.Errorf("level %q after a refused batch, want none", got)
	}
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}))
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
	ack := func() client.Alarm {
		t.Helper()
		list := a.alarms(t)
		if len(list) != 1 {
			t.Fatalf("%d alarms, want 1", len(list))
		}
		res, err := a.editor.AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, list[0].Id, client.AlarmAcknowledge{})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("acknowledge: %v %s", err, res.Body)
		}
		return *res.JSON200
	}
	batch := func(freqs ...float64) {
		t.Helper()
		var readings []client.ReadingInput
		for _, f := range freqs {
			readings = append(readings, client.ReadingInput{Datetime: time.Date(2024, 5, 1, 12, len(readings)+a.minute, 0, 0, time.UTC), Inputs: client.Values{a.freq: f}})
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
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}),
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
			&client.DeleteReadingsParams{DatetimeGte: minute(step.from), DatetimeLt: minute(step.to)})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("delete 12:%02d to 12:%02d: %v %s", step.from, step.to, err, res.Body)
		}
		if got := a.level(t); got != step.wantLevel {
			t.Errorf("level after deleting 12:%02d to 12:%02d %q, want %q", step.from, step.to, got, step.wantLevel)
		}
	}
	a.post(t, 5, 2500) // the rules start from rest again
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}),
		"triggered Alert", "escalated Alarm", "de-escalated Alert", "cleared Alert", "triggered Alert")

	res, err := a.editor.ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &client.ListAlarmEventsParams{})
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
		client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 7000})
	if err != nil || res.JSON200 == nil || res.JSON200.Active {
		t.Fatalf("update rule: %v %s, want an inactive rule", err, res.Body)
	}
	if got := a.level(t); got != "" {
		t.Errorf("level %q after raising the threshold, want none", got)
	}

	// A formula that doubles digits escalates to Alarm (12500).
	f, err := a.admin.UpdateFormulasWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, client.FormulasUpdate{
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
	a.rule(t, client.AlarmRuleInput{Target: "pressure", Level: "Maintenance", Direction: "below", Threshold: -1000})
	c, err := a.admin.UpdateCalibrationsWithResponse(ctx, a.tn.orgID, a.tn.projectID, a.tn.instanceID, client.CalibrationsUpdate{
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
	wantEvents(t, a.events(t, client.ListAlarmEventsParams{}),
		"triggered Alert", "cleared Alert", "triggered Alarm", "triggered Maintenance",
		"de-escalated Alert", "cleared Maintenance", "cleared Alert")
}

// storm is n readings a second apart from 13:00, alternating 2000 Hz
// (4000 digits: at rest) and 3000 Hz (9000: Alarm), from 2000.
func (a *alarmSite) storm(n int) []client.ReadingInput {
	readings := make([]client.ReadingInput, n)
	for i := range readings {
		freq := 2000.0
		if i%2 == 1 {
			freq = 3000
		}
		readings[i] = client.ReadingInput{Datetime: time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second), Inputs: client.Values{a.freq: freq}}
	}
	return readings
}

// allEvents is the project's history, up to 1,000 events.
func (a *alarmSite) allEvents(t *testing.T) []client.AlarmEvent {
	t.Helper()
	res, err := a.editor.ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &client.ListAlarmEventsParams{Limit: ptr(1000)})
	if err != nil || res.JSON200 == nil || res.JSON200.NextCursor != nil {
		t.Fatalf("list events: %v %s, want them on one page", err, res.Body)
	}
	return res.JSON200.Items
}

// changes counts the changes of level the events stand for: each one and
// those it coalesced.
func changes(events []client.AlarmEvent) int {
	n := 0
	for _, ev := range events {
		if ev.Kind != "acknowledged" {
			n += 1 + ev.Coalesced
		}
	}
	return n
}

// TestAlarmStorm: 10,000 readings alternating across the thresholds in one
// POST change the level 10,000 times and raise three events: the first
// change, the first to the highest level, the last. The current alarm is
// exactly what the readings make, the same as when they come in a hundred
// POSTs (each of which raises its own three), and the events still account
// for every change.
func TestAlarmStorm(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.outbox.AllowPrivate = true
	e := newEnvWith(t, cfg, faults{})
	one, hundred := newAlarmSite(t, e, "Storm in one"), newAlarmSite(t, e, "Storm in a hundred")
	for _, a := range []*alarmSite{one, hundred} {
		a.post(t, 0, 2500) // 6250: Alert, acknowledged before the storm
		if res, err := a.editor.AcknowledgeAlarmWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.alarms(t)[0].Id, client.AlarmAcknowledge{}); err != nil || res.JSON200 == nil {
			t.Fatalf("acknowledge: %v %s", err, res.Body)
		}
	}
	acknowledged := one.alarms(t)[0]
	hook := newReceiver(t, http.StatusNoContent)
	one.webhook(t, hook.URL+"/hook")

	storm := one.storm(10000)
	res, err := one.editor.PostReadingsWithResponse(t.Context(), one.tn.orgID, one.tn.projectID, one.tn.instanceID, nil, storm)
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("POST the storm: %v %s", err, res.Body)
	}
	for batch := range slices.Chunk(hundred.storm(10000), 100) {
		res, err := hundred.editor.PostReadingsWithResponse(t.Context(), hundred.tn.orgID, hundred.tn.projectID, hundred.tn.instanceID, nil, batch)
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("POST a hundredth of the storm: %v %s", err, res.Body)
		}
	}

	events := one.allEvents(t)
	var got []string
	for _, ev := range events {
		got = append(got, fmt.Sprintf("%s %s %d", ev.Kind, ev.Level, ev.Coalesced))
	}
	wantEvents(t, got, "triggered Alert 0", "acknowledged Alert 0", "cleared Alert 0", "triggered Alarm 0", "triggered Alarm 9997")
	if last := events[len(events)-1]; deref(last.ReadingDatetime) != "2024-05-01T15:46:39.000Z" || deref(last.Value) != 9000 {
		t.Errorf("the last event %+v, want the last reading's, 15:46:39 at 9000", last)
	}
	if got, want := changes(events), 1+10000; got != want {
		t.Errorf("the events stand for %d changes, want %d", got, want)
	}
	if got, want := len(hundred.allEvents(t)), 2+100*3; got != want {
		t.Errorf("a hundred POSTs of the storm raised %d events, want %d: three each", got, want)
	}
	if got, want := changes(hundred.allEvents(t)), 1+10000; got != want {
		t.Errorf("the events of a hundred POSTs stand for %d changes, want %d", got, want)
	}

	// The state is the readings', however they came: the alarm came to
	// rest on the way, so it is a new one, and it rose, so it asks for an
	// acknowledgement.
	alarm, split := one.alarms(t), hundred.alarms(t)
	if len(alarm) != 1 || len(split) != 1 {
		t.Fatalf("alarms %+v and %+v, want one each", alarm, split)
	}
	if a := alarm[0]; a.Level != "Alarm" || a.Acknowledged || a.Id == acknowledged.Id || a.Since != "2024-05-01T15:46:39.000Z" || a.Value != 9000 {
		t.Errorf("after the storm: %+v, want a new alarm at Alarm since 15:46:39, 9000, to acknowledge", a)
	}
	if a, b := alarm[0], split[0]; a.Level != b.Level || a.Since != b.Since || a.Value != b.Value || a.Acknowledged != b.Acknowledged {
		t.Errorf("after the storm in one POST: %+v; in a hundred: %+v; want the same", a, b)
	}

	// Late readings raise one event per target and write: the first at
	// the highest level their values reach; the alarm stays.
	late := one.storm(1000)
	for i := range late {
		late[i].Datetime = late[i].Datetime.Add(-time.Hour)
	}
	res, err = one.editor.PostReadingsWithResponse(t.Context(), one.tn.orgID, one.tn.projectID, one.tn.instanceID, nil, late)
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("POST late readings: %v %s", err, res.Body)
	}
	events = one.allEvents(t)
	if ev := events[len(events)-1]; len(events) != 6 || ev.Kind != "late" || ev.Level != "Alarm" || ev.Coalesced != 499 || deref(ev.ReadingDatetime) != "2024-05-01T12:00:01.000Z" {
		t.Errorf("after 500 late exceedances: %d events, the last %+v; want one more, late at Alarm, 12:00:01, coalescing 499", len(events), ev)
	}
	if got := one.alarms(t)[0]; got.Since != alarm[0].Since || got.Acknowledged {
		t.Errorf("after late readings: %+v, want the alarm as it was", got)
	}

	// A file is one write, however many chunks the store evaluates it in.
	file := newAlarmSite(t, e, "Storm in a file")
	var csv strings.Builder
	csv.WriteString("datetime,freq\n")
	for _, r := range file.storm(12000) {
		fmt.Fprintf(&csv, "%s,%v\n", r.Datetime.Format(time.RFC3339), r.Inputs[file.freq])
	}
	fileImport(t, postFile(t, file.editor, file.tn, file.tn.instanceID, client.PostReadingsParams{}, csv.String()))
	got = nil
	for _, ev := range file.allEvents(t) {
		got = append(got, fmt.Sprintf("%s %s %d", ev.Kind, ev.Level, ev.Coalesced))
	}
	wantEvents(t, got, "triggered Alarm 0", "triggered Alarm 11997")

	// The receiver gets the events as they are listed, coalesced included.
	if err := e.outbox.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, hook.got(t), "cleared Alert", "triggered Alarm", "triggered Alarm", "late Alarm")
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if n := len(hook.events); n != 4 || hook.events[2].Coalesced != 9997 || hook.events[3].Coalesced != 499 {
		t.Errorf("the receiver got %+v, want the storm's last event coalescing 9997 changes, the late one 499", hook.events)
	}
}
