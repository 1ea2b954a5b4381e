package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func minute(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }

func minuteText(m int) string { return minute(m).Format("2006-01-02T15:04:05.000Z") }

// readingsOf lists the piezometer's readings of the first hour of
// 2024-05-01 12:00 with params, as the client decodes them.
func (a *alarmSite) readingsOf(t *testing.T, params client.ListReadingsParams) []client.Reading {
	t.Helper()
	params.DatetimeGte, params.DatetimeLt = ptr("2024-05-01T12:00:00Z"), ptr("2024-05-01T13:00:00Z")
	res, err := a.e.client(a.tn.tokens[store.Viewer]).ListReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, &params)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list readings: %v %s", err, res.Body)
	}
	return *res.JSON200
}

// hourly aggregates the piezometer's freq over 12:00 to 13:00 in one
// bucket, and says where the answer came from.
func (a *alarmSite) hourly(t *testing.T) (count int64, maxFreq float64, rollups string) {
	t.Helper()
	res, err := a.e.client(a.tn.tokens[store.Viewer]).AggregateReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
		&client.AggregateReadingsParams{DatetimeGte: "2024-05-01T12:00:00Z", DatetimeLt: "2024-05-01T13:00:00Z", Interval: ptr("1h"), Fn: ptr("max")})
	if err != nil || res.JSON200 == nil || len(*res.JSON200) != 1 {
		t.Fatalf("aggregate: %v %s", err, res.Body)
	}
	b := (*res.JSON200)[0]
	return b.Count, deref(b.Inputs[a.freq]["max"]), res.HTTPResponse.Header.Get("X-Rollups")
}

func (a *alarmSite) setFlag(t *testing.T, in client.FlagInput) client.FlagResult {
	t.Helper()
	res, err := a.editor.SetFlagWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, in)
	if err != nil || res.JSON201 == nil {
		t.Fatalf("set flag %+v: %v %s", in, err, res.Body)
	}
	return *res.JSON201
}

func (a *alarmSite) latestFreq(t *testing.T) (string, float64) {
	t.Helper()
	res, err := a.e.client(a.tn.tokens[store.Viewer]).LatestReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, nil)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("latest: %v %s", err, res.Body)
	}
	for _, l := range res.JSON200.Items {
		if l.SensorId == a.tn.instanceID && l.Reading != nil {
			return l.Reading.Datetime, l.Reading.Inputs[a.freq]
		}
	}
	return "", 0
}

