package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// identity is one way of calling an operation in the matrix.
type identity struct {
	name string
	// token returns the Authorization header for a call on f.
	header func(e *env, f matrixFixture) string
	// role is the caller's role in the fixture's organization; empty for
	// callers without a valid token or from another organization.
	role  store.Role
	valid bool // the token is valid (a user exists behind it)
	scope scopeKind
}

// scopeKind is how the matrix's scoped tokens are narrowed, each a token of
// the tenant's owner.
type scopeKind int

const (
	unscoped           scopeKind = iota
	projectViewer                // the tenant's project, viewer ceiling
	otherProject                 // another project of the tenant
	device                       // a device token of the project and the fixture's sensor
	deviceOtherSensors           // a device token of the project and its piezometer only
)

var identities = []identity{
	{name: "NoHeader", header: func(*env, matrixFixture) string { return "" }},
	{name: "Garbage", header: func(*env, matrixFixture) string { return "Bearer not-a-token" }},
	{name: "Unknown", header: func(*env, matrixFixture) string { return "Bearer rdg_" + strings.Repeat("A", 43) }},
	{name: "Revoked", header: func(_ *env, f matrixFixture) string { return "Bearer " + f.revoked }},
	{name: "Expired", header: func(_ *env, f matrixFixture) string { return "Bearer " + f.expired }},
	{name: "OtherOrgOwner", valid: true, header: func(_ *env, f matrixFixture) string { return "Bearer " + f.other.tokens[store.Owner] }},
	{name: "Viewer", valid: true, role: store.Viewer, header: roleHeader(store.Viewer)},
	{name: "Editor", valid: true, role: store.Editor, header: roleHeader(store.Editor)},
	{name: "Admin", valid: true, role: store.Admin, header: roleHeader(store.Admin)},
	{name: "Owner", valid: true, role: store.Owner, header: roleHeader(store.Owner)},
	{name: "ProjectViewerToken", valid: true, role: store.Viewer, scope: projectViewer, header: scopedHeader(projectViewer)},
	{name: "OtherProjectToken", valid: true, role: store.Owner, scope: otherProject, header: scopedHeader(otherProject)},
	{name: "DeviceToken", valid: true, role: store.Editor, scope: device, header: scopedHeader(device)},
	{name: "OtherSensorsDeviceToken", valid: true, role: store.Editor, scope: deviceOtherSensors, header: scopedHeader(deviceOtherSensors)},
}

func scopedHeader(kind scopeKind) func(*env, matrixFixture) string {
	return func(_ *env, f matrixFixture) string { return "Bearer " + f.scoped[kind] }
}

func roleHeader(role store.Role) func(*env, matrixFixture) string {
	return func(_ *env, f matrixFixture) string { return "Bearer " + f.tenant.tokens[role] }
}

// matrixFixture is what one call of the matrix runs against, made afresh
// for each call so that a DELETE cannot spoil the next call.
type matrixFixture struct {
	tenant   tenant // the organization named in the path
	other    tenant // another organization, whose data must never show
	target   int64  // a member the member operations act on
	revoked  string // a revoked token of the tenant's owner
	expired  string // an expired token of the tenant's owner
	tokenIDs map[string]int64
	scoped   map[scopeKind]string // the owner's scoped tokens
	// A pending invitation to the tenant, whose code the matrix sends to
	// acceptInvitation in place of the spec's example.
	invitationID   int64
	invitationCode string
	// An unused alarm level, a rule on the tenant's piezometer and the
	// alarm its reading raised, for the alarm operations.
	levelID, ruleID, alarmID int64
	webhookID                int64 // with a delivery of the alarm's event
}

