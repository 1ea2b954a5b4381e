package server_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// testCaps are caps small enough to reach in a test; a tenant starts
// with 1 project, 1 blueprint, 4 members with a live token each, 2 sensors
// and 4 alarm levels.
var testCaps = store.Limits{
	Projects: 3, Blueprints: 3, Members: 7, Invitations: 2, Sensors: 4,
	AlarmLevels: 6, Webhooks: 3, AlarmRules: 3, Tokens: 3, Flags: 3,
}

// create adds the i-th item of a collection through the API and returns
// the answer's status and body.
type create func(t *testing.T, e *env, tn tenant, i int) (int, []byte)

// capCases are the collections clients grow, each with what a tenant
// holds at first and how to add one more.
var capCases = []struct {
	cap    string
	limit  int
	have   int
	create create
}{
	{"projects", testCaps.Projects, 1, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.owner(tn).CreateProjectWithResponse(t.Context(), tn.orgID, client.ProjectCreate{Name: fmt.Sprint("P", i)})
		return answer(t, res, err)
	}},
	{"blueprints", testCaps.Blueprints, 1, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		bp := piezometerWrite()
		bp.Name = fmt.Sprint("B", i)
		res, err := e.client(tn.tokens[store.Admin]).CreateBlueprintWithResponse(t.Context(), tn.orgID, bp)
		return answer(t, res, err)
	}},
	{"members", testCaps.Members, 4, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.owner(tn).AddMemberWithResponse(t.Context(), tn.orgID, client.MemberCreate{Email: email(tn, "member", i), Role: client.Viewer})
		return answer(t, res, err)
	}},
	{"invitations", testCaps.Invitations, 0, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.owner(tn).CreateInvitationWithResponse(t.Context(), tn.orgID, client.InvitationCreate{Email: email(tn, "invited", i), Role: client.Viewer})
		return answer(t, res, err)
	}},
	{"sensors", testCaps.Sensors, 2, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.client(tn.tokens[store.Admin]).CreateSensorWithResponse(t.Context(), tn.orgID, tn.projectID, client.SensorCreate{Name: fmt.Sprint("S", i)})
		return answer(t, res, err)
	}},
	{"alarm_levels", testCaps.AlarmLevels, 4, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.client(tn.tokens[store.Admin]).CreateAlarmLevelWithResponse(t.Context(), tn.orgID, tn.projectID,
			client.AlarmLevelCreate{Name: fmt.Sprint("L", i), Rank: 10 + i%80, Colour: "#123456"})
		return answer(t, res, err)
	}},
	{"webhooks", testCaps.Webhooks, 0, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.client(tn.tokens[store.Admin]).CreateWebhookWithResponse(t.Context(), tn.orgID, tn.projectID,
			client.WebhookCreate{Url: fmt.Sprintf("https://example.com/hook/%d", i), Secret: "a webhook secret"})
		return answer(t, res, err)
	}},
	{"alarm_rules", testCaps.AlarmRules, 0, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.client(tn.tokens[store.Admin]).CreateAlarmRuleWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID,
			client.AlarmRuleInput{Target: "pressure", Level: "Alert", Direction: "above", Threshold: float64(100 + i)})
		return answer(t, res, err)
	}},
	{"flags", testCaps.Flags, 0, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		res, err := e.client(tn.tokens[store.Editor]).SetFlagWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID,
			client.FlagInput{Flag: client.FlagInputFlagRejected, From: at, Reason: fmt.Sprint("flag ", i)})
		return answer(t, res, err)
	}},
	{"tokens", testCaps.Tokens, 1, func(t *testing.T, e *env, tn tenant, i int) (int, []byte) {
		res, err := e.client(tn.tokens[store.Viewer]).CreateTokenWithResponse(t.Context(), client.TokenCreate{Name: fmt.Sprint("T", i)})
		return answer(t, res, err)
	}},
}