// TestFlagsChangeEveryRead: rejecting a reading takes it out of the
// readings page, the aggregate (which then reads the readings, not the
// stale rollups), the latest value and the alarm state, at once;
// flags=true lists it with its flag; a suspect value stays, marked;
// clearing the flag brings it all back. The stored values never change.
func TestFlagsChangeEveryRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Flags")
	a.post(t, 0, 2000)
	a.post(t, 1, 2000)
	a.post(t, 2, 3000) // digits 9000: Alarm
	if _, err := e.core.RecomputeRollups(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := a.level(t); got != "Alarm" {
		t.Fatalf("level %q before the flag, want Alarm", got)
	}
	if n, max, use := a.hourly(t); n != 3 || max != 3000 || use != "used" {
		t.Fatalf("aggregate before the flag: count %d, max %v, X-Rollups %q; want 3, 3000, used", n, max, use)
	}

	got := a.setFlag(t, client.FlagInput{Flag: client.FlagInputFlagRejected, From: minuteText(2), Reason: "Logger swapped; spike"})
	if len(got.Flags) != 1 || got.Readings != 1 || got.Flags[0].SetBy == nil || *got.Flags[0].SetBy != a.tn.userIDs[store.Editor] {
		t.Fatalf("set flag: %+v, want one flag set by the editor over 1 reading", got)
	}
	if got := a.level(t); got != "" {
		t.Errorf("level %q after rejecting the reading that raised it, want none: the alarm is rechecked at once", got)
	}
	if got := a.readingsOf(t, client.ListReadingsParams{}); len(got) != 2 {
		t.Errorf("page after rejecting a reading: %d readings, want 2", len(got))
	}
	all := a.readingsOf(t, client.ListReadingsParams{Flags: ptr(true)})
	if len(all) != 3 || all[2].Flags == nil || (*all[2].Flags)["*"] != client.ReadingFlagsRejected || all[2].Inputs[a.freq] != 3000 {
		t.Errorf("flags=true: %+v, want the 3 readings, the last rejected whole with its value kept", all)
	}
	if n, max, use := a.hourly(t); n != 2 || max != 2000 || use != "none" {
		t.Errorf("aggregate after the flag: count %d, max %v, X-Rollups %q; want 2, 2000, none", n, max, use)
	}
	if at, v := a.latestFreq(t); at != minuteText(1) || v != 2000 {
		t.Errorf("latest after the flag: %s %v, want the reading at minute 1", at, v)
	}
	status, err := a.e.client(a.tn.tokens[store.Viewer]).ProjectStatusWithResponse(t.Context(), a.tn.orgID, a.tn.projectID,
		&client.ProjectStatusParams{SensorId: &[]int64{a.tn.instanceID}})
	if err != nil || status.JSON200 == nil || len(status.JSON200.Items) != 1 || status.JSON200.Items[0].Reading == nil ||
		status.JSON200.Items[0].Reading.Datetime != minuteText(1) {
		t.Errorf("status after the flag: %v %s, want the reading at minute 1", err, status.Body)
	}

	// A suspect value stays in every read, marked.
	a.setFlag(t, client.FlagInput{Flag: client.FlagInputFlagSuspect, From: minuteText(1), Input: ptr("freq"), Reason: "Looks high"})
	page := a.readingsOf(t, client.ListReadingsParams{})
	if len(page) != 2 || page[1].Flags == nil || (*page[1].Flags)[a.freq] != client.ReadingFlagsSuspect || page[1].Inputs[a.freq] != 2000 {
		t.Errorf("page with a suspect value: %+v, want it kept and marked suspect", page)
	}
	if n, _, _ := a.hourly(t); n != 2 {
		t.Errorf("aggregate with a suspect value: count %d, want 2", n)
	}

	res, err := a.editor.ClearFlagsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
		client.FlagClearInput{From: minuteText(0), To: ptr(minuteText(59)), Reason: "Reviewed: the values are real"})
	if err != nil || res.JSON200 == nil || len(res.JSON200.Flags) != 2 {
		t.Fatalf("clear flags: %v %s, want both cleared", err, res.Body)
	}
	if got := a.level(t); got != "Alarm" {
		t.Errorf("level %q after clearing the flag, want Alarm again", got)
	}
	if n, max, _ := a.hourly(t); n != 3 || max != 3000 {
		t.Errorf("aggregate after clearing: count %d, max %v, want 3, 3000", n, max)
	}
	if at, _ := a.latestFreq(t); at != minuteText(2) {
		t.Errorf("latest after clearing: %s, want minute 2", at)
	}
	listed, err := a.editor.ListFlagsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, &client.ListFlagsParams{Cleared: ptr(true)})
	if err != nil || listed.JSON200 == nil || len(listed.JSON200.Items) != 2 || listed.JSON200.Items[0].ClearedAt == nil {
		t.Errorf("flags with cleared=true: %v %s, want the two, cleared", err, listed.Body)
	}
}

// TestFlagClearKeepsTheRestOfARange: clearing one reading of a flagged
// range leaves the rest of the range flagged.
func TestFlagClearKeepsTheRestOfARange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "FlagRange")
	for m := range 5 {
		a.post(t, m, 2000)
	}
	a.setFlag(t, client.FlagInput{Flag: client.FlagInputFlagRejected, From: minuteText(0), To: ptr(minuteText(4)), Reason: "Logger fault"})
	if got := a.readingsOf(t, client.ListReadingsParams{}); len(got) != 0 {
		t.Fatalf("page after rejecting the range: %d readings, want 0", len(got))
	}
	res, err := a.editor.ClearFlagsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
		client.FlagClearInput{From: minuteText(2), Reason: "This one is real"})
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("clear: %v %s", err, res.Body)
	}
	got := a.readingsOf(t, client.ListReadingsParams{})
	if len(got) != 1 || got[0].Datetime != minuteText(2) {
		t.Errorf("page after clearing minute 2: %+v, want minute 2 alone", got)
	}
}

