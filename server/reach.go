package server

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// kind is a kind of resource that a request names, by id or (an alarm
// level in a rule) by name. The spec says which parameters and body fields
// name one, and of which kind, with x-resource.
type kind string

const (
	organization kind = "organization"
	project      kind = "project"
	sensor       kind = "sensor"
	blueprint    kind = "blueprint"
	member       kind = "member"
	invitation   kind = "invitation"
	level        kind = "level"
	alarm        kind = "alarm"
	webhook      kind = "webhook"
	rule         kind = "rule"
	token        kind = "token"
)

// within is every kind the authorization step knows, with the kind its ids
// are resolved within: a request that names one names that one too (in its
// path, or beside it in the body), so that the store looks the id up
// there, and nowhere else. Organizations are the caller's memberships and
// tokens the caller's own.
var within = map[kind]kind{
	organization: "",
	project:      organization,
	sensor:       project,
	blueprint:    organization,
	member:       organization,
	invitation:   organization,
	level:        project,
	alarm:        project,
	webhook:      project,
	rule:         sensor,
	token:        "",
}

// beyond tells why scope does not reach the resource n, or nil. The organization, project and
// sensors of a scope are compared with what the request names: another one
// is not found, as for a non-member, whether or not it exists. A kind that
// lies above the scope (the organization's blueprints for a token limited
// to a project, the project's levels for one limited to sensors) is beyond
// it whatever the id, as is an operation that names none of the scope
// (scopeRefuses): forbidden, naming what reached out.
func (n named) beyond(scope store.TokenScope, operationID string) error {
	var out bool
	switch n.kind {
	case organization:
		out = n.id != scope.OrgID
	case project:
		out = scope.ProjectID != 0 && n.id != scope.ProjectID
	case sensor:
		out = len(scope.SensorIDs) > 0 && !slices.Contains(scope.SensorIDs, n.id)
	case blueprint, member, invitation:
		if scope.ProjectID != 0 {
			return n.refused(apperr.Forbidden, fmt.Sprintf("%s: this token is limited to project %d, and %s names one of the organization's %ss, which are beyond it",
				operationID, scope.ProjectID, n.where(), n.kind))
		}
	case level, alarm, webhook:
		if len(scope.SensorIDs) > 0 {
			return n.refused(apperr.Forbidden, fmt.Sprintf("%s: this token is limited to sensors %v, and %s names one of the project's %ss, which are beyond it",
				operationID, scope.SensorIDs, n.where(), n.kind))
		}
	}
	switch {
	case !out:
		return nil
	case n.in == openapi3.ParameterInPath:
		return apperr.Errorf(apperr.NotFound, "%s not found", n.kind)
	}
	return n.refused(apperr.NotFound, fmt.Sprintf("%s: %s %d not found", n.where(), n.kind, n.id))
}

// byID is whether a scope's reach of a kind depends on which one is
// named; it reaches the others whole or not at all, so they may be named
// by name as well.
func (k kind) byID() bool { return k == organization || k == project || k == sensor }

// refs is where an operation names resources, as its spec declares.
type refs struct {
	path, query []paramRef
	body        *fields // nil when the body names none
}

// paramRef is a path or query parameter that names a resource.
type paramRef struct {
	name string
	kind kind
	list bool // comma-separated ids
}

// fields is how to find the resources in a JSON body: the kind of the value
// at this place, if it names one, and the places below that do.
type fields struct {
	kind       kind
	byName     bool               // a name (a string), not an id or an array of ids
	properties map[string]*fields // by member name, of an object
	members    *fields            // every member, of a map
	items      *fields            // every item, of an array
}

// pathNames tells whether the operation's path names a resource of kind k.
func (r refs) pathNames(k kind) bool {
	return slices.ContainsFunc(r.path, func(p paramRef) bool { return p.kind == k })
}

// named is one resource a request names.
type named struct {
	kind kind
	id   int64  // 0 when named by name
	in   string // path, query or body
	name string // the parameter's name, or the body field's JSON pointer
}

