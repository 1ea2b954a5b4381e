package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

const specTemplate = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /api/v1/org/{org_id}/things:
    get:
      operationId: listThings
      %s
      parameters:
        - {name: org_id, in: path, required: true, x-resource: organization, schema: {type: integer}}
      responses:
        "200": {description: ok}
`

func TestLoadOperations(t *testing.T) {
	for _, tt := range []struct {
		name, extra, wantErr string
	}{
		{"Declared", "x-required-role: viewer", ""},
		{"Missing", "", "x-required-role"},
		{"Unknown", "x-required-role: superuser", `"superuser"`},
		{"PublicNeedsNoSecurity", "x-required-role: public", "security: []"},
		{"PublicWithoutSecurity", "x-required-role: public\n      security: []", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := openapi3.NewLoader().LoadFromData([]byte(strings.Replace(specTemplate, "%s", tt.extra, 1)))
			if err != nil {
				t.Fatal(err)
			}
			ops, err := loadOperations(spec)
			if tt.wantErr == "" {
				if err != nil || ops[route{"GET", "/api/v1/org/:org_id/things"}] == nil {
					t.Fatalf("loadOperations = %v, %v; want the operation", ops, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("loadOperations error = %v, want one mentioning %s", err, tt.wantErr)
			}
		})
	}
}

// refsTemplate is an operation whose path (a project's sensor's, or the
// organization's), parameter or body (under properties:) may name
// resources.
const refsTemplate = `
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  %s:
    put:
      operationId: putThing
      x-required-role: admin
      parameters:
        - {name: org_id, in: path, required: true, x-resource: organization, schema: {type: integer}}
        %s
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                name: {type: string}
                %s
      responses:
        "200": {description: ok}
`

// TestLoadOperationsRefs checks that the server refuses to start on an
// operation naming a resource the authorization step could not check, and
// finds the ones it can.
func TestLoadOperationsRefs(t *testing.T) {
	const (
		sensorPath   = "/api/v1/org/{org_id}/proj/{proj_id}/sensors/{sensor_id}/things"
		sensorParams = `- {name: proj_id, in: path, required: true, x-resource: project, schema: {type: integer}}
        - {name: sensor_id, in: path, required: true, x-resource: sensor, schema: {type: integer}}
        `
		orgPath = "/api/v1/org/{org_id}/things"
	)
	for _, tt := range []struct {
		name, param, property, wantErr string
		orgLevel                       bool
	}{
		{"Nothing", "", "", "", false},
		{"QueryID", "- {name: sensor_id, in: query, x-resource: sensor, schema: {type: integer}}", "", "", false},
		{"QueryList", "- {name: sensors, in: query, x-resource: sensor, schema: {type: string}}", "", "", false},
		{"BodyID", "", "source_id: {type: integer, x-resource: sensor}", "", false},
		{"BodyIDs", "", "sensor_ids: {type: array, items: {type: integer}, x-resource: sensor}", "", false},
		{"BodyIDInMap", "", "links: {type: object, additionalProperties: {type: object, properties: {sensor_id: {type: integer, x-resource: sensor}}}}", "", false},
		{"BodyIDInArray", "", "items: {type: array, items: {type: object, properties: {level_id: {type: integer, x-resource: level}}}}", "", false},
		{"BodyLevelByName", "", "level: {type: string, x-resource: level}", "", false},
		{"QueryIDUndeclared", "- {name: level_id, in: query, schema: {type: integer}}", "", `"level_id" looks like it names a resource`, false},
		{"QueryListUndeclared", "- {name: sensors, in: query, schema: {type: string}}", "", `"sensors" looks like it names a resource`, false},
		{"BodyIDUndeclared", "", "source_id: {type: integer}", `"source_id" looks like it names a resource`, false},
		{"BodyNameUndeclared", "", "level: {type: string}", `"level" looks like it names a resource`, false},
		{"DeepBodyIDUndeclared", "", "links: {type: object, additionalProperties: {type: object, properties: {sensor_id: {type: integer}}}}", `/links/*/sensor_id`, false},
		{"UnknownKind", "", "gauge_id: {type: integer, x-resource: gauge}", `x-resource gauge is none of the kinds`, false},
		{"HeaderID", "- {name: X-Sensor-Id, in: header, x-resource: sensor, schema: {type: integer}}", "", "only path and query parameters", false},
		{"SensorByName", "", "sensor: {type: string, x-resource: sensor}", "a field naming a sensor is an integer id", false},
		{"ComposedSchema", "", "source: {oneOf: [{type: object, properties: {sensor_id: {type: integer, x-resource: sensor}}}]}", "composed schema", false},
		{"OrgLevelBlueprint", "", "blueprint_id: {type: integer, x-resource: blueprint}", "", true},
		{"OrgLevelSensor", "", "sensor_id: {type: integer, x-resource: sensor}", "only a project in the path or beside it", true},
		{"OrgLevelQuerySensor", "- {name: sensor_id, in: query, x-resource: sensor, schema: {type: integer}}", "", "only a project in the path", true},
		{"OrgLevelSensorBesideItsProject", "", "scope: {type: object, properties: {project_id: {type: integer, x-resource: project}, sensor_ids: {type: array, items: {type: integer}, x-resource: sensor}}}", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, params := sensorPath, sensorParams+tt.param
			if tt.orgLevel {
				path, params = orgPath, tt.param
			}
			doc := strings.Replace(refsTemplate, "%s", path, 1)
			doc = strings.Replace(doc, "%s", params, 1)
			doc = strings.Replace(doc, "%s", tt.property, 1)
			spec, err := openapi3.NewLoader().LoadFromData([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = loadOperations(spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("loadOperations = %v, want the operation", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("loadOperations error = %v, want one mentioning %s", err, tt.wantErr)
			}
		})
	}
}

// TestLookupAllocatesNothing: the operations are looked up four times a
// request (authenticate, limitStreams, validateRequest, the access log),
// with no allocation, whatever the length of the route's path.
func TestLookupAllocatesNothing(t *testing.T) {
	const path = "/api/v1/org/:org_id/proj/:proj_id/latest"
	ops := operations{route{http.MethodGet, path}: {id: "latestReadings"}}
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/v1/org/1/proj/2/latest", nil), httptest.NewRecorder())
	c.SetPath(path)
	if op := ops.lookup(c); op == nil || op.id != "latestReadings" {
		t.Fatalf("lookup = %v, want latestReadings", op)
	}
	if got := testing.AllocsPerRun(100, func() { ops.lookup(c) }); got != 0 {
		t.Errorf("lookup: %v allocations, want 0", got)
	}
}