// TestValidityChecks: each check flags what it should, a spike once its
// next neighbour is known, a late reading against its real neighbours
// (flagging the neighbour it makes a spike of), and every reading is
// stored: a check never refuses.
func TestValidityChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Checks")
	admin, editor := e.client(tn.tokens[store.Admin]), e.client(tn.tokens[store.Editor])
	freq := strconv.FormatInt(e.freqID(t, tn), 10)
	checks := []client.Check{
		{Target: "freq", Kind: client.CheckKindRange, Min: ptr(500.0), Max: ptr(5000.0), Flag: ptr(client.CheckFlagRejected)},
		{Target: "freq", Kind: client.CheckKindSpike, Bound: ptr(500.0)},
		{Target: "freq", Kind: client.CheckKindRate, Bound: ptr(1000.0), Per: ptr(60)},
		{Target: "freq", Kind: client.CheckKindStuck, Count: ptr(3)},
	}
	put, err := admin.UpdateChecksWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, client.CheckList{Checks: checks})
	if err != nil || put.JSON200 == nil || len(put.JSON200.Checks) != 4 {
		t.Fatalf("put checks: %v %s", err, put.Body)
	}
	// Each posted alone, in this order: the last one late.
	posts := []struct {
		m    int
		freq float64
	}{{0, 2000}, {1, 2000}, {2, 2000}, {3, 2100}, {4, 2900}, {5, 2150}, {6, 2200}, {7, 3300}, {8, 3400}, {9, 6000}, {10, 2000}, {12, 2000}, {11, 4000}}
	for _, p := range posts {
		res, err := editor.PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, nil,
			[]client.ReadingInput{{Datetime: minute(p.m), Inputs: client.Values{freq: p.freq}}})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("post minute %d: %v %s; a check must never refuse", p.m, err, res.Body)
		}
	}
	flags, err := editor.ListFlagsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, &client.ListFlagsParams{})
	if err != nil || flags.JSON200 == nil {
		t.Fatalf("list flags: %v %s", err, flags.Body)
	}
	var got []string
	for _, f := range flags.JSON200.Items {
		if f.Check == nil || f.SetBy != nil || deref(f.Input) != freq || f.Reason == "" {
			t.Errorf("flag %+v: want a check's, on freq, with a reason", f)
		}
		got = append(got, fmt.Sprintf("%s %s %s", f.From[14:16], *f.Check, f.Flag))
	}
	slices.Sort(got)
	want := []string{
		"02 stuck suspect",
		"04 spike suspect", // known when minute 5 came
		"07 rate suspect",
		"09 range rejected", "09 rate suspect", "09 spike suspect", // the spike known at minute 10
		"10 rate suspect", "10 spike suspect", // the spike known when the late minute 11 came
		"11 rate suspect", "11 spike suspect",
	}
	if !slices.Equal(got, want) {
		t.Errorf("flags the checks set:\n got %q\nwant %q", got, want)
	}
	res, err := e.client(tn.tokens[store.Viewer]).ListReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, &client.ListReadingsParams{Flags: ptr(true)})
	if err != nil || res.JSON200 == nil || len(*res.JSON200) != len(posts) {
		t.Fatalf("readings: %v, %d of %d stored", err, len(deref(res.JSON200)), len(posts))
	}
}