func (e *env) newMatrixFixture(t *testing.T, n int) matrixFixture {
	ctx := context.Background()
	f := matrixFixture{
		tenant:   e.newTenant(fmt.Sprintf("ALPHA-%d", n)),
		other:    e.newTenant(fmt.Sprintf("BRAVO-%d", n)),
		tokenIDs: map[string]int64{},
		scoped:   map[scopeKind]string{},
	}
	owner := f.tenant.userIDs[store.Owner]
	revoked, secret, err := e.db.CreateToken(ctx, owner, "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RevokeToken(ctx, owner, revoked.ID); err != nil {
		t.Fatal(err)
	}
	f.revoked = secret
	past := time.Now().Add(-time.Minute)
	if _, f.expired, err = e.db.CreateToken(ctx, owner, "expired", &past); err != nil {
		t.Fatal(err)
	}
	target, err := e.db.EnsureUser(ctx, fmt.Sprintf("target-%d@example.com", n), "Target")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.SetMembership(ctx, f.tenant.orgID, target.ID, store.Viewer); err != nil {
		t.Fatal(err)
	}
	f.target = target.ID
	inv, code, err := e.db.CreateInvitation(ctx, f.tenant.orgID, owner, fmt.Sprintf("invitee-%d@example.com", n), store.Editor, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.invitationID, f.invitationCode = inv.ID, code
	spare, err := e.db.CreateProject(ctx, f.tenant.orgID, fmt.Sprintf("ALPHA-%d spare project", n), "")
	if err != nil {
		t.Fatal(err)
	}
	tn := f.tenant
	for kind, scope := range map[scopeKind]store.TokenScope{
		projectViewer:      {OrgID: tn.orgID, ProjectID: tn.projectID, Role: store.Viewer},
		otherProject:       {OrgID: tn.orgID, ProjectID: spare.ID},
		device:             {OrgID: tn.orgID, ProjectID: tn.projectID, SensorIDs: []int64{tn.sensorID}, Device: true},
		deviceOtherSensors: {OrgID: tn.orgID, ProjectID: tn.projectID, SensorIDs: []int64{tn.instanceID}, Device: true},
	} {
		if _, f.scoped[kind], err = e.db.CreateScopedToken(ctx, owner, "scoped", nil, scope); err != nil {
			t.Fatal(err)
		}
	}
	f.levelID, f.ruleID, f.alarmID, f.webhookID = e.newAlarm(t, f.tenant)
	instance := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID}
	if _, err := e.db.SetImportProfile(ctx, instance, store.ImportProfileSpec{TZ: "Europe/Zurich", Columns: map[string]string{"Freq_Avg": "freq"}}); err != nil {
		t.Fatal(err)
	}
	// A spare token of each user, for the operations on /me/tokens/{id}.
	for _, tn := range []tenant{f.tenant, f.other} {
		for role, userID := range tn.userIDs {
			tok, _, err := e.db.CreateToken(ctx, userID, "spare", nil)
			if err != nil {
				t.Fatal(err)
			}
			f.tokenIDs[tn.tokens[role]] = tok.ID
		}
	}
	return f
}

// pathParam gives each path parameter of the spec its value in a fixture.
// A parameter missing here fails the matrix: a new one needs a decision.
func pathParam(t *testing.T, f matrixFixture, operationID, name, callerToken string) string {
	switch name {
	case "org_id":
		return strconv.FormatInt(f.tenant.orgID, 10)
	case "proj_id", "project_id":
		return strconv.FormatInt(f.tenant.projectID, 10)
	case "sensor_id":
		if operationID == "updateFormulas" || operationID == "updateCalibrations" || operationID == "updateBaselines" || operationID == "updateLinks" ||
			strings.Contains(operationID, "AlarmRule") || strings.Contains(operationID, "ImportProfile") {
			return strconv.FormatInt(f.tenant.instanceID, 10) // these need a sensor with a blueprint
		}
		return strconv.FormatInt(f.tenant.sensorID, 10)
	case "blueprint_id":
		return strconv.FormatInt(f.tenant.blueprintID, 10)
	case "level_id":
		return strconv.FormatInt(f.levelID, 10)
	case "rule_id":
		return strconv.FormatInt(f.ruleID, 10)
	case "alarm_id":
		return strconv.FormatInt(f.alarmID, 10)
	case "webhook_id":
		return strconv.FormatInt(f.webhookID, 10)
	case "user_id":
		return strconv.FormatInt(f.target, 10)
	case "invitation_id":
		return strconv.FormatInt(f.invitationID, 10)
	case "token_id":
		if id, ok := f.tokenIDs[callerToken]; ok {
			return strconv.FormatInt(id, 10)
		}
		return "1"
	}
	t.Fatalf("the matrix has no value for path parameter %q; add it to pathParam", name)
	return ""
}

