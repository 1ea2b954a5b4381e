package server_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// reachSite is an organization laid out for TestScopeReach. In the
// tenant's project P: its piezometer A (tn.instanceID), whose links, rules
// and blueprint the calls edit, with a rule; the piezometers B and D. In
// project Q of the same organization: the piezometer C and a level of Q
// only. And another organization, with its own piezometer and blueprint.
type reachSite struct {
	tn           tenant
	b, c, d      int64 // piezometers: B and D in P, C in Q
	q            int64
	pLevel       store.AlarmLevel // a level of P
	qLevel       store.AlarmLevel // a level of Q, named as no level of P
	ruleID       int64            // a rule of A
	other        tenant
	otherLevelID int64
}

func (e *env) newReachSite(t *testing.T, name string) reachSite {
	t.Helper()
	ctx := t.Context()
	s := reachSite{tn: e.newTenant(name), other: e.newTenant(name + " other")}
	tn := s.tn
	q, err := e.db.CreateProject(ctx, tn.orgID, name+" Q", "")
	if err != nil {
		t.Fatal(err)
	}
	s.q = q.ID
	s.b, s.c, s.d = e.newPiezometer(t, tn, tn.projectID, "B"), e.newPiezometer(t, tn, s.q, "C"), e.newPiezometer(t, tn, tn.projectID, "D")
	levels, _, err := e.db.ListAlarmLevels(ctx, tn.orgID, tn.projectID, 0, 1000)
	if err != nil || len(levels) == 0 {
		t.Fatalf("levels of P: %v %v", levels, err)
	}
	s.pLevel = levels[0]
	if s.qLevel, err = e.db.CreateAlarmLevel(ctx, tn.orgID, s.q, store.AlarmLevel{Name: "Only in Q", Rank: 50, Colour: "#123456"}); err != nil {
		t.Fatal(err)
	}
	otherLevels, _, err := e.db.ListAlarmLevels(ctx, s.other.orgID, s.other.projectID, 0, 1000)
	if err != nil || len(otherLevels) == 0 {
		t.Fatalf("levels of the other organization: %v %v", otherLevels, err)
	}
	s.otherLevelID = otherLevels[0].ID
	a := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID}
	rule, err := e.core.CreateAlarmRule(ctx, a, store.AlarmRuleSpec{TargetKey: "digits", Level: s.pLevel.Name, Direction: "above", Threshold: 1e9, Persistence: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.ruleID = rule.ID
	return s
}

// reachIDs are the resources a call names besides the ones in its path.
type reachIDs struct {
	org, project int64
	sensor       int64
	blueprint    int64
	levelID      int64
	levelName    string
}

// reachCall is an operation whose query or body names a resource, called
// through the generated client on the site's project P and piezometer A.
type reachCall struct {
	operationID string
	filter      string // the query parameter, for an operation called once per filter
	call        func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error)
}

// statusCoder is what the generated client's responses have in common.
type statusCoder interface{ StatusCode() int }

// statusOf is a generated client's answer as a status and a body.
func statusOf(res statusCoder, body func() []byte, err error) (int, []byte, error) {
	if err != nil {
		return 0, nil, err
	}
	return res.StatusCode(), body(), nil
}