// TestCheckedValueStepsNoRule: a value a check flags does not trigger a
// threshold rule on it, nor on the outputs computed from it.
func TestCheckedValueStepsNoRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "CheckedRule")
	put, err := a.admin.UpdateChecksWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
		client.CheckList{Checks: []client.Check{{Target: "freq", Kind: client.CheckKindRange, Max: ptr(2500.0)}}})
	if err != nil || put.JSON200 == nil {
		t.Fatalf("put checks: %v %s", err, put.Body)
	}
	a.post(t, 0, 2600) // digits 6760, past Alert, but freq is suspect
	if got := a.level(t); got != "" {
		t.Errorf("level %q after a value a check flagged, want none", got)
	}
	a.post(t, 1, 2400) // digits 5760: in range, past Alert
	if got := a.level(t); got != "Alert" {
		t.Errorf("level %q after a value in range past Alert, want Alert", got)
	}
}

// TestAuditTrail: the project's trail lists each kind of change under it,
// with who made it and what it was before and after; the organization's
// adds its own kinds.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Audit")
	ctx := t.Context()
	org, proj, sensor := a.tn.orgID, a.tn.projectID, a.tn.instanceID
	owner := e.owner(a.tn)
	a.post(t, 0, 2000)
	a.post(t, 0, 2100) // an overwrite
	must := func(what string, res interface{ StatusCode() int }, err error) {
		t.Helper()
		if err != nil || res.StatusCode() >= 300 {
			t.Fatalf("%s: %v %d", what, err, res.StatusCode())
		}
	}
	r1, err := a.admin.UpdateFormulasWithResponse(ctx, org, proj, sensor, client.UpdateFormulasJSONRequestBody{Outputs: &map[string]string{"pressure": "G * (R0 - digits) + 1"}})
	must("formulas", r1, err)
	r2, err := a.admin.UpdateSensorWithResponse(ctx, org, proj, sensor, client.SensorUpdate{Constants: &client.ConstantValues{"G": 0.2}})
	must("constants", r2, err)
	r3, err := a.admin.UpdateCalibrationsWithResponse(ctx, org, proj, sensor, client.UpdateCalibrationsJSONRequestBody{"G": {{From: "2024-06-01T00:00:00Z", Value: 0.3}}})
	must("calibrations", r3, err)
	r4, err := a.admin.UpdateBaselinesWithResponse(ctx, org, proj, sensor, client.UpdateBaselinesJSONRequestBody{{Reading: ptr("2024-05-01T12:00:00Z")}})
	must("baselines", r4, err)
	r5, err := a.admin.UpdateLinksWithResponse(ctx, org, proj, sensor, client.UpdateLinksJSONRequestBody{"temp": {SensorId: e.newPiezometer(t, a.tn, proj, "Source"), Key: "temp"}})
	must("links", r5, err)
	a.rule(t, client.AlarmRuleInput{Target: "pressure", Level: "Action", Direction: "below", Threshold: -1000})
	a.setFlag(t, client.FlagInput{Flag: client.FlagInputFlagSuspect, From: minuteText(0), Reason: "Check"})
	r6, err := a.admin.UpdateChecksWithResponse(ctx, org, proj, sensor, client.CheckList{Checks: []client.Check{{Target: "freq", Kind: client.CheckKindStuck, Count: ptr(5)}}})
	must("checks", r6, err)
	r7, err := a.admin.DeleteReadingsWithResponse(ctx, org, proj, sensor, &client.DeleteReadingsParams{DatetimeGte: "2024-05-01T00:00:00Z", DatetimeLt: "2024-05-02T00:00:00Z"})
	must("delete", r7, err)
	r8, err := a.admin.CreateAlarmLevelWithResponse(ctx, org, proj, client.AlarmLevelCreate{Name: "Review", Rank: 7, Colour: "#123456"})
	must("level", r8, err)
	r9, err := a.admin.CreateWebhookWithResponse(ctx, org, proj, client.WebhookCreate{Url: "https://example.com/audit-hook", Secret: "a webhook secret"})
	must("webhook", r9, err)
	r10, err := owner.UpdateMemberWithResponse(ctx, org, a.tn.userIDs[store.Viewer], client.MemberUpdate{Role: client.Editor})
	must("member", r10, err)
	r11, err := owner.CreateInvitationWithResponse(ctx, org, client.InvitationCreate{Email: "new@audit.example.com", Role: client.Viewer})
	must("invitation", r11, err)
	r12, err := owner.CreateTokenWithResponse(ctx, client.TokenCreate{Name: "ci"})
	must("token", r12, err)

	kinds := func(res *client.ListProjectAuditResponse, err error) map[string]bool {
		t.Helper()
		if err != nil || res.JSON200 == nil {
			t.Fatalf("audit: %v %s", err, res.Body)
		}
		out := map[string]bool{}
		for _, e := range res.JSON200.Items {
			out[e.Kind] = true
			if e.Actor == nil {
				t.Errorf("entry %+v has no actor", e)
			}
		}
		return out
	}
	viewer := e.client(a.tn.tokens[store.Viewer])
	got := kinds(viewer.ListProjectAuditWithResponse(ctx, org, proj, &client.ListProjectAuditParams{Limit: ptr(1000)}))
	for _, k := range []string{"overwrite", "formulas", "constants", "calibrations", "baselines", "links", "rule", "flag", "checks", "delete", "level", "webhook"} {
		if !got[k] {
			t.Errorf("the project's trail has no %q entry; it has %v", k, got)
		}
	}
	res, err := owner.ListOrgAuditWithResponse(ctx, org, &client.ListOrgAuditParams{Limit: ptr(1000)})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("org audit: %v %s", err, res.Body)
	}
	orgKinds := map[string]bool{}
	for _, e := range res.JSON200.Items {
		orgKinds[e.Kind] = true
	}
	for _, k := range []string{"member", "invitation", "token", "formulas", "flag"} {
		if !orgKinds[k] {
			t.Errorf("the organization's trail has no %q entry; it has %v", k, orgKinds)
		}
	}
	// A filter by kind and sensor, and a page at a time.
	page, err := viewer.ListProjectAuditWithResponse(ctx, org, proj, &client.ListProjectAuditParams{SensorId: &sensor, Kind: &client.AuditKind{"formulas"}, Limit: ptr(1)})
	if err != nil || page.JSON200 == nil || len(page.JSON200.Items) != 1 || page.JSON200.Items[0].Kind != "formulas" {
		t.Fatalf("audit of kind formulas: %v %s", err, page.Body)
	}
	var before, after struct {
		Outputs []struct{ Key, Formula string }
	}
	entry := page.JSON200.Items[0]
	b, _ := json.Marshal(entry.Before)
	_ = json.Unmarshal(b, &before)
	b, _ = json.Marshal(entry.After)
	_ = json.Unmarshal(b, &after)
	if len(after.Outputs) != 2 || after.Outputs[1].Formula != "G * (R0 - digits) + 1" || before.Outputs[1].Formula != "G * (R0 - digits)" {
		t.Errorf("formula entry before %+v after %+v, want the formula before and after", before, after)
	}
	// A flag's entry names its fields as the API's Flag does.
	flags, err := viewer.ListProjectAuditWithResponse(ctx, org, proj, &client.ListProjectAuditParams{Kind: &client.AuditKind{"flag"}, Limit: ptr(1)})
	if err != nil || flags.JSON200 == nil || len(flags.JSON200.Items) != 1 {
		t.Fatalf("audit of kind flag: %v %s", err, flags.Body)
	}
	var flag map[string]any
	b, _ = json.Marshal(flags.JSON200.Items[0].After)
	_ = json.Unmarshal(b, &flag)
	for _, name := range []string{"id", "sensor_id", "flag", "from", "to", "reason", "set_by", "set_at"} {
		if _, ok := flag[name]; !ok {
			t.Errorf("the flag's audit entry %s has no %q", b, name)
		}
	}
	levels, err := viewer.ListProjectAuditWithResponse(ctx, org, proj, &client.ListProjectAuditParams{Kind: &client.AuditKind{"level"}, Limit: ptr(1)})
	if err != nil || levels.JSON200 == nil || len(levels.JSON200.Items) != 1 {
		t.Fatalf("audit of kind level: %v %s", err, levels.Body)
	}
	var level map[string]any
	b, _ = json.Marshal(levels.JSON200.Items[0].After)
	_ = json.Unmarshal(b, &level)
	for _, name := range []string{"id", "project_id", "name", "rank", "colour"} {
		if _, ok := level[name]; !ok {
			t.Errorf("the level's audit entry %s has no %q", b, name)
		}
	}
	// An invitation's entry names its fields as the API's Invitation does,
	// and the first token of the account it creates is in the trail too.
	accepted, err := e.client("").AcceptInvitationWithResponse(ctx, client.InvitationAccept{Code: r11.JSON201.Code, Name: ptr("Newcomer")})
	if err != nil || accepted.JSON201 == nil {
		t.Fatalf("accept invitation: %v %s", err, accepted.Body)
	}
	invitations, err := owner.ListOrgAuditWithResponse(ctx, org, &client.ListOrgAuditParams{Kind: &client.AuditKind{"invitation", "token"}, Limit: ptr(1000)})
	if err != nil || invitations.JSON200 == nil {
		t.Fatalf("org audit of invitations and tokens: %v %s", err, invitations.Body)
	}
	var createdInvitation, firstToken bool
	for _, entry := range invitations.JSON200.Items {
		var after map[string]any
		b, _ := json.Marshal(entry.After)
		_ = json.Unmarshal(b, &after)
		switch {
		case entry.Kind == "invitation" && entry.Action == "create":
			createdInvitation = true
			for _, name := range []string{"id", "org_id", "email", "role", "state", "created_at", "expires_at"} {
				if _, ok := after[name]; !ok {
					t.Errorf("the invitation's audit entry %s has no %q", b, name)
				}
			}
		case entry.Kind == "token" && entry.Action == "create" && after["user_id"] == float64(accepted.JSON201.User.Id):
			firstToken = true
			if entry.Actor == nil || *entry.Actor != accepted.JSON201.User.Id {
				t.Errorf("the first token's entry has actor %v, want the new user %d", entry.Actor, accepted.JSON201.User.Id)
			}
		}
	}
	if !createdInvitation || !firstToken {
		t.Errorf("the organization's trail has the invitation's creation: %t, the new member's first token: %t", createdInvitation, firstToken)
	}
	if res, _ := owner.ListOrgAuditWithResponse(ctx, org, nil); res == nil || res.StatusCode() != http.StatusOK {
		t.Errorf("org audit without params: %v", res)
	}
	if res, _ := e.client(a.tn.tokens[store.Admin]).ListOrgAuditWithResponse(ctx, org, nil); res == nil || res.StatusCode() != http.StatusForbidden {
		t.Errorf("org audit as an admin: %v, want 403", res)
	}
}