// TestAuthMatrix calls every operation in the spec as every identity and
// checks the status each gets: 401 without a valid token, 404 from another
// organization, 403 below the operation's x-required-role, 2xx otherwise.
// Each operation is also called by the owner on an archived project: reads
// answer as before, writes under the project 409 (archivedRefuses).
// It reads the operations from the embedded spec, so a new operation joins
// the matrix by itself. It also checks that no call returns the other
// organization's data, and that refused calls change nothing.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ops := e.specOperations()
	slices.SortFunc(ops, func(a, b specOperation) int { return strings.Compare(a.operation.OperationID, b.operation.OperationID) })
	if len(ops) < 20 {
		t.Fatalf("the spec has %d operations; the matrix expects the whole API", len(ops))
	}

	n := 0
	for _, o := range ops {
		required, _ := o.operation.Extensions["x-required-role"].(string)
		if required == "" {
			t.Errorf("%s has no x-required-role", o.operation.OperationID)
			continue
		}
		if !strings.Contains(o.operation.Description, "Required role: `"+required+"`") {
			t.Errorf("%s: its description must name its role: Required role: `%s`.", o.operation.OperationID, required)
		}
		for _, id := range identities {
			n++
			t.Run(o.operation.OperationID+"/"+id.name, func(t *testing.T) {
				f := e.newMatrixFixture(t, n)
				header := id.header(e, f)
				callerToken := strings.TrimPrefix(header, "Bearer ")
				want := expectedStatus(o, required, id)

				// The organizations whose data this caller must neither see
				// nor change: the other one for the tenant's members, the
				// tenant for the other's owner, both for a caller without a
				// valid token.
				foreign := map[string]int64{"ALPHA-": f.tenant.orgID, "BRAVO-": f.other.orgID}
				if id.valid {
					delete(foreign, map[bool]string{true: "ALPHA-", false: "BRAVO-"}[id.role != ""])
				}
				before := map[string]string{}
				for marker, orgID := range foreign {
					before[marker] = e.snapshot(t, orgID)
				}
				beforeTenant := e.snapshot(t, f.tenant.orgID)

				status, body := e.callExample(t, o.method, o.path, o.operation, f, header, callerToken)

				switch {
				case want == 200 && (status < 200 || status > 299):
					t.Fatalf("%s as %s: %d %s, want 2xx", o.operation.OperationID, id.name, status, body)
				case want != 200 && status != want:
					t.Fatalf("%s as %s: %d %s, want %d", o.operation.OperationID, id.name, status, body, want)
				}
				// An invitation's code, not the caller's token, is the
				// credential of acceptInvitation: it joins the tenant.
				if o.operation.OperationID == "acceptInvitation" {
					foreign = nil
				}
				for marker, orgID := range foreign {
					if bytes.Contains(body, []byte(marker)) {
						t.Errorf("%s as %s returned data of an organization it is not in: %s", o.operation.OperationID, id.name, body)
					}
					if e.snapshot(t, orgID) != before[marker] {
						t.Errorf("%s as %s changed an organization it is not in", o.operation.OperationID, id.name)
					}
				}
				if want != 200 {
					wantError(t, status, body, want, map[int]string{401: "unauthorized", 403: "forbidden", 404: "not_found"}[want])
					if e.snapshot(t, f.tenant.orgID) != beforeTenant {
						t.Errorf("%s as %s was refused but changed the organization", o.operation.OperationID, id.name)
					}
				}
			})
		}
		n++
		t.Run(o.operation.OperationID+"/ArchivedProject", func(t *testing.T) {
			f := e.newMatrixFixture(t, n)
			archived := store.Archived
			if _, err := e.db.UpdateProject(t.Context(), f.tenant.orgID, f.tenant.projectID, store.ProjectPatch{State: &archived}); err != nil {
				t.Fatal(err)
			}
			header := roleHeader(store.Owner)(e, f)
			before := e.snapshot(t, f.tenant.orgID)
			status, body := e.callExample(t, o.method, o.path, o.operation, f, header, strings.TrimPrefix(header, "Bearer "))
			if archivedRefuses(o.method, o.path, o.operation.OperationID) {
				got := wantError(t, status, body, 409, "conflict")
				if want := fmt.Sprintf("project %d is archived, so read-only; restore it first", f.tenant.projectID); got.Message != want {
					t.Errorf("%s on an archived project: message %q, want %q", o.operation.OperationID, got.Message, want)
				}
			} else if status < 200 || status > 299 {
				t.Fatalf("%s on an archived project: %d %s, want 2xx", o.operation.OperationID, status, body)
			}
			if readOnly := o.method == http.MethodGet || archivedRefuses(o.method, o.path, o.operation.OperationID); readOnly || o.operation.OperationID == "projectAction" {
				if e.snapshot(t, f.tenant.orgID) != before {
					t.Errorf("%s on an archived project changed the organization", o.operation.OperationID)
				}
			}
		})
	}
}