func (n named) where() string {
	if n.in == "body" {
		return fmt.Sprintf("body field %q", n.name)
	}
	return fmt.Sprintf("%s parameter %q", n.in, n.name)
}

// refused is an error about n, with the parameter or field in its details
// as the validator's errors have them.
func (n named) refused(code apperr.Code, message string) error {
	detail := "parameter"
	if n.in == "body" {
		detail = "field"
	}
	return &apperr.Error{Code: code, Message: message, Details: map[string]any{detail: n.name}}
}

// named reads every resource the request names. An id that does not parse
// in the query or the body is a 400 (the validator and the handler would
// refuse it too); in the path it is one of no resource in reach.
func (r refs) named(c echo.Context) (out []named, err error) {
	for _, p := range r.path {
		id, err := strconv.ParseInt(c.Param(p.name), 10, 64)
		if err != nil {
			return nil, apperr.Errorf(apperr.NotFound, "%s not found", p.kind)
		}
		out = append(out, named{kind: p.kind, id: id, in: openapi3.ParameterInPath, name: p.name})
	}
	query := c.QueryParams()
	for _, p := range r.query {
		for _, value := range query[p.name] {
			values := []string{value}
			if p.list {
				values = strings.Split(value, ",")
			}
			for _, v := range values {
				n := named{kind: p.kind, in: openapi3.ParameterInQuery, name: p.name}
				if n.id, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, n.refused(apperr.Invalid, fmt.Sprintf("%s: %q is not a %s id", n.where(), v, p.kind))
				}
				out = append(out, n)
			}
		}
	}
	if r.body == nil {
		return out, nil
	}
	body, err := peekBody(c)
	if err != nil || len(body) == 0 {
		return out, err
	}
	if err := r.body.collect(body, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// peekBody reads the request's body and leaves it to be read again by the
// validator and the handler. Only operations whose body names resources
// are read here, and only for a scoped token: small JSON bodies, which the
// validator reads whole anyway.
func peekBody(c echo.Context) ([]byte, error) {
	req := c.Request()
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); mediaType != echo.MIMEApplicationJSON {
		return nil, echo.ErrUnsupportedMediaType
	}
	b, err := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil, bodyError(err)
	}
	return b, nil
}

// collect appends what v, at pointer in the body, names. It decodes as the
// handler's decoder does (jsonSerializer: go-json-experiment, duplicate
// names refused), so that what is checked is what the handler acts on.
func (f *fields) collect(v jsontext.Value, pointer string, out *[]named) (err error) {
	if v.Kind() == 'n' { // null: the field is absent
		return nil
	}
	n := named{kind: f.kind, in: "body", name: cmp.Or(pointer, "/")}
	switch {
	case f.kind != "" && f.byName:
		*out = append(*out, n)
	case f.kind != "":
		var ids []int64
		if v.Kind() == '[' {
			err = json.Unmarshal(v, &ids)
		} else {
			ids = []int64{0}
			err = json.Unmarshal(v, &ids[0])
		}
		if err != nil {
			return n.refused(apperr.Invalid, fmt.Sprintf("%s: not a %s id", n.where(), f.kind))
		}
		for _, id := range ids {
			n.id = id
			*out = append(*out, n)
		}
	case f.items != nil:
		var items []jsontext.Value
		if err := json.Unmarshal(v, &items); err != nil {
			return bodyError(err)
		}
		for i, item := range items {
			if err := f.items.collect(item, pointer+"/"+strconv.Itoa(i), out); err != nil {
				return err
			}
		}
	default:
		var members map[string]jsontext.Value
		if err := json.Unmarshal(v, &members); err != nil {
			return bodyError(err)
		}
		for _, name := range slices.Sorted(maps.Keys(members)) {
			below := f.properties[name]
			if below == nil {
				below = f.members
			}
			if below == nil {
				continue
			}
			if err := below.collect(members[name], pointer+"/"+jsonPointerEscape(name), out); err != nil {
				return err
			}
		}
	}
	return nil
}

