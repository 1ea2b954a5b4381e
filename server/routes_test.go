package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sensorreadings/readings/store"
)

// specOperations lists every operation of the spec with its path template.
func (e *env) specOperations() []specOperation {
	var ops []specOperation
	for path, item := range e.spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, specOperation{method, path, op})
		}
	}
	return ops
}

type specOperation struct {
	method, path string
	operation    *openapi3.Operation
}

// TestHead checks that every GET operation answers HEAD as it answers GET:
// the same status and headers, and no body.
func TestHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, o := range e.specOperations() {
		if o.method != http.MethodGet {
			continue
		}
		t.Run(o.operation.OperationID, func(t *testing.T) {
			f := e.newMatrixFixture(t, i)
			header := roleHeader(store.Owner)(e, f)
			token := strings.TrimPrefix(header, "Bearer ")
			// Go's transport asks for gzip and unzips on GET, not on HEAD;
			// each encoding is asked for outright to compare like with like.
			for _, encoding := range []string{"identity", "gzip"} {
				accept := func(req *http.Request) { req.Header.Set("Accept-Encoding", encoding) }
				get, getBody := e.sendExample(t, http.MethodGet, o.path, o.operation, f, header, token, accept)
				head, headBody := e.sendExample(t, http.MethodHead, o.path, o.operation, f, header, token, accept)
				if head.StatusCode != get.StatusCode {
					t.Fatalf("HEAD %s: %d, want GET's %d", o.path, head.StatusCode, get.StatusCode)
				}
				if len(headBody) != 0 {
					t.Errorf("HEAD %s sent a body: %s", o.path, truncate(headBody, 200))
				}
				if len(getBody) == 0 {
					t.Errorf("GET %s sent no body; the comparison proves little", o.path)
				}
				for _, name := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Cache-Control", "Link"} {
					if got, want := head.Header.Get(name), get.Header.Get(name); got != want {
						t.Errorf("HEAD %s (Accept-Encoding %s): %s %q, want GET's %q", o.path, encoding, name, got, want)
					}
				}
			}
		})
	}
}

// TestExtraSegments checks that a path with segments after an id that ends
// an operation's path is no operation's: 404, not the id refused as
// "9/foo".
func TestExtraSegments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	fixture := matrixFixture{tenant: tn, tokenIDs: map[string]int64{}}
	for _, o := range e.specOperations() {
		if !strings.HasSuffix(o.path, "}") {
			continue
		}
		t.Run(o.operation.OperationID, func(t *testing.T) {
			path := o.path
			for _, name := range pathParamNames(path) {
				path = strings.Replace(path, "{"+name+"}", pathParam(t, fixture, o.operation.OperationID, name, ""), 1)
			}
			req, err := http.NewRequest(o.method, e.url+path+"/foo", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Owner])
			res, err := e.httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			wantError(t, res.StatusCode, body, http.StatusNotFound, "not_found")
		})
	}
}

// TestUnknownQueryParameters sends every operation's example with a query
// parameter it does not declare: 400 naming it, and nothing changed. A
// filter misspelt or guessed (?from= for ?datetime__gte=) must not be
// silently ignored.
func TestUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, o := range e.specOperations() {
		t.Run(o.operation.OperationID, func(t *testing.T) {
			f := e.newMatrixFixture(t, i)
			header := roleHeader(store.Owner)(e, f)
			before := e.snapshot(t, f.tenant.orgID)
			res, body := e.sendExample(t, o.method, o.path, o.operation, f, header, strings.TrimPrefix(header, "Bearer "),
				func(req *http.Request) {
					q := req.URL.Query()
					q.Set("from", "2024-05-01T00:00:00Z")
					req.URL.RawQuery = q.Encode()
				})
			got := wantError(t, res.StatusCode, body, http.StatusBadRequest, "invalid")
			if got.Details == nil || (*got.Details)["parameter"] != "from" || !strings.Contains(got.Message, `"from"`) {
				t.Errorf("error %+v, want it to name the parameter from, in the message and details.parameter", got)
			}
			if e.snapshot(t, f.tenant.orgID) != before {
				t.Errorf("%s with an unknown parameter changed the organization", o.operation.OperationID)
			}
		})
	}
}