// archivedRefuses is the matrix's rule for an archived project: every write
// under it answers 409, but deleting it and its actions (the example
// archives it again, which changes nothing; restoring is the way out).
func archivedRefuses(method, path, operationID string) bool {
	underProject := strings.Contains(path, "{proj_id}") || strings.Contains(path, "{project_id}")
	return method != http.MethodGet && underProject && operationID != "deleteProject" && operationID != "projectAction"
}

// expectedStatus is the matrix's rule: 200 stands for any 2xx. A scoped
// token answers as a non-member (404) for a project or sensor outside its
// scope and 403 for an operation that names none of its scope, or that a
// device token may not call.
func expectedStatus(o specOperation, required string, id identity) int {
	namesProject := strings.Contains(o.path, "{proj_id}") || strings.Contains(o.path, "{project_id}")
	switch {
	case required == "public":
		return 200
	case !id.valid:
		return 401
	case (id.scope == device || id.scope == deviceOtherSensors) && o.operation.OperationID != "postReadings":
		return 403
	case required == "user" && id.scope != unscoped && o.method != http.MethodGet:
		return 403
	case required == "user":
		return 200
	case id.role == "":
		return 404
	case id.scope != unscoped && !namesProject:
		return 403
	case id.scope == otherProject, id.scope == deviceOtherSensors:
		return 404
	case !id.role.AtLeast(store.Role(required)):
		return 403
	}
	return 200
}

// oneRequired names, for an operation that requires one of several
// optional query parameters (which the spec can only say in words), the one
// the matrix sends.
var oneRequired = map[string]string{"aggregateReadings": "interval"}

// callExample calls an operation with its path filled from the fixture, its
// required query parameters and its body taken from the spec's examples.
func (e *env) callExample(t *testing.T, method, path string, op *openapi3.Operation, f matrixFixture, header, callerToken string) (int, []byte) {
	t.Helper()
	res, body := e.sendExample(t, method, path, op, f, header, callerToken)
	return res.StatusCode, body
}

