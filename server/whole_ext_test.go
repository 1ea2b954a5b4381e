package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/openapi/openapitest"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

// TestWholeAnswers, an equivalence test, reads a project's latest values
// and a page of a sensor's readings, answers above net/http's 4 kB
// buffer, from a server over server.Listener, as main serves plain HTTP,
// twice on one connection, and from the harness's server: the answers
// are the same bytes, with their length.
func TestWholeAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	editor := e.client(tn.tokens[store.Editor])
	var sensorID int64 // the last, with a page of 1,000 readings
	for i := range 20 {
		s, err := e.db.CreateSensor(ctx, tn.orgID, tn.projectID, fmt.Sprintf("S%02d", i), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body := batchtest.BenchBodyOf(10)
		if i == 19 {
			body, sensorID = batchtest.BenchBody(), s.ID
		}
		res, err := editor.PostReadingsWithBodyWithResponse(ctx, tn.orgID, tn.projectID, s.ID, &client.PostReadingsParams{}, "application/json", bytes.NewReader(body))
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("post: %v %s", err, res.Body)
		}
	}

	contract, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: contract.Handler(t, e.srv), ConnContext: server.ConnContext}
	go srv.Serve(server.Listener(ln))
	t.Cleanup(func() { srv.Close() })

	clientOf := func(base string) *client.ClientWithResponses {
		t.Helper()
		c, err := client.NewClientWithResponses(base, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
			// Not gzip, which Go's client asks for: gzip's writer sends
			// the answer in pieces of its own, with no length.
			req.Header.Set("Accept-Encoding", "identity")
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name string
		get  func(c *client.ClientWithResponses) (*http.Response, []byte, error)
	}{
		{"LatestValues", func(c *client.ClientWithResponses) (*http.Response, []byte, error) {
			res, err := c.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Limit: ptr(1000)})
			if err != nil {
				return nil, nil, err
			}
			return res.HTTPResponse, res.Body, nil
		}},
		{"Page", func(c *client.ClientWithResponses) (*http.Response, []byte, error) {
			res, err := c.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, sensorID, &client.ListReadingsParams{Limit: ptr(1000)})
			if err != nil {
				return nil, nil, err
			}
			return res.HTTPResponse, res.Body, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := func(base string) []byte {
				t.Helper()
				res, body, err := tt.get(clientOf(base))
				if err != nil || res.StatusCode != http.StatusOK {
					t.Fatalf("GET: %v %s", err, truncate(body, 300))
				}
				if got, want := res.ContentLength, int64(len(body)); got != want {
					t.Errorf("Content-Length = %d, want %d", got, want)
				}
				return body
			}
			want := get(e.url)
			if len(want) <= 4<<10 {
				t.Fatalf("the answer is %d bytes, want it above net/http's 4 kB buffer", len(want))
			}
			for i := range 2 {
				if got := get("http://" + ln.Addr().String()); string(got) != string(want) {
					t.Errorf("request %d over server.Listener: %s, want the harness's %s", i+1, truncate(got, 300), truncate(want, 300))
				}
			}
		})
	}
}