func jsonPointerEscape(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// loadRefs reads where an operation names resources. It fails on a
// parameter or body field that looks like it names one (an id, a name like
// a kind's) without saying which kind, on a kind the authorization step
// does not know, on a place it cannot read ids from, and on a kind named
// without what it lies within: then no request could be checked.
func loadRefs(item *openapi3.PathItem, op *openapi3.Operation) (refs, error) {
	var r refs
	for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range params {
			ref, ok, err := paramResource(p.Value)
			switch {
			case err != nil:
				return refs{}, err
			case !ok:
			case p.Value.In == openapi3.ParameterInPath:
				r.path = append(r.path, ref)
			default:
				r.query = append(r.query, ref)
			}
		}
	}
	pathKinds := map[kind]bool{}
	for _, p := range r.path {
		pathKinds[p.kind] = true
	}
	for _, p := range r.query {
		if up := within[p.kind]; up != "" && !pathKinds[up] {
			return refs{}, fmt.Errorf("query parameter %q names a %s, which only a %s in the path can be looked up within", p.name, p.kind, up)
		}
	}
	if op.RequestBody == nil {
		return r, nil
	}
	for mediaType, media := range op.RequestBody.Value.Content {
		f, err := bodyFields(media.Schema, "", pathKinds)
		switch {
		case err != nil:
			return refs{}, fmt.Errorf("%s body: %w", mediaType, err)
		case f != nil && mediaType != echo.MIMEApplicationJSON:
			return refs{}, fmt.Errorf("%s body names resources; only JSON bodies can be checked", mediaType)
		case f != nil && streamedBodies[op.OperationID]:
			return refs{}, fmt.Errorf("its streamed body names resources; only bodies read whole can be checked")
		case f != nil:
			r.body = f
		}
	}
	return r, nil
}

// looksLikeResource tells whether a parameter or field name seems to name a
// resource, so that it must say with x-resource which kind, if any.
func looksLikeResource(name string) bool {
	if name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ids") {
		return true
	}
	_, ok := within[kind(strings.TrimSuffix(name, "s"))]
	return ok
}

// declaredKind reads an x-resource extension: ok is false without one.
func declaredKind(extensions map[string]any, name string) (kind, bool, error) {
	declared, present := extensions["x-resource"]
	if !present {
		if looksLikeResource(name) {
			return "", false, fmt.Errorf("%q looks like it names a resource: declare which kind with x-resource", name)
		}
		return "", false, nil
	}
	s, _ := declared.(string)
	k := kind(s)
	if _, known := within[k]; !known {
		return "", false, fmt.Errorf("%q: x-resource %v is none of the kinds the authorization step knows (%s)", name, declared, knownKinds())
	}
	return k, true, nil
}

