package server

import (
	"errors"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
)

// streamedBodies are the operations whose bodies are checked while they
// stream (batch.Decode) instead of by the spec validator, which would
// build a tree of a whole 16 MiB batch first and cost more than storing it.
var streamedBodies = map[string]bool{"postReadings": true}

// validateRequest checks each request against its operation in the spec:
// parameters, their types and ranges, and the body's schema. The spec is the
// contract, so it is also the validator.
func (s *Server) validateRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		op := s.ops.lookup(c)
		if op == nil {
			return next(c)
		}
		req := c.Request()
		key, remember := validKey(c, op)
		if remember && s.validated.has(key) {
			return next(c)
		}
		if err := knownQuery(req.URL.Query(), op.route); err != nil {
			return err
		}
		if body := op.route.Operation.RequestBody; body != nil && req.ContentLength != 0 {
			mediaType, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
			if body.Value.Content.Get(mediaType) == nil {
				return echo.ErrUnsupportedMediaType
			}
		}
		params := make(map[string]string, len(c.ParamNames()))
		for i, name := range c.ParamNames() {
			params[name] = c.ParamValues()[i]
		}
		input := &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route:      op.route,
			Options: &openapi3filter.Options{
				ExcludeRequestBody:  streamedBodies[op.id],
				SkipSettingDefaults: true, // handlers apply defaults; the Link header repeats only what was sent
			},
		}
		if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
			return requestError(err)
		}
		if remember {
			s.validated.add(key)
		}
		return next(c)
	}
}

// validRequests remembers requests without a body that passed
// validateRequest, by everything the validator reads of them: the
// operation, its path parameters, the query and the operation's header
// parameters. The validator is a function of those alone (the body aside),
// so a request the same in all of them gets the same answer, and a
// console or chart asking for the same thing again (latest values every
// few seconds) costs a lookup rather than a walk of every parameter's
// schema, which was a twentieth of the service's CPU for latest values.
// Refusals are not remembered: they are answered anew, with their message.
type validRequests struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// Bounds of validRequests: a hostile client can fill it with distinct
// queries, but not past maxValidRequests keys of at most maxValidKey bytes
// (a few MB); it starts over when full.
const (
	maxValidRequests = 4096
	maxValidKey      = 512
)

// validKey is what the validator reads of c's request, and whether it may
// be remembered: not with a body, which the key leaves out, nor for an
// operation with cookie parameters, nor when longer than maxValidKey.
func validKey(c echo.Context, op *operation) ([]byte, bool) {
	req := c.Request()
	if req.ContentLength != 0 || op.cookies {
		return nil, false
	}
	b := make([]byte, 0, 128)
	b = append(b, op.id...)
	for i, name := range c.ParamNames() {
		b = append(b, 0)
		b = append(b, name...)
		b = append(b, '=')
		b = append(b, c.ParamValues()[i]...)
	}
	b = append(b, 0, '?')
	b = append(b, req.URL.RawQuery...)
	for _, name := range op.headers {
		for _, value := range req.Header.Values(name) {
			b = append(b, 0)
			b = append(b, name...)
			b = append(b, ':')
			b = append(b, value...)
		}
	}
	if len(b) > maxValidKey {
		return nil, false
	}
	return b, true
}

func (v *validRequests) has(key []byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.seen[string(key)] // no copy of key to look it up
	return ok
}

func (v *validRequests) add(key []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil || len(v.seen) >= maxValidRequests {
		v.seen = make(map[string]struct{})
	}
	v.seen[string(key)] = struct{}{}
}

// knownQuery refuses query parameters the operation does not declare,
// which kin-openapi lets through: a filter misspelt or guessed (?from= for
// ?datetime__gte=) would be ignored, and the answer look filtered when it
// is not.
func knownQuery(query url.Values, route *routers.Route) error {
	var unknown []string
	for name := range query {
		if queryParameter(route, name) == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	var declared []string
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range params {
			if p.Value.In == openapi3.ParameterInQuery {
				declared = append(declared, p.Value.Name)
			}
		}
	}
	takes := "takes none"
	if len(declared) > 0 {
		takes = "takes " + strings.Join(declared, ", ")
	}
	return &apperr.Error{
		Code: apperr.Invalid,
		Message: fmt.Sprintf("query parameter %s: not a parameter of %s %s, which %s",
			quoteAll(unknown), route.Method, route.Path, takes),
		Details: map[string]any{"parameter": unknown[0]},
	}
}

// queryParameter is the operation's query parameter name, or nil.
func queryParameter(route *routers.Route, name string) *openapi3.Parameter {
	if p := route.Operation.Parameters.GetByInAndName(openapi3.ParameterInQuery, name); p != nil {
		return p
	}
	return route.PathItem.Parameters.GetByInAndName(openapi3.ParameterInQuery, name)
}

func quoteAll(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// requestError turns the validator's error into a sentence that names the
// parameter or body field and what the spec allows.
func requestError(err error) error {
	reqErr, ok := errors.AsType[*openapi3filter.RequestError](err)
	if !ok {
		return apperr.Wrap(apperr.Invalid, err, "the request does not match the API: %v", err)
	}
	if tooBig := bodyError(reqErr.Err); apperr.CodeOf(tooBig) == apperr.TooLarge {
		return tooBig
	}
	schemaErr, _ := errors.AsType[*openapi3.SchemaError](reqErr.Err)
	if p := reqErr.Parameter; p != nil {
		reason := reqErr.Reason
		if schemaErr != nil {
			reason = schemaErr.Reason
		} else if reqErr.Err != nil {
			reason = reqErr.Err.Error()
		}
		if allowed := allowedRange(p.Schema); allowed != "" {
			reason += "; " + allowed
		}
		return &apperr.Error{
			Code:    apperr.Invalid,
			Message: fmt.Sprintf("%s parameter %q: %s", p.In, p.Name, reason),
			Details: map[string]any{"parameter": p.Name},
		}
	}
	if errors.Is(reqErr.Err, openapi3filter.ErrInvalidRequired) {
		return apperr.Errorf(apperr.Invalid, "a JSON body is required")
	}
	if schemaErr != nil {
		field := "/" + strings.Join(schemaErr.JSONPointer(), "/")
		reason := schemaErr.Reason
		// A regular expression says little to a person: the spec says in
		// words what its patterns forbid.
		if schemaErr.Schema != nil && schemaErr.SchemaField == "pattern" {
			if message, ok := schemaErr.Schema.Extensions["x-pattern-message"].(string); ok {
				reason = message
			}
		}
		return &apperr.Error{
			Code:    apperr.Invalid,
			Message: fmt.Sprintf("body field %q: %s", field, reason),
			Details: map[string]any{"field": field},
		}
	}
	return apperr.Wrap(apperr.Invalid, err, "the body does not match the API: %s", reqErr.Reason)
}

// allowedRange says what values a numeric schema allows, or "".
func allowedRange(ref *openapi3.SchemaRef) string {
	if ref == nil || ref.Value == nil {
		return ""
	}
	s := ref.Value
	switch {
	case s.Min != nil && s.Max != nil:
		return fmt.Sprintf("allowed: %v to %v", *s.Min, *s.Max)
	case s.Min != nil:
		return fmt.Sprintf("allowed: %v or more", *s.Min)
	case len(s.Enum) > 0:
		return fmt.Sprintf("allowed: %v", s.Enum)
	}
	return ""
}