// sendExample is callExample with the whole response, and edit applied to
// the request, if any.
func (e *env) sendExample(t *testing.T, method, path string, op *openapi3.Operation, f matrixFixture, header, callerToken string, edit ...func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	for _, name := range pathParamNames(path) {
		path = strings.Replace(path, "{"+name+"}", pathParam(t, f, op.OperationID, name, callerToken), 1)
	}
	var query []string
	for _, p := range op.Parameters {
		if p.Value.In == "query" && (p.Value.Required || oneRequired[op.OperationID] == p.Value.Name) {
			if p.Value.Example == nil {
				t.Fatalf("%s: required parameter %s has no example for the matrix to send", op.OperationID, p.Value.Name)
			}
			query = append(query, fmt.Sprintf("%s=%v", p.Value.Name, p.Value.Example))
		}
	}
	if len(query) > 0 {
		path += "?" + strings.Join(query, "&")
	}
	var body io.Reader
	contentType := ""
	if op.RequestBody != nil {
		media := op.RequestBody.Value.Content.Get("application/json")
		if media == nil || media.Example == nil {
			t.Fatalf("%s: its request body has no application/json example for the matrix to send", op.OperationID)
		}
		example := media.Example
		switch op.OperationID {
		case "acceptInvitation":
			example = map[string]string{"code": f.invitationCode}
		case "updateLinks":
			// The example's source is no sensor of the fixture; removing
			// every link is a write all the same.
			example = map[string]any{}
		}
		b, err := json.Marshal(example)
		if err != nil {
			t.Fatal(err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, f := range edit {
		f(req)
	}
	res, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", res.Header.Get("WWW-Authenticate"))
	}
	return res, b
}

func pathParamNames(path string) []string {
	var names []string
	for rest := path; ; {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			return names
		}
		name, tail, _ := strings.Cut(after, "}")
		names = append(names, name)
		rest = tail
	}
}

// snapshot is a digest of everything an organization owns, to tell whether
// a call changed it.
func (e *env) snapshot(t *testing.T, orgID int64) string {
	t.Helper()
	var dump string
	err := e.pool.QueryRow(context.Background(), `
SELECT concat_ws('|',
  (SELECT string_agg(concat_ws(',', id, name, description, state, updated_at), ';' ORDER BY id) FROM projects WHERE org_id = $1),
  (SELECT string_agg(concat_ws(',', s.id, s.name, s.description, s.updated_at), ';' ORDER BY s.id)
     FROM sensors s JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', r.sensor_id, r.datetime, r.input_ids, r.vals), ';' ORDER BY r.sensor_id, r.datetime)
     FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', user_id, role), ';' ORDER BY user_id) FROM memberships WHERE org_id = $1),
  (SELECT string_agg(concat_ws(',', id, accepted_at, revoked_at), ';' ORDER BY id) FROM invitations WHERE org_id = $1),
  (SELECT string_agg(concat_ws(',', l.id, l.name, l.rank, l.colour), ';' ORDER BY l.id)
     FROM alarm_levels l JOIN projects p ON p.id = l.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', r.id, r.level_id, r.threshold, r.active, r.streak), ';' ORDER BY r.id)
     FROM alarm_rules r JOIN sensors s ON s.id = r.sensor_id JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', a.id, a.level_id, a.acknowledged_at, a.note), ';' ORDER BY a.id)
     FROM alarms a JOIN projects p ON p.id = a.project_id WHERE p.org_id = $1),
  (SELECT count(*) FROM alarm_events v JOIN projects p ON p.id = v.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', i.sensor_id, i.columns, i.tz, i.dst, i.updated_at), ';' ORDER BY i.sensor_id)
     FROM import_profiles i JOIN sensors s ON s.id = i.sensor_id JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', w.id, w.url), ';' ORDER BY w.id) FROM webhooks w JOIN projects p ON p.id = w.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', t.id, t.revoked_at, t.expires_at), ';' ORDER BY t.id)
     FROM api_tokens t JOIN memberships m ON m.user_id = t.user_id WHERE m.org_id = $1))`, orgID).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(dump))
	return fmt.Sprintf("%x", sum)
}