// TestAsOfReproducesThePast: a page, an export and an aggregate as of an
// instant before a formula edit, a calibration and a flag are byte for
// byte what they were at that instant.
func TestAsOfReproducesThePast(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "AsOf")
	ctx := t.Context()
	org, proj, sensor := a.tn.orgID, a.tn.projectID, a.tn.instanceID
	for m := range 5 {
		a.post(t, m, 2000+float64(m)*10)
	}
	viewer := e.client(a.tn.tokens[store.Viewer])
	pagePath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d?outputs=true&datetime__gte=2024-05-01T12:00:00Z", org, proj, sensor)
	exportPath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/export?outputs=true&datetime__gte=2024-05-01T12:00:00Z&datetime__lt=2024-05-01T13:00:00Z", org, proj, sensor)
	aggPath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?outputs=true&interval=1h&fn=avg,max&datetime__gte=2024-05-01T12:00:00Z&datetime__lt=2024-05-01T13:00:00Z", org, proj, sensor)
	get := func(path string) string {
		t.Helper()
		res, body := e.do(a.tn.tokens[store.Viewer], http.MethodGet, path, "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
		}
		return string(body)
	}
	then := []string{get(pagePath), get(exportPath), get(aggPath)}
	time.Sleep(2 * time.Millisecond) // the instant lies strictly between the reads and the edits, to the millisecond
	asOf := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	time.Sleep(2 * time.Millisecond)

	r1, err := a.admin.UpdateFormulasWithResponse(ctx, org, proj, sensor, client.UpdateFormulasJSONRequestBody{Outputs: &map[string]string{"pressure": "G * (R0 - digits) * 2"}})
	if err != nil || r1.StatusCode() != http.StatusOK {
		t.Fatalf("formulas: %v %s", err, r1.Body)
	}
	r2, err := a.admin.UpdateCalibrationsWithResponse(ctx, org, proj, sensor, client.UpdateCalibrationsJSONRequestBody{"G": {{From: "2024-05-01T12:02:00Z", Value: 0.5}}})
	if err != nil || r2.StatusCode() != http.StatusOK {
		t.Fatalf("calibrations: %v %s", err, r2.Body)
	}
	a.setFlag(t, client.FlagInput{Flag: client.FlagInputFlagRejected, From: minuteText(1), Reason: "Spike"})
	now := []string{get(pagePath), get(exportPath), get(aggPath)}
	for i, name := range []string{"page", "export", "aggregate"} {
		if now[i] == then[i] {
			t.Fatalf("the %s did not change with the edits: the test proves nothing", name)
		}
		path := []string{pagePath, exportPath, aggPath}[i] + "&as_of=" + asOf
		if got := get(path); got != then[i] {
			t.Errorf("%s as of %s:\n got %s\nwant %s", name, asOf, truncate([]byte(got), 400), truncate([]byte(then[i]), 400))
		}
	}
	if _, err := viewer.ListReadingsWithResponse(ctx, org, proj, sensor, &client.ListReadingsParams{AsOf: ptr("yesterday")}); err != nil {
		t.Fatal(err)
	}
	res, body := e.do(a.tn.tokens[store.Viewer], http.MethodGet, pagePath+"&as_of=yesterday", "", nil)
	wantError(t, res.StatusCode, body, 400, "invalid")
	if !strings.Contains(string(body), "as_of") {
		t.Errorf("a bad as_of: %s, want the parameter named", body)
	}
}

