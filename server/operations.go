package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/store"
)

// requirement is who may call an operation: public (anyone), user (any valid
// token) or a member of the path's organization with at least a role.
type requirement struct {
	public bool
	role   store.Role // empty for public and user
	device bool       // a device token may call it (x-device)
	// narrows: a scoped token gets what its scope reaches rather than 403
	// when the path names no project or sensor of it (x-scope: narrows).
	narrows bool
}

func parseRequirement(s string) (requirement, error) {
	switch s {
	case "public":
		return requirement{public: true}, nil
	case "user":
		return requirement{}, nil
	}
	if role := store.Role(s); role.Valid() {
		return requirement{role: role}, nil
	}
	return requirement{}, fmt.Errorf("x-required-role %q is none of public, user, viewer, editor, admin, owner", s)
}

// operation is what the spec says of one of its operations.
type operation struct {
	id    string
	needs requirement
	names refs           // the resources its requests name (x-resource)
	route *routers.Route // for validateRequest, which checks shape only
	// headers are the names of its header parameters, and cookies tells
	// whether it has cookie parameters: what validRequests keys on.
	headers []string
	cookies bool
}

// operations finds an operation by Echo's method and route path.
type operations map[route]*operation

// route is an operation's method and Echo's route path. A pair rather
// than one string: lookup runs four times a request, and joining a method
// to a path longer than 32 bytes allocated each time.
type route struct{ method, path string }

// loadOperations reads every operation of the spec with the role it
// requires and the resources it names. A missing or unknown
// x-required-role is an error, so that no operation is served before
// someone decides who may call it; so is a parameter or body field that
// names a resource the authorization step could not check (loadRefs).
func loadOperations(spec *openapi3.T) (operations, error) {
	ops := operations{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			declared, _ := op.Extensions["x-required-role"].(string)
			needs, err := parseRequirement(declared)
			if err != nil {
				return nil, fmt.Errorf("%s %s (%s): %w", method, path, op.OperationID, err)
			}
			if needs.role != "" && !strings.Contains(path, "{org_id}") {
				return nil, fmt.Errorf("%s %s (%s): role %s needs an {org_id} in the path", method, path, op.OperationID, needs.role)
			}
			if needs.public != (op.Security != nil && len(*op.Security) == 0) {
				return nil, fmt.Errorf("%s %s (%s): public operations, and only they, have security: []", method, path, op.OperationID)
			}
			needs.device, _ = op.Extensions["x-device"].(bool)
			switch scope, _ := op.Extensions["x-scope"].(string); scope {
			case "":
			case "narrows":
				needs.narrows = true
			default:
				return nil, fmt.Errorf("%s %s (%s): x-scope %q is not narrows", method, path, op.OperationID, scope)
			}
			names, err := loadRefs(item, op)
			if err != nil {
				return nil, fmt.Errorf("%s %s (%s): %w", method, path, op.OperationID, err)
			}
			// Who may call an operation is authenticate's to decide, not the
			// validator's. Given security requirements, kin-openapi reads
			// the whole body into memory to offer it to an authentication
			// func, even a no-op one, before the streaming decoder sees a
			// byte.
			shapeOnly := *op
			shapeOnly.Security = &openapi3.SecurityRequirements{}
			o := &operation{
				id:    op.OperationID,
				needs: needs,
				names: names,
				route: &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: &shapeOnly},
			}
			for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range params {
					switch p.Value.In {
					case openapi3.ParameterInHeader:
						o.headers = append(o.headers, p.Value.Name)
					case openapi3.ParameterInCookie:
						o.cookies = true
					}
				}
			}
			ops[route{method, echoPath(path)}] = o
		}
	}
	return ops, nil
}

// echoPath turns /org/{org_id} into Echo's /org/:org_id.
func echoPath(specPath string) string {
	return strings.NewReplacer("{", ":", "}", "").Replace(specPath)
}

// lookup returns the operation Echo routed c to, or nil for routes outside
// the spec (404s, 405s, /metrics).
func (ops operations) lookup(c echo.Context) *operation {
	method := c.Request().Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	return ops[route{method, c.Path()}]
}