func knownKinds() string {
	names := make([]string, 0, len(within))
	for k := range within {
		names = append(names, string(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func paramResource(p *openapi3.Parameter) (paramRef, bool, error) {
	k, ok, err := declaredKind(p.Extensions, p.Name)
	if err != nil || !ok {
		return paramRef{}, false, wrapParam(p, err)
	}
	ref := paramRef{name: p.Name, kind: k}
	switch {
	case p.In != openapi3.ParameterInPath && p.In != openapi3.ParameterInQuery:
		return paramRef{}, false, wrapParam(p, fmt.Errorf("only path and query parameters can name resources"))
	case isType(p.Schema, openapi3.TypeInteger):
	case p.In == openapi3.ParameterInQuery && isType(p.Schema, openapi3.TypeString):
		ref.list = true
	case p.In == openapi3.ParameterInQuery && isType(p.Schema, openapi3.TypeArray) && isType(p.Schema.Value.Items, openapi3.TypeInteger) &&
		(p.Explode == nil || *p.Explode) && (p.Style == "" || p.Style == openapi3.SerializationForm):
		// Repeated, each an id: named reads every value of the parameter.
	default:
		return paramRef{}, false, wrapParam(p, fmt.Errorf("a parameter naming a %s is an integer id, or in the query a string of comma-separated ids or a repeated integer id", k))
	}
	return ref, true, nil
}

func wrapParam(p *openapi3.Parameter, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s parameter %s: %w", p.In, p.Name, err)
}

func isType(s *openapi3.SchemaRef, t string) bool {
	return s != nil && s.Value != nil && s.Value.Type.Is(t)
}

// bodyFields finds the fields of a body schema that name resources, nil
// when none does. pathKinds are the kinds the operation's path names.
func bodyFields(s *openapi3.SchemaRef, pointer string, pathKinds map[kind]bool) (*fields, error) {
	if s == nil || s.Value == nil {
		return nil, nil
	}
	v := s.Value
	if len(v.OneOf) > 0 || len(v.AnyOf) > 0 || len(v.AllOf) > 0 || v.Not != nil {
		// Composed schemas would need the validator's own choice of branch;
		// none of this API's request bodies names a resource in one.
		for _, sub := range slices.Concat(v.OneOf, v.AnyOf, v.AllOf) {
			if f, err := bodyFields(sub, pointer, pathKinds); err != nil || f != nil {
				return nil, cmp.Or(err, fmt.Errorf("%s: a composed schema (oneOf, anyOf, allOf) names a resource; spell it out", cmp.Or(pointer, "/")))
			}
		}
	}
	f := &fields{}
	found := false
	if len(v.Properties) > 0 {
		own := map[kind]bool{}
		for name, p := range v.Properties {
			if p.Value == nil {
				continue
			}
			k, ok, err := declaredKind(p.Value.Extensions, name)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", pointer, name, err)
			}
			if ok {
				own[k] = true
			}
		}
		for _, name := range slices.Sorted(maps.Keys(v.Properties)) {
			p := v.Properties[name]
			below, err := propertyFields(p, pointer+"/"+jsonPointerEscape(name), pathKinds, own)
			if err != nil {
				return nil, err
			}
			if below != nil {
				if f.properties == nil {
					f.properties = map[string]*fields{}
				}
				f.properties[name], found = below, true
			}
		}
	}
	if ap := v.AdditionalProperties.Schema; ap != nil {
		below, err := propertyFields(ap, pointer+"/*", pathKinds, nil)
		if err != nil {
			return nil, err
		}
		f.members, found = below, found || below != nil
	}
	if v.Items != nil {
		below, err := propertyFields(v.Items, pointer+"/*", pathKinds, nil)
		if err != nil {
			return nil, err
		}
		f.items, found = below, found || below != nil
	}
	if !found {
		return nil, nil
	}
	return f, nil
}

// propertyFields is bodyFields for one place of a body: the resource it
// names, or the fields below it. siblings are the kinds the other fields
// of its object name.
func propertyFields(s *openapi3.SchemaRef, pointer string, pathKinds, siblings map[kind]bool) (*fields, error) {
	if s == nil || s.Value == nil {
		return nil, nil
	}
	k, ok, err := declaredKind(s.Value.Extensions, pointer[strings.LastIndex(pointer, "/")+1:])
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", pointer, err)
	case !ok:
		return bodyFields(s, pointer, pathKinds)
	}
	if up := within[k]; up != "" && !pathKinds[up] && !siblings[up] {
		return nil, fmt.Errorf("%s names a %s, which only a %s in the path or beside it can be looked up within", pointer, k, up)
	}
	v := s.Value
	switch {
	case v.Type.Is(openapi3.TypeInteger), v.Type.Is(openapi3.TypeArray) && isType(v.Items, openapi3.TypeInteger):
		return &fields{kind: k}, nil
	case v.Type.Is(openapi3.TypeString) && !k.byID():
		// By name, within what the path names: only whether it is there
		// can be beyond a scope (named.beyond), not which it is.
		return &fields{kind: k, byName: true}, nil
	}
	return nil, fmt.Errorf("%s: a field naming a %s is an integer id or an array of them (or, for kinds a scope reaches whole or not at all, a name)", pointer, k)
}
