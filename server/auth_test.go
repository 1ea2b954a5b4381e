package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

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
	projectOwner                 // the tenant's project, no ceiling
	piezometerOwner              // the tenant's project and its piezometer only, no ceiling
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
	{name: "ProjectToken", valid: true, role: store.Owner, scope: projectOwner, header: scopedHeader(projectOwner)},
	{name: "PiezometerToken", valid: true, role: store.Owner, scope: piezometerOwner, header: scopedHeader(piezometerOwner)},
}

func scopedHeader(kind scopeKind) func(*env, matrixFixture) string {
	return func(_ *env, f matrixFixture) string { return "Bearer " + f.scoped[kind] }
}

func roleHeader(role store.Role) func(*env, matrixFixture) string {
	return func(_ *env, f matrixFixture) string { return "Bearer " + f.tenant.tokens[role] }
}

// TestAuthMatrix calls every operation in the spec as every identity and
// checks the status each gets: 401 without a valid token, 404 from another
// organization, 403 below the operation's x-required-role, 2xx otherwise,
// and for scoped tokens what their reach allows (expectedStatus). The
// requests name resources in their query and body too (namingRequest),
// and each operation that does is also called by the owner naming the
// other organization's resources there: refused, changing nothing. Each
// operation is also called by the owner on an archived project: reads
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
	for _, o := range ops {
		_, ok := namingRequest(o.operation.OperationID, namedIDs{})
		if names := namesInQueryOrBody(o.operation); names != ok {
			t.Errorf("%s: names a resource in its query or body: %v; has a namingRequest: %v", o.operation.OperationID, names, ok)
		}
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
				if o.operation.OperationID == "acceptMyInvitation" {
					f.invitationCode = e.invitationFor(t, f, callerToken)
				}
				want := expectedStatus(t, o, required, id, f)

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
				// An invitation's code is the credential of acceptInvitation,
				// and with the caller's token of acceptMyInvitation: it joins
				// the tenant.
				if o.operation.OperationID == "acceptInvitation" || o.operation.OperationID == "acceptMyInvitation" {
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
		if _, ok := namingRequest(o.operation.OperationID, namedIDs{}); ok {
			n++
			t.Run(o.operation.OperationID+"/ForeignIDs", func(t *testing.T) {
				f := e.newMatrixFixture(t, n)
				f.names = e.foreignIDs(t, f)
				header := roleHeader(store.Owner)(e, f)
				before := map[int64]string{f.tenant.orgID: e.snapshot(t, f.tenant.orgID), f.other.orgID: e.snapshot(t, f.other.orgID)}
				status, body := e.callExample(t, o.method, o.path, o.operation, f, header, strings.TrimPrefix(header, "Bearer "))
				// A level is named by name, looked up within the path's
				// project: one of another project's is no level of it.
				want, code := 404, "not_found"
				if names, _ := namingRequest(o.operation.OperationID, f.names); names.levelByName {
					want, code = 400, "invalid"
				}
				wantError(t, status, body, want, code)
				if bytes.Contains(body, []byte("BRAVO-")) {
					t.Errorf("%s naming the other organization's resources returned its data: %s", o.operation.OperationID, body)
				}
				for orgID, snapshot := range before {
					if e.snapshot(t, orgID) != snapshot {
						t.Errorf("%s naming the other organization's resources was refused but changed organization %d", o.operation.OperationID, orgID)
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
			if o.operation.OperationID == "acceptMyInvitation" {
				f.invitationCode = e.invitationFor(t, f, strings.TrimPrefix(header, "Bearer "))
			}
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
// scope, in the path, the query or the body, and 403 for an operation
// that names none of its scope, or that a device token may not call, and
// for a kind of resource its scope never reaches (a blueprint for a
// project's token, a level for a sensor's), unless the operation narrows
// its answer to the scope (x-scope: narrows).
func expectedStatus(t *testing.T, o specOperation, required string, id identity, f matrixFixture) int {
	namesProject := strings.Contains(o.path, "{proj_id}") || strings.Contains(o.path, "{project_id}")
	narrows := o.operation.Extensions["x-scope"] == "narrows"
	pathSensor := int64(0)
	if strings.Contains(o.path, "{sensor_id}") {
		pathSensor, _ = strconv.ParseInt(pathParam(t, f, o.operation.OperationID, "sensor_id", ""), 10, 64)
	}
	names, _ := namingRequest(o.operation.OperationID, f.names)
	beyondPiezometer := slices.ContainsFunc(names.sensors, func(id int64) bool { return id != f.tenant.instanceID })
	switch {
	case required == "public":
		return 200
	case !id.valid:
		return 401
	case (id.scope == device || id.scope == deviceOtherSensors) && o.operation.OperationID != "postReadings":
		return 403
	case required == "user" && id.scope != unscoped && o.method != http.MethodGet:
		return 403
	case required == "user" && id.role == "" && names.kinds[organization]:
		return 404 // the body names the tenant's organization
	case required == "user":
		return 200
	case id.role == "":
		return 404
	case id.scope != unscoped && !namesProject && !narrows:
		return 403
	case id.scope == piezometerOwner && pathSensor == 0 && !narrows:
		return 403
	case (id.scope == otherProject || id.scope == deviceOtherSensors) && namesProject:
		return 404
	case id.scope == piezometerOwner && ((pathSensor != f.tenant.instanceID && !narrows) || beyondPiezometer):
		return 404
	case id.scope == piezometerOwner && names.kinds[level], id.scope == projectOwner && names.kinds[blueprint]:
		return 403
	case !id.role.AtLeast(store.Role(required)):
		return 403
	}
	return 200
}

// namedIDs are the resources the matrix's requests name in their query
// or body.
type namedIDs struct {
	org, project, blueprint, levelID int64
	sensor                           int64 // in a filter or a token's scope
	source                           int64 // of a link
	levelName                        string
}

// foreignIDs are the other organization's resources, each one that the
// tenant's owner may not name, with a level of its own named as no level
// of the tenant.
func (e *env) foreignIDs(t *testing.T, f matrixFixture) namedIDs {
	t.Helper()
	o := f.other
	lvl, err := e.db.CreateAlarmLevel(t.Context(), o.orgID, o.projectID, store.AlarmLevel{Name: "Only in BRAVO", Rank: 60, Colour: "#abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	return namedIDs{org: o.orgID, project: o.projectID, blueprint: o.blueprintID, levelID: lvl.ID,
		sensor: o.instanceID, source: o.instanceID, levelName: lvl.Name}
}

// naming is a request's query and body that name resources, and what they
// name.
type naming struct {
	query       url.Values
	body        any
	kinds       map[string]bool // the x-resource kinds named
	sensors     []int64
	levelByName bool
}

// Kinds of resource, as x-resource names them.
const (
	organization = "organization"
	blueprint    = "blueprint"
	level        = "level"
)

// namingRequest is what the matrix sends to an operation whose query or
// body names resources (x-resource), naming ids; ok is false for the
// others. TestAuthMatrix checks that it knows every such operation.
func namingRequest(operationID string, ids namedIDs) (naming, bool) {
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	rule := map[string]any{"target": "pressure", "level": ids.levelName, "direction": "above", "threshold": 150}
	switch operationID {
	case "createToken":
		return naming{body: map[string]any{"name": "scoped", "scope": map[string]any{"org_id": ids.org, "project_id": ids.project, "sensor_ids": []int64{ids.sensor}}},
			kinds: map[string]bool{organization: true, "project": true, "sensor": true}, sensors: []int64{ids.sensor}}, true
	case "createSensor":
		return naming{body: map[string]any{"name": "PZ-02", "blueprint_id": ids.blueprint}, kinds: map[string]bool{blueprint: true}}, true
	case "updateSensor":
		return naming{body: map[string]any{"name": "PZ-01 (replaced)", "blueprint_id": ids.blueprint}, kinds: map[string]bool{blueprint: true}}, true
	case "updateLinks":
		return naming{body: map[string]any{"temp": map[string]any{"sensor_id": ids.source, "key": "temp"}},
			kinds: map[string]bool{"sensor": true}, sensors: []int64{ids.source}}, true
	case "createAlarmRule", "updateAlarmRule":
		return naming{body: rule, kinds: map[string]bool{level: true}, levelByName: true}, true
	case "setOverdueRule":
		return naming{body: map[string]any{"level": ids.levelName, "after_seconds": 3600}, kinds: map[string]bool{level: true}, levelByName: true}, true
	case "listProjectReadings":
		return naming{query: url.Values{"sensors": {id(ids.sensor)}}, kinds: map[string]bool{"sensor": true}, sensors: []int64{ids.sensor}}, true
	case "listProjectAudit":
		return naming{query: url.Values{"sensor_id": {id(ids.sensor)}}, kinds: map[string]bool{"sensor": true}, sensors: []int64{ids.sensor}}, true
	case "projectStatus":
		return naming{query: url.Values{"sensor_id": {id(ids.sensor)}}, kinds: map[string]bool{"sensor": true}, sensors: []int64{ids.sensor}}, true
	case "listAlarmEvents":
		return naming{query: url.Values{"sensor_id": {id(ids.sensor)}, "level_id": {id(ids.levelID)}},
			kinds: map[string]bool{"sensor": true, level: true}, sensors: []int64{ids.sensor}}, true
	}
	return naming{}, false
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
	names, naming := namingRequest(op.OperationID, f.names)
	if len(names.query) > 0 {
		query = append(query, names.query.Encode())
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
		switch {
		case op.OperationID == "acceptInvitation" || op.OperationID == "acceptMyInvitation":
			example = map[string]string{"code": f.invitationCode}
		case naming:
			example = names.body
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
  (SELECT string_agg(concat_ws(',', f.id, f.flag, f.cleared_at), ';' ORDER BY f.id)
     FROM reading_flags f JOIN sensors s ON s.id = f.sensor_id JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', c.sensor_id, c.checks), ';' ORDER BY c.sensor_id)
     FROM sensor_checks c JOIN sensors s ON s.id = c.sensor_id JOIN projects p ON p.id = s.project_id WHERE p.org_id = $1),
  (SELECT string_agg(concat_ws(',', t.id, t.revoked_at, t.expires_at), ';' ORDER BY t.id)
     FROM api_tokens t JOIN memberships m ON m.user_id = t.user_id WHERE m.org_id = $1))`, orgID).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(dump))
	return fmt.Sprintf("%x", sum)
}