// TestRateRule: a rate rule raises when its target rises faster than its
// threshold over its window, clears when it slows, and a late reading
// whose own window's rate is past the threshold raises a late event
// without changing the state.
func TestRateRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Rate")
	a := &alarmSite{e: e, tn: tn, admin: e.client(tn.tokens[store.Admin]), editor: e.client(tn.tokens[store.Editor]),
		freq: strconv.FormatInt(e.freqID(t, tn), 10), rules: map[string]int64{}}
	// freq rising faster than 100 Hz a minute over the last 10 minutes.
	rule := a.rule(t, client.AlarmRuleInput{Target: "freq", Level: "Alert", Direction: "above", Threshold: 100, Window: ptr(600), Per: ptr(60)})
	if deref(rule.Window) != 600 || deref(rule.Per) != 60 {
		t.Fatalf("rule %+v, want window 600 and per 60", rule)
	}
	steps := []struct {
		m    int
		freq float64
		want string
	}{
		{0, 2000, ""},      // no earlier value in the window: no rate
		{1, 2050, ""},      // 50 a minute
		{2, 2300, "Alert"}, // 300 in 2 minutes: 150 a minute
		{3, 2310, "Alert"}, // 310 in 3: 103
		{4, 2320, ""},      // 320 in 4: 80, cleared
		{30, 2320, ""},     // alone in its window
		{40, 2330, ""},     // 10 in 10 minutes
		{35, 3200, ""},     // late: 880 in 5 minutes from minute 30, 176 a minute
	}
	for _, s := range steps {
		a.post(t, s.m, s.freq)
		if got := a.level(t); got != s.want {
			t.Fatalf("after minute %d: level %q, want %q", s.m, got, s.want)
		}
	}
	want := []string{"triggered Alert", "cleared Alert", "late Alert"}
	if got := a.events(t, client.ListAlarmEventsParams{}); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	// A bad rate rule is refused.
	res, err := a.admin.CreateAlarmRuleWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID,
		client.AlarmRuleInput{Target: "freq", Level: "Alert", Direction: "above", Threshold: 1, Per: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.StatusCode(), res.Body, 400, "invalid")
}
