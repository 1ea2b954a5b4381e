// Package openapitest checks, in tests, that every answer of the service is
// one that openapi.yaml describes: a documented status, and a body that keeps
// its schema, with the spec's rule for datetimes in responses (UTC with
// exactly three fractional digits). Integrators generate strict clients from
// the spec; an answer that drifts from it fails the test that got it.
//
// A test of the server in process wraps its handler (Contract.Handler), so
// that every answer is checked whatever sent the request: the generated
// client, net/http's default client or a raw socket. A test of the service
// run as a process checks what its client receives (Contract.Transport).
package openapitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/sensorreadings/readings/openapi"
)

// A YAML document and a stream of JSON lines are text on the wire, and the
// spec declares both as strings, which is what a validating proxy sees;
// kin-openapi would parse YAML into a tree first, and knows no decoder for
// JSON lines.
func init() {
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
}

// maxChecked is the largest body checked against its schema; the status and
// headers of a larger answer (a long export) are checked all the same.
const maxChecked = 32 << 20

// responseDatetime is the spec's one rule for a datetime in a response:
// UTC with exactly three fractional digits.
var responseDatetime = openapi3.NewRegexpFormatValidator(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// Contract is the spec, ready to check answers.
type Contract struct {
	router routers.Router
}

// Load reads the embedded spec. Its operations match requests to any host.
func Load() (*Contract, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	spec.Servers = nil
	router, err := legacy.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("route openapi.yaml: %w", err)
	}
	return &Contract{router: router}, nil
}

// Check returns why the answer to req breaks the contract, or nil. A
// request outside the spec's operations (an unknown path, a HEAD) is not
// checked: the test that sends it checks what it expects. body is the
// answer as sent, gzip included.
func (c *Contract) Check(req *http.Request, status int, header http.Header, body []byte) error {
	return c.check(req, status, header, body, true)
}

func (c *Contract) check(req *http.Request, status int, header http.Header, body []byte, withBody bool) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return nil
	}
	if header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("the gzip body does not open: %w", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("the gzip body does not open: %w", err)
		}
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus:   true,
			ExcludeResponseBody:     !withBody,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.WithStringFormatValidator("date-time", responseDatetime)},
		},
	}
	return openapi3filter.ValidateResponse(context.WithoutCancel(req.Context()), input)
}

// Handler serves h and fails t on every answer that breaks the contract.
// An answer that did not reach its client (it went away, or the handler
// cut the connection) is not checked.
func (c *Contract) Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil {
			return
		}
		if err := c.check(r, rec.code(), w.Header(), rec.body.Bytes(), !rec.tooLong); err != nil {
			t.Errorf("%s %s answered %d, which the spec does not describe: %v\nbody: %s",
				r.Method, r.URL, rec.code(), err, truncate(rec.body.Bytes(), 500))
		}
	})
}

// recorder passes an answer through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status  int
	body    bytes.Buffer
	tooLong bool
}

// code is the answer's status: 200 when the handler set none.
func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 && status >= 200 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if !r.tooLong {
		if r.body.Len()+len(p) > maxChecked {
			r.tooLong = true
			r.body = bytes.Buffer{}
		} else {
			r.body.Write(p)
		}
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection: flushes and
// deadlines work through the recorder.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// Transport sends requests through base and fails t on every answer that
// breaks the contract. It reads each answer whole before the caller does.
func (c *Contract) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		if err := c.Check(req, res.StatusCode, res.Header, body); err != nil {
			t.Errorf("%s %s answered %d, which the spec does not describe: %v\nbody: %s",
				req.Method, req.URL, res.StatusCode, err, truncate(body, 500))
		}
		return res, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