// answer is the status and body of a generated client's response; a
// request that got no answer is an error of the test, and status 0.
func answer(t *testing.T, res interface{ StatusCode() int }, err error) (int, []byte) {
	t.Helper()
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	// Every generated response holds its body in a field named Body.
	return res.StatusCode(), reflect.ValueOf(res).Elem().FieldByName("Body").Bytes()
}

func email(tn tenant, what string, i int) openapi_types.Email {
	return openapi_types.Email(fmt.Sprintf("%s-%d-%d@caps.example.com", what, tn.orgID, i))
}

// TestCaps: every collection a client grows takes items up to its cap,
// and refuses the next with 409 naming the cap, adding nothing.
func TestCaps(t *testing.T) {
	t.Parallel()
	e := newEnvLimits(t, defaultConfig(), testCaps, faults{})
	tenants := make([]tenant, len(capCases))
	for i, c := range capCases {
		tenants[i] = e.newTenant("Caps " + c.cap)
	}
	for i, c := range capCases {
		tn := tenants[i]
		t.Run(c.cap, func(t *testing.T) {
			t.Parallel()
			for i := c.have; i < c.limit; i++ {
				if status, body := c.create(t, e, tn, i); status != http.StatusCreated {
					t.Fatalf("item %d of %d: status %d, want 201; body %s", i+1, c.limit, status, body)
				}
			}
			before := e.snapshot(t, tn.orgID)
			status, body := c.create(t, e, tn, c.limit)
			wantCap(t, status, body, c.cap, c.limit)
			if after := e.snapshot(t, tn.orgID); after != before {
				t.Errorf("the refused item changed the organization:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// wantCap checks that an answer is the 409 of a full collection.
func wantCap(t *testing.T, status int, body []byte, name string, limit int) {
	t.Helper()
	got := wantError(t, status, body, http.StatusConflict, "conflict")
	if got.Details == nil || (*got.Details)["cap"] != name || (*got.Details)["limit"] != float64(limit) {
		t.Errorf("details %v, want cap %q and limit %d", deref(got.Details), name, limit)
	}
}

// TestCapsConcurrent: creates sent at once never take a collection past
// its cap: the transaction that adds an item counts under a lock that
// every creator of the collection takes.
func TestCapsConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnvLimits(t, defaultConfig(), testCaps, faults{})
	const attempts = 12
	for _, c := range capCases {
		tn := e.newTenant("Race " + c.cap)
		t.Run(c.cap, func(t *testing.T) {
			var (
				wg       sync.WaitGroup
				statuses [attempts]int
				bodies   [attempts][]byte
			)
			for i := range attempts {
				wg.Go(func() { statuses[i], bodies[i] = c.create(t, e, tn, 100+i) })
			}
			wg.Wait()
			created := 0
			for i, status := range statuses {
				if status == http.StatusCreated {
					created++
				} else {
					wantCap(t, status, bodies[i], c.cap, c.limit)
				}
			}
			if got, want := created, c.limit-c.have; got != want {
				t.Errorf("%d of %d creates at once answered 201, want %d (the cap %d less the %d there); statuses %v",
					got, attempts, want, c.limit, c.have, statuses)
			}
		})
	}
}

// TestMembersCapCountsInvitations: a pending invitation holds a member's
// place, so an organization full of members and invitations refuses both,
// and accepting an invitation then takes it no further.
func TestMembersCapCountsInvitations(t *testing.T) {
	t.Parallel()
	e := newEnvLimits(t, defaultConfig(), testCaps, faults{})
	tn := e.newTenant("Members and invitations")
	owner := e.owner(tn)
	ctx := t.Context()
	// 4 members, 2 added: 6 of 7, then one invitation fills the 7th place.
	for i := range 2 {
		if res, err := owner.AddMemberWithResponse(ctx, tn.orgID, client.MemberCreate{Email: email(tn, "member", i), Role: client.Viewer}); err != nil || res.JSON201 == nil {
			t.Fatalf("add member %d: %v %s", i, err, res.Body)
		}
	}
	inv, err := owner.CreateInvitationWithResponse(ctx, tn.orgID, client.InvitationCreate{Email: email(tn, "invited", 0), Role: client.Viewer})
	if err != nil || inv.JSON201 == nil {
		t.Fatalf("invite: %v %s", err, inv.Body)
	}
	refused, err := owner.CreateInvitationWithResponse(ctx, tn.orgID, client.InvitationCreate{Email: email(tn, "invited", 1), Role: client.Viewer})
	if err != nil {
		t.Fatal(err)
	}
	wantCap(t, refused.StatusCode(), refused.Body, "members", testCaps.Members)
	full, err := owner.AddMemberWithResponse(ctx, tn.orgID, client.MemberCreate{Email: email(tn, "member", 2), Role: client.Viewer})
	if err != nil {
		t.Fatal(err)
	}
	wantCap(t, full.StatusCode(), full.Body, "members", testCaps.Members)

	accepted, err := e.client("").AcceptInvitationWithResponse(ctx, client.InvitationAccept{Code: inv.JSON201.Code, Name: ptr("Invitee")})
	if err != nil || accepted.JSON201 == nil {
		t.Fatalf("accept the invitation of a full organization: %v %s", err, accepted.Body)
	}
	members, err := owner.ListMembersWithResponse(ctx, tn.orgID, &client.ListMembersParams{Limit: ptr(1000)})
	if err != nil || members.JSON200 == nil {
		t.Fatalf("list members: %v %s", err, members.Body)
	}
	if got, want := len(members.JSON200.Items), testCaps.Members; got != want {
		t.Errorf("%d members after the acceptance, want %d", got, want)
	}
	full, err = owner.AddMemberWithResponse(ctx, tn.orgID, client.MemberCreate{Email: email(tn, "member", 3), Role: client.Viewer})
	if err != nil {
		t.Fatal(err)
	}
	wantCap(t, full.StatusCode(), full.Body, "members", testCaps.Members)
}

// TestCapsHistory: revoking a token or an invitation makes room for
// another, and of the revoked ones only the newest (as many as the cap)
// are kept, so that creating and revoking in a loop grows nothing.
func TestCapsHistory(t *testing.T) {
	t.Parallel()
	e := newEnvLimits(t, defaultConfig(), testCaps, faults{})
	tn := e.newTenant("History")
	ctx := t.Context()
	const rounds = 8

	viewer := e.client(tn.tokens[store.Viewer])
	for i := range rounds {
		created, err := viewer.CreateTokenWithResponse(ctx, client.TokenCreate{Name: fmt.Sprint("round ", i)})
		if err != nil || created.JSON201 == nil {
			t.Fatalf("round %d: create token: %v %s", i, err, created.Body)
		}
		if res, err := viewer.RevokeTokenWithResponse(ctx, created.JSON201.Id); err != nil || res.StatusCode() != http.StatusNoContent {
			t.Fatalf("round %d: revoke token: %v %s", i, err, res.Body)
		}
	}
	tokens, err := viewer.ListTokensWithResponse(ctx, &client.ListTokensParams{Limit: ptr(1000)})
	if err != nil || tokens.JSON200 == nil {
		t.Fatalf("list tokens: %v %s", err, tokens.Body)
	}
	var revoked []string
	for _, tok := range tokens.JSON200.Items {
		if tok.RevokedAt != nil {
			revoked = append(revoked, tok.Name)
		}
	}
	// The last round's revoked token comes after the last create's pruning.
	if want := []string{"round 7", "round 6", "round 5", "round 4"}; !slices.Equal(revoked, want) {
		t.Errorf("revoked tokens kept %q, want the newest %q", revoked, want)
	}

	owner := e.owner(tn)
	for i := range rounds {
		created, err := owner.CreateInvitationWithResponse(ctx, tn.orgID, client.InvitationCreate{Email: email(tn, "round", i), Role: client.Viewer})
		if err != nil || created.JSON201 == nil {
			t.Fatalf("round %d: invite: %v %s", i, err, created.Body)
		}
		if res, err := owner.RevokeInvitationWithResponse(ctx, tn.orgID, created.JSON201.Id); err != nil || res.StatusCode() != http.StatusNoContent {
			t.Fatalf("round %d: revoke invitation: %v %s", i, err, res.Body)
		}
	}
	invs, err := owner.ListInvitationsWithResponse(ctx, tn.orgID, &client.ListInvitationsParams{Limit: ptr(1000)})
	if err != nil || invs.JSON200 == nil {
		t.Fatalf("list invitations: %v %s", err, invs.Body)
	}
	if got, want := len(invs.JSON200.Items), testCaps.Invitations+1; got != want {
		t.Errorf("%d invitations kept after %d rounds, want %d", got, rounds, want)
	}
}

// TestListsPage: every list that can outgrow a page pages with limit and
// cursor, and the pages, put together, are the whole list in its order.
func TestListsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	tn := e.newTenant("Pages")
	admin, viewer := e.client(tn.tokens[store.Admin]), e.client(tn.tokens[store.Viewer])

	for i := range 5 {
		res, err := admin.CreateWebhookWithResponse(ctx, tn.orgID, tn.projectID,
			client.WebhookCreate{Url: fmt.Sprintf("https://example.com/%d", i), Secret: "a webhook secret"})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("create webhook: %v %s", err, res.Body)
		}
	}
	for _, rank := range []int{7, 5, 6} {
		res, err := admin.CreateAlarmLevelWithResponse(ctx, tn.orgID, tn.projectID,
			client.AlarmLevelCreate{Name: fmt.Sprint("Rank ", rank), Rank: rank, Colour: "#123456"})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("create level: %v %s", err, res.Body)
		}
	}
	// Three piezometers, each with rules on three targets, created out of
	// target order, and a reading a minute apart that raises them all:
	// alarms of three ranks, several of each rank and since.
	sensors := []int64{tn.instanceID}
	for i := range 2 {
		res, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: fmt.Sprint("PZ", i), BlueprintId: &tn.blueprintID})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("create sensor: %v %s", err, res.Body)
		}
		sensors = append(sensors, res.JSON201.Id)
	}
	for m, sensorID := range sensors {
		for _, r := range []struct{ target, level string }{{"temp", "Alarm"}, {"pressure", "Alert"}, {"freq", "Action"}, {"digits", "Alert"}} {
			res, err := admin.CreateAlarmRuleWithResponse(ctx, tn.orgID, tn.projectID, sensorID,
				client.AlarmRuleInput{Target: r.target, Level: r.level, Direction: "above", Threshold: -1e9})
			if err != nil || res.JSON201 == nil {
				t.Fatalf("create rule: %v %s", err, res.Body)
			}
		}
		sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: sensorID})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.client(tn.tokens[store.Editor]).PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, sensorID, nil, []client.ReadingInput{{
			Datetime: time.Date(2024, 5, 1, 12, 2-m, 0, 0, time.UTC),
			Inputs:   client.Values{fmt.Sprint(sensor.Instance.Inputs[0].ID): 50, fmt.Sprint(sensor.Instance.Inputs[1].ID): 10},
		}})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("post reading: %v %s", err, res.Body)
		}
	}

	// Five flags on the piezometer, set out of time order.
	editor := e.client(tn.tokens[store.Editor])
	for _, m := range []int{4, 1, 3, 0, 2} {
		res, err := editor.SetFlagWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID,
			client.FlagInput{Flag: client.FlagInputFlagSuspect, From: fmt.Sprintf("2024-05-01T13:0%d:00Z", m), Reason: "paged"})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("set flag: %v %s", err, res.Body)
		}
	}

	// The project's trail holds at least the webhooks, levels, rules and
	// flags above.
	trail, err := viewer.ListProjectAuditWithResponse(ctx, tn.orgID, tn.projectID, &client.ListProjectAuditParams{Limit: ptr(1000)})
	if err != nil || trail.JSON200 == nil {
		t.Fatalf("list the project's audit: %v %s", err, trail.Body)
	}
	entries := len(trail.JSON200.Items)
	if entries < 5+3+12+5 {
		t.Fatalf("the project's trail has %d entries, want at least %d", entries, 5+3+12+5)
	}
	owner := e.owner(tn)
	orgTrail, err := owner.ListOrgAuditWithResponse(ctx, tn.orgID, &client.ListOrgAuditParams{Limit: ptr(1000)})
	if err != nil || orgTrail.JSON200 == nil {
		t.Fatalf("list the organization's audit: %v %s", err, orgTrail.Body)
	}
	orgEntries := len(orgTrail.JSON200.Items)
	if orgEntries < entries {
		t.Fatalf("the organization's trail has %d entries, fewer than its project's %d", orgEntries, entries)
	}

	// list returns a page's ids and next cursor.
	type list func(t *testing.T, limit int, cursor *string) ([]string, *string)
	for _, c := range []struct {
		name string
		want int
		list list
	}{
		{"webhooks", 5, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := admin.ListWebhooksWithResponse(ctx, tn.orgID, tn.projectID, &client.ListWebhooksParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list webhooks: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(w client.Webhook) any { return w.Id }), res.JSON200.NextCursor
		}},
		{"alarm levels", 7, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := viewer.ListAlarmLevelsWithResponse(ctx, tn.orgID, tn.projectID, &client.ListAlarmLevelsParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list levels: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(l client.AlarmLevel) any { return l.Rank }), res.JSON200.NextCursor
		}},
		{"alarm rules", 4, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := viewer.ListAlarmRulesWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.ListAlarmRulesParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list rules: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(r client.AlarmRule) any { return r.Target + fmt.Sprint(r.Id) }), res.JSON200.NextCursor
		}},
		{"flags", 5, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := viewer.ListFlagsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.ListFlagsParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list flags: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(f client.Flag) any { return f.Id }), res.JSON200.NextCursor
		}},
		{"project audit", entries, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := viewer.ListProjectAuditWithResponse(ctx, tn.orgID, tn.projectID, &client.ListProjectAuditParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list the project's audit: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(a client.AuditEntry) any { return a.Id }), res.JSON200.NextCursor
		}},
		{"organization audit", orgEntries, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := owner.ListOrgAuditWithResponse(ctx, tn.orgID, &client.ListOrgAuditParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list the organization's audit: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(a client.AuditEntry) any { return a.Id }), res.JSON200.NextCursor
		}},
		{"alarms", 12, func(t *testing.T, limit int, cursor *string) ([]string, *string) {
			res, err := viewer.ListAlarmsWithResponse(ctx, tn.orgID, tn.projectID, &client.ListAlarmsParams{Limit: &limit, Cursor: cursor})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list alarms: %v %s", err, res.Body)
			}
			return mapIDs(res.JSON200.Items, func(a client.Alarm) any { return fmt.Sprint(a.Rank, " ", a.Since, " ", a.Id) }), res.JSON200.NextCursor
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			whole, next := c.list(t, 1000, nil)
			if len(whole) != c.want || next != nil {
				t.Fatalf("one page of 1000: %d items, next_cursor %v; want %d and none", len(whole), deref(next), c.want)
			}
			for _, limit := range []int{1, 2, 3} {
				var got []string
				var cursor *string
				for pages := 0; ; pages++ {
					if pages > c.want {
						t.Fatalf("limit %d: more pages than items", limit)
					}
					items, next := c.list(t, limit, cursor)
					if len(items) > limit || (next != nil && len(items) != limit) {
						t.Fatalf("limit %d: a page of %d items with next_cursor %v", limit, len(items), deref(next))
					}
					got = append(got, items...)
					if next == nil {
						break
					}
					cursor = next
				}
				if !slices.Equal(got, whole) {
					t.Errorf("limit %d: pages hold\n  %q\nwant the whole list\n  %q", limit, got, whole)
				}
			}
		})
	}
	t.Run("ErrCursor", func(t *testing.T) {
		res, err := viewer.ListAlarmsWithResponse(ctx, tn.orgID, tn.projectID, &client.ListAlarmsParams{Cursor: ptr("4_x_1")})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
	})
}

func mapIDs[T any](items []T, key func(T) any) []string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = fmt.Sprint(key(item))
	}
	return out
}