var reachCalls = []reachCall{
	{"createToken", "", func(ctx context.Context, c *client.ClientWithResponses, _ reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.CreateTokenWithResponse(ctx, client.TokenCreate{Name: "narrower", Scope: &client.TokenScope{
			OrgId: ids.org, ProjectId: &ids.project, SensorIds: &[]int64{ids.sensor}}})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"createSensor", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.CreateSensorWithResponse(ctx, s.tn.orgID, s.tn.projectID, client.SensorCreate{Name: "E", BlueprintId: &ids.blueprint})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"updateSensor", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.UpdateSensorWithResponse(ctx, s.tn.orgID, s.tn.projectID, s.tn.instanceID, client.SensorUpdate{BlueprintId: &ids.blueprint})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"updateLinks", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.UpdateLinksWithResponse(ctx, s.tn.orgID, s.tn.projectID, s.tn.instanceID, client.LinksUpdate{"temp": {SensorId: ids.sensor, Key: "temp"}})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"createAlarmRule", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.CreateAlarmRuleWithResponse(ctx, s.tn.orgID, s.tn.projectID, s.tn.instanceID,
			client.AlarmRuleInput{Target: "pressure", Level: ids.levelName, Direction: client.AlarmRuleInputDirectionAbove, Threshold: 1e9})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"updateAlarmRule", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.UpdateAlarmRuleWithResponse(ctx, s.tn.orgID, s.tn.projectID, s.tn.instanceID, s.ruleID,
			client.AlarmRuleInput{Target: "digits", Level: ids.levelName, Direction: client.AlarmRuleInputDirectionAbove, Threshold: 2e9})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"setOverdueRule", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.SetOverdueRuleWithResponse(ctx, s.tn.orgID, s.tn.projectID, s.tn.instanceID, client.OverdueRuleInput{Level: ids.levelName, AfterSeconds: 3600})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"listProjectReadings", "", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.ListProjectReadingsWithResponse(ctx, s.tn.orgID, s.tn.projectID, &client.ListProjectReadingsParams{Sensors: ptr(strconv.FormatInt(ids.sensor, 10))})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"listAlarmEvents", "sensor_id", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.ListAlarmEventsWithResponse(ctx, s.tn.orgID, s.tn.projectID, &client.ListAlarmEventsParams{SensorId: &ids.sensor})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"projectStatus", "sensor_id", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.ProjectStatusWithResponse(ctx, s.tn.orgID, s.tn.projectID, &client.ProjectStatusParams{SensorId: &[]int64{ids.sensor}})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"listProjectAudit", "sensor_id", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.ListProjectAuditWithResponse(ctx, s.tn.orgID, s.tn.projectID, &client.ListProjectAuditParams{SensorId: &ids.sensor})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
	{"listAlarmEvents", "level_id", func(ctx context.Context, c *client.ClientWithResponses, s reachSite, ids reachIDs) (int, []byte, error) {
		res, err := c.ListAlarmEventsWithResponse(ctx, s.tn.orgID, s.tn.projectID, &client.ListAlarmEventsParams{LevelId: &ids.levelID})
		return statusOf(res, func() []byte { return res.Body }, err)
	}},
}

// inside is what every scope of TestScopeReach reaches: B, a level of P,
// the organization's blueprint (for the kinds the scope reaches at all).
func (s reachSite) inside() reachIDs {
	return reachIDs{org: s.tn.orgID, project: s.tn.projectID, sensor: s.b, blueprint: s.tn.blueprintID, levelID: s.pLevel.ID, levelName: s.pLevel.Name}
}

// reachScope is one kind of scope of the owner's tokens, with the
// resources outside it that a call may name, and what each call answers:
// 0 for a 2xx.
type reachScope struct {
	name    string
	scope   func(s reachSite) store.TokenScope
	outside func(s reachSite) reachIDs
	// want is the status of each call, by operation id, naming what is
	// inside the scope and what is outside.
	want map[string][2]int
}

var reachScopes = []reachScope{
	{
		name:  "Organization",
		scope: func(s reachSite) store.TokenScope { return store.TokenScope{OrgID: s.tn.orgID} },
		outside: func(s reachSite) reachIDs {
			return reachIDs{org: s.other.orgID, project: s.other.projectID, sensor: s.other.instanceID, blueprint: s.other.blueprintID, levelID: s.otherLevelID, levelName: s.qLevel.Name}
		},
		want: map[string][2]int{
			"createToken": {403, 403}, "createSensor": {0, 404}, "updateSensor": {0, 404}, "updateLinks": {0, 404},
			"createAlarmRule": {0, 400}, "updateAlarmRule": {0, 400}, "setOverdueRule": {0, 400},
			"listProjectReadings": {0, 404}, "listAlarmEvents": {0, 404}, "projectStatus": {0, 404}, "listProjectAudit": {0, 404},
		},
	},
	{
		name: "Project",
		scope: func(s reachSite) store.TokenScope {
			return store.TokenScope{OrgID: s.tn.orgID, ProjectID: s.tn.projectID}
		},
		outside: func(s reachSite) reachIDs {
			return reachIDs{org: s.tn.orgID, project: s.q, sensor: s.c, blueprint: s.other.blueprintID, levelID: s.qLevel.ID, levelName: s.qLevel.Name}
		},
		// The organization's blueprints are beyond a project, whichever.
		want: map[string][2]int{
			"createToken": {403, 403}, "createSensor": {403, 403}, "updateSensor": {403, 403}, "updateLinks": {0, 404},
			"createAlarmRule": {0, 400}, "updateAlarmRule": {0, 400}, "setOverdueRule": {0, 400},
			"listProjectReadings": {0, 404}, "listAlarmEvents": {0, 404}, "projectStatus": {0, 404}, "listProjectAudit": {0, 404},
		},
	},
	{
		name: "Sensors",
		scope: func(s reachSite) store.TokenScope {
			return store.TokenScope{OrgID: s.tn.orgID, ProjectID: s.tn.projectID, SensorIDs: []int64{s.tn.instanceID, s.b}}
		},
		outside: func(s reachSite) reachIDs {
			return reachIDs{org: s.tn.orgID, project: s.tn.projectID, sensor: s.d, blueprint: s.other.blueprintID, levelID: s.qLevel.ID, levelName: s.qLevel.Name}
		},
		// The project's levels are beyond sensors, whichever; so are the
		// project-wide operations, whatever they name, but for the status,
		// which narrows its answer to the scope.
		want: map[string][2]int{
			"createToken": {403, 403}, "createSensor": {403, 403}, "updateSensor": {403, 403}, "updateLinks": {0, 404},
			"createAlarmRule": {403, 403}, "updateAlarmRule": {403, 403}, "setOverdueRule": {403, 403},
			"listProjectReadings": {403, 403}, "listAlarmEvents": {403, 403}, "projectStatus": {0, 404}, "listProjectAudit": {403, 403},
		},
	},
	{
		name: "Device",
		scope: func(s reachSite) store.TokenScope {
			return store.TokenScope{OrgID: s.tn.orgID, ProjectID: s.tn.projectID, SensorIDs: []int64{s.tn.instanceID, s.b}, Device: true}
		},
		outside: func(s reachSite) reachIDs {
			return reachIDs{org: s.tn.orgID, project: s.tn.projectID, sensor: s.d, blueprint: s.other.blueprintID, levelID: s.qLevel.ID, levelName: s.qLevel.Name}
		},
		want: map[string][2]int{
			"createToken": {403, 403}, "createSensor": {403, 403}, "updateSensor": {403, 403}, "updateLinks": {403, 403},
			"createAlarmRule": {403, 403}, "updateAlarmRule": {403, 403}, "setOverdueRule": {403, 403},
			"listProjectReadings": {403, 403}, "listAlarmEvents": {403, 403}, "projectStatus": {403, 403}, "listProjectAudit": {403, 403},
		},
	},
}

// TestScopeReach calls every operation whose query or body names another
// resource with a token of each kind of scope, naming a resource outside
// the scope and then one inside: outside is refused (404 for another
// organization, project or sensor, 403 for a kind the scope never reaches,
// 400 for a level name the project does not have) and changes nothing;
// inside answers as it would for an unscoped token, when the scope may
// call the operation at all. A token limited to sensors A and B linking
// A's input to D, the leak, is the Sensors/updateLinks case.
func TestScopeReach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("EveryOperation", func(t *testing.T) {
		var called []string
		for _, c := range reachCalls {
			called = append(called, c.operationID)
		}
		for _, o := range e.specOperations() {
			id := o.operation.OperationID
			if namesInQueryOrBody(o.operation) != slices.Contains(called, id) {
				t.Errorf("%s: names a resource in its query or body: %v; called by TestScopeReach: %v",
					id, namesInQueryOrBody(o.operation), slices.Contains(called, id))
			}
		}
	})

	for _, sc := range reachScopes {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s := e.newReachSite(t, "Reach "+sc.name)
			_, secret, err := e.db.CreateScopedToken(t.Context(), s.tn.userIDs[store.Owner], "reach", nil, sc.scope(s))
			if err != nil {
				t.Fatal(err)
			}
			client := e.client(secret)
			for _, c := range reachCalls {
				want, ok := sc.want[c.operationID]
				if !ok {
					t.Fatalf("%s: no expected answers for %s", sc.name, c.operationID)
				}
				t.Run(strings.TrimSuffix(c.operationID+"/"+c.filter, "/"), func(t *testing.T) {
					before := e.snapshot(t, s.tn.orgID)
					status, body, err := c.call(t.Context(), client, s, sc.outside(s))
					if err != nil {
						t.Fatal(err)
					}
					if status != want[1] {
						t.Fatalf("%s naming what is outside a %s scope: %d %s, want %d", c.operationID, sc.name, status, body, want[1])
					}
					wantError(t, status, body, want[1], map[int]string{400: "invalid", 403: "forbidden", 404: "not_found"}[want[1]])
					if e.snapshot(t, s.tn.orgID) != before {
						t.Errorf("%s naming what is outside a %s scope was refused but changed the organization", c.operationID, sc.name)
					}

					status, body, err = c.call(t.Context(), client, s, s.inside())
					switch {
					case err != nil:
						t.Fatal(err)
					case want[0] == 0 && (status < 200 || status > 299):
						t.Fatalf("%s naming what is inside a %s scope: %d %s, want 2xx", c.operationID, sc.name, status, body)
					case want[0] != 0:
						wantError(t, status, body, want[0], map[int]string{403: "forbidden", 404: "not_found"}[want[0]])
					}
				})
			}
		})
	}
}

