package server

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
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
        - {name: org_id, in: path, required: true, schema: {type: integer}}
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
				if err != nil || ops[routeKey("GET", "/api/v1/org/:org_id/things")] == nil {
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