func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)

	created, err := owner.CreateTokenWithResponse(ctx, gen.TokenCreate{Name: "datalogger", ExpiresInDays: ptr(30)})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create token: %v %s", err, created.Body)
	}
	secret := created.JSON201.Token
	if !strings.HasPrefix(secret, "rdg_") || len(secret) != 47 {
		t.Errorf("token %q is not rdg_ and 43 characters", secret)
	}
	if !strings.HasPrefix(secret, created.JSON201.Prefix) {
		t.Errorf("prefix %q does not start the secret", created.JSON201.Prefix)
	}
	if d := time.Until(at(t, *created.JSON201.ExpiresAt)); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("expires in %v, want 30 days", d)
	}

	t.Run("OnlyTheHashIsStored", func(t *testing.T) {
		sum := sha256.Sum256([]byte(secret))
		var hashed, plain int
		err := e.pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE secret_hash = $1),
       count(*) FILTER (WHERE position($2 IN concat_ws(',', name, prefix, encode(secret_hash, 'escape'))) > 0)
FROM api_tokens`, sum[:], secret).Scan(&hashed, &plain)
		if err != nil {
			t.Fatal(err)
		}
		if hashed != 1 || plain != 0 {
			t.Errorf("%d rows hold the SHA-256 and %d the secret; want 1 and 0", hashed, plain)
		}
	})

	logger := e.client(secret)
	me, err := logger.GetMeWithResponse(ctx)
	if err != nil || me.StatusCode() != 200 || me.JSON200.User.Id != tn.userIDs[store.Owner] {
		t.Fatalf("GET /me with the new token: %v %s", err, me.Body)
	}
	if me.JSON200.TokenId != created.JSON201.Id {
		t.Errorf("/me says token %d, want the one making the request, %d", me.JSON200.TokenId, created.JSON201.Id)
	}

	t.Run("ListShowsNoSecret", func(t *testing.T) {
		// A page of one, then the next: the new token first, then the
		// fixture's, and no cursor after it.
		var ids []int64
		params := &gen.ListTokensParams{Limit: ptr(1)}
		for range 3 {
			res, err := owner.ListTokensWithResponse(ctx, params)
			if err != nil || res.StatusCode() != 200 {
				t.Fatalf("list tokens: %v %s", err, res.Body)
			}
			if bytes.Contains(res.Body, []byte(secret)) {
				t.Error("the token list shows a secret")
			}
			for _, tok := range res.JSON200.Items {
				ids = append(ids, tok.Id)
			}
			if params.Cursor = res.JSON200.NextCursor; params.Cursor == nil {
				break
			}
		}
		if len(ids) != 2 || ids[0] != created.JSON201.Id {
			t.Errorf("token ids %v, want the new one (%d) first and the fixture's", ids, created.JSON201.Id)
		}
	})

	t.Run("LastUsedIsBatched", func(t *testing.T) {
		var lastUsed *time.Time
		query := `SELECT last_used_at FROM api_tokens WHERE id = $1`
		if err := e.pool.QueryRow(ctx, query, created.JSON201.Id).Scan(&lastUsed); err != nil {
			t.Fatal(err)
		}
		if lastUsed != nil {
			t.Errorf("last_used_at = %v before a flush; a request must not write it", lastUsed)
		}
		if err := e.srv.FlushTokenUse(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.pool.QueryRow(ctx, query, created.JSON201.Id).Scan(&lastUsed); err != nil {
			t.Fatal(err)
		}
		if lastUsed == nil || time.Since(*lastUsed) > time.Minute {
			t.Errorf("last_used_at = %v after a flush, want about now", lastUsed)
		}
	})

	t.Run("RevocationTakesEffectAtOnce", func(t *testing.T) {
		revoke, err := owner.RevokeTokenWithResponse(ctx, created.JSON201.Id)
		if err != nil || revoke.StatusCode() != 204 {
			t.Fatalf("revoke: %v %s", err, revoke.Body)
		}
		res, err := logger.GetMeWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := wantError(t, res.StatusCode(), res.Body, 401, "unauthorized")
		if !strings.Contains(got.Message, "revoked") {
			t.Errorf("message %q should say the token is revoked", got.Message)
		}
		if again, _ := owner.RevokeTokenWithResponse(ctx, created.JSON201.Id); again.StatusCode() != 204 {
			t.Errorf("revoking twice: %d, want 204", again.StatusCode())
		}
	})

	t.Run("ExpiryTakesEffectAtOnce", func(t *testing.T) {
		tok, secret, err := e.db.CreateToken(ctx, tn.userIDs[store.Viewer], "short", ptr(time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		c := e.client(secret)
		if res, _ := c.GetMeWithResponse(ctx); res.StatusCode() != 200 {
			t.Fatalf("before expiry: %d", res.StatusCode())
		}
		if _, err := e.pool.Exec(ctx, `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, tok.ID); err != nil {
			t.Fatal(err)
		}
		res, _ := c.GetMeWithResponse(ctx)
		got := wantError(t, res.StatusCode(), res.Body, 401, "unauthorized")
		if !strings.Contains(got.Message, "expired") {
			t.Errorf("message %q should say the token has expired", got.Message)
		}
	})

	t.Run("AnotherUsersToken", func(t *testing.T) {
		viewerTokens, _, err := e.db.ListTokens(ctx, tn.userIDs[store.Viewer], 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := owner.RevokeTokenWithResponse(ctx, viewerTokens[0].ID)
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})
}

func TestTokensNeverLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	lookalike := "rdg_" + strings.Repeat("Z", 43)
	for _, header := range []string{"Bearer " + tn.tokens[store.Owner], "Bearer " + lookalike, "Bearer garbage-token-value", "Basic dXNlcjpwYXNz"} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/org/%d/projects", e.url, tn.orgID), nil)
		req.Header.Set("Authorization", header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		secret := strings.TrimPrefix(strings.TrimPrefix(header, "Bearer "), "Basic ")
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("the response to %q shows the token: %s", header, body)
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatalf("no access log captured; the check below would prove nothing:\n%s", logs)
	}
	for _, secret := range []string{tn.tokens[store.Owner], lookalike, "garbage-token-value", "dXNlcjpwYXNz"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs contain the token %s…", secret[:8])
		}
	}
}

func TestMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)

	added, err := owner.AddMemberWithResponse(ctx, tn.orgID, gen.MemberCreate{Email: "Grace@Example.com", Name: ptr("Grace"), Role: gen.Editor})
	if err != nil || added.StatusCode() != 201 {
		t.Fatalf("add member: %v %s", err, added.Body)
	}
	grace := added.JSON201.UserId

	t.Run("AddTwice", func(t *testing.T) {
		res, _ := owner.AddMemberWithResponse(ctx, tn.orgID, gen.MemberCreate{Email: "grace@example.COM", Role: gen.Viewer})
		wantError(t, res.StatusCode(), res.Body, 409, "conflict")
	})
	t.Run("KnownUserJoinsAnotherOrg", func(t *testing.T) {
		other := e.newTenant("Globex")
		res, err := e.owner(other).AddMemberWithResponse(ctx, other.orgID, gen.MemberCreate{Email: "grace@example.com", Role: gen.Viewer})
		if err != nil || res.StatusCode() != 201 || res.JSON201.UserId != grace || res.JSON201.Name != "Grace" {
			t.Fatalf("add a known user elsewhere: %v %s", err, res.Body)
		}
	})
	t.Run("BadRole", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/members", tn.orgID), "application/json",
			strings.NewReader(`{"email":"x@example.com","role":"superuser"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("BadEmail", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/members", tn.orgID), "application/json",
			strings.NewReader(`{"email":"not an email","role":"viewer"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("Promote", func(t *testing.T) {
		res, err := owner.UpdateMemberWithResponse(ctx, tn.orgID, grace, gen.MemberUpdate{Role: gen.Owner})
		if err != nil || res.StatusCode() != 200 || res.JSON200.Role != gen.Owner {
			t.Fatalf("promote: %v %s", err, res.Body)
		}
	})
	t.Run("NotAMember", func(t *testing.T) {
		res, _ := owner.UpdateMemberWithResponse(ctx, tn.orgID, 999999, gen.MemberUpdate{Role: gen.Viewer})
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})

	// Two owners now. They demote each other at the same moment: one must
	// stay an owner.
	t.Run("LastOwnerRace", func(t *testing.T) {
		_, graceSecret, err := e.db.CreateToken(ctx, grace, "grace", nil)
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan int, 2)
		demote := func(c *gen.ClientWithResponses, who int64) {
			res, err := c.UpdateMemberWithResponse(ctx, tn.orgID, who, gen.MemberUpdate{Role: gen.Admin})
			if err != nil {
				results <- 0
				return
			}
			results <- res.StatusCode()
		}
		go demote(owner, grace)
		go demote(e.client(graceSecret), tn.userIDs[store.Owner])
		got := []int{<-results, <-results}
		slices.Sort(got)
		if fmt.Sprint(got) != "[200 409]" && fmt.Sprint(got) != "[200 403]" {
			t.Errorf("statuses %v, want one demotion to succeed and the other refused", got)
		}
		members, _, err := e.db.ListMembers(ctx, tn.orgID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		owners := 0
		for _, m := range members {
			if m.Role == store.Owner {
				owners++
			}
		}
		if owners != 1 {
			t.Errorf("%d owners after the race, want 1", owners)
		}
	})

	t.Run("LastOwnerCannotLeave", func(t *testing.T) {
		members, _, _ := e.db.ListMembers(ctx, tn.orgID, 0, 100)
		var last int64
		for _, m := range members {
			if m.Role == store.Owner {
				last = m.UserID
			}
		}
		_, secret, err := e.db.CreateToken(ctx, last, "last owner", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := e.client(secret)
		res, _ := c.RemoveMemberWithResponse(ctx, tn.orgID, last)
		got := wantError(t, res.StatusCode(), res.Body, 409, "conflict")
		if !strings.Contains(got.Message, "last owner") {
			t.Errorf("message %q should say it is the last owner", got.Message)
		}
		demote, _ := c.UpdateMemberWithResponse(ctx, tn.orgID, last, gen.MemberUpdate{Role: gen.Viewer})
		wantError(t, demote.StatusCode(), demote.Body, 409, "conflict")
		remove, _ := c.RemoveMemberWithResponse(ctx, tn.orgID, tn.userIDs[store.Viewer])
		if remove.StatusCode() != 204 {
			t.Errorf("remove a viewer: %d %s", remove.StatusCode(), remove.Body)
		}
		list, _ := c.ListMembersWithResponse(ctx, tn.orgID, nil)
		for _, m := range list.JSON200.Items {
			if m.UserId == tn.userIDs[store.Viewer] {
				t.Error("the removed viewer is still listed")
			}
		}
	})
}