// namesInQueryOrBody tells whether the spec marks a query parameter or a
// body field of the operation with x-resource.
func namesInQueryOrBody(op *openapi3.Operation) bool {
	for _, p := range op.Parameters {
		if _, ok := p.Value.Extensions["x-resource"]; ok && p.Value.In == openapi3.ParameterInQuery {
			return true
		}
	}
	if op.RequestBody == nil {
		return false
	}
	for _, media := range op.RequestBody.Value.Content {
		if schemaNamesResource(media.Schema, 0) {
			return true
		}
	}
	return false
}

func schemaNamesResource(s *openapi3.SchemaRef, depth int) bool {
	if s == nil || s.Value == nil || depth > 10 {
		return false
	}
	v := s.Value
	if _, ok := v.Extensions["x-resource"]; ok {
		return true
	}
	for _, p := range v.Properties {
		if schemaNamesResource(p, depth+1) {
			return true
		}
	}
	return schemaNamesResource(v.Items, depth+1) || schemaNamesResource(v.AdditionalProperties.Schema, depth+1) ||
		slices.ContainsFunc(slices.Concat(v.AllOf, v.OneOf, v.AnyOf), func(s *openapi3.SchemaRef) bool { return schemaNamesResource(s, depth+1) })
}

// TestScopeReachSmuggled tries to slip a sensor beyond a token's scope past
// the check in a body the handler would read otherwise than the check
// does: every such body is refused, and the link is never set.
func TestScopeReachSmuggled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.newReachSite(t, "Smuggler")
	_, secret, err := e.db.CreateScopedToken(t.Context(), s.tn.userIDs[store.Owner], "reach", nil,
		store.TokenScope{OrgID: s.tn.orgID, ProjectID: s.tn.projectID, SensorIDs: []int64{s.tn.instanceID, s.b}})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/sensors/%d/links", s.tn.orgID, s.tn.projectID, s.tn.instanceID)
	for _, tt := range []struct {
		name, body string
		status     int
	}{
		{"Twice", `{"temp": {"sensor_id": %[1]d, "key": "temp"}, "temp": {"sensor_id": %[2]d, "key": "temp"}}`, 400},
		{"NameTwice", `{"temp": {"sensor_id": %[1]d, "sensor_id": %[2]d, "key": "temp"}}`, 400},
		{"OtherCase", `{"temp": {"Sensor_ID": %[2]d, "key": "temp"}}`, 400},
		{"String", `{"temp": {"sensor_id": "%[2]d", "key": "temp"}}`, 400},
		{"Fraction", `{"temp": {"sensor_id": %[2]d.5, "key": "temp"}}`, 400},
		{"Exponent", `{"temp": {"sensor_id": %[2]de0, "key": "temp"}}`, 400},
		{"NotJSON", `{"temp": {"sensor_id": %[2]d, "key": "temp"`, 400},
		{"Beyond", `{"temp": {"sensor_id": %[2]d, "key": "temp"}}`, 404},
		{"BeyondBesideInside", `{"temp": {"sensor_id": %[1]d, "key": "temp"}, "freq": {"sensor_id": %[2]d, "key": "freq"}}`, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := e.do(secret, "PUT", path, "application/json", strings.NewReader(fmt.Sprintf(tt.body, s.b, s.d)))
			wantError(t, res.StatusCode, body, tt.status, map[int]string{400: "invalid", 404: "not_found"}[tt.status])
			sensor, err := e.db.GetSensor(t.Context(), store.SensorKey{OrgID: s.tn.orgID, ProjectID: s.tn.projectID, SensorID: s.tn.instanceID})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range sensor.Instance.Inputs {
				if in.Link != nil {
					t.Errorf("input %s is linked to sensor %d", in.Key, in.Link.SensorID)
				}
			}
		})
	}
}
