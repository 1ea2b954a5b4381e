package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

// panickingStore is the real store with one fault injected: fetching a
// project panics, as a bug in a handler would.
type panickingStore struct{ *store.DB }

func (panickingStore) GetProject(context.Context, int64, int64) (store.Project, error) {
	panic("injected fault")
}

func TestErrorsAreJSON(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, defaultConfig(), faults{deps: func(d *server.Deps, db *store.DB) { d.Projects = panickingStore{db} }})
	tn := e.newTenant("Acme")
	owner := tn.tokens[store.Owner]
	projects := fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID)

	for _, tc := range []struct {
		name, method, path, contentType, body string
		status                                int
		code                                  string
	}{
		{"UnknownRoute", "GET", "/api/v1/nothing-here", "", "", 404, "not_found"},
		{"UnknownRootRoute", "GET", "/favicon.ico", "", "", 404, "not_found"},
		{"MethodNotAllowed", "PATCH", projects, "", "", 405, "method_not_allowed"},
		{"MalformedJSON", "POST", projects, "application/json", `{"name": "x"`, 400, "invalid"},
		{"NotAnObject", "POST", projects, "application/json", `["x"]`, 400, "invalid"},
		{"DuplicateField", "POST", projects, "application/json", `{"name":"x","name":"y"}`, 400, "invalid"},
		{"WrongType", "POST", projects, "application/json", `{"name":42}`, 400, "invalid"},
		{"WrongContentType", "POST", projects, "text/plain", `{"name":"x"}`, 415, "unsupported_media_type"},
		{"FormContentType", "POST", projects, "application/x-www-form-urlencoded", `name=x`, 415, "unsupported_media_type"},
		{"NoBody", "POST", projects, "application/json", ``, 400, "invalid"},
		{"IDNotANumber", "GET", fmt.Sprintf("/api/v1/org/%d/proj/abc", tn.orgID), "", "", 400, "invalid"},
		{"IDFloat", "GET", fmt.Sprintf("/api/v1/org/%d/proj/1.5", tn.orgID), "", "", 400, "invalid"},
		{"IDZero", "GET", fmt.Sprintf("/api/v1/org/%d/proj/0", tn.orgID), "", "", 400, "invalid"},
		{"IDOverflow", "GET", fmt.Sprintf("/api/v1/org/%d/proj/99999999999999999999", tn.orgID), "", "", 400, "invalid"},
		{"OrgIDNotANumber", "GET", "/api/v1/org/abc/projects", "", "", 404, "not_found"},
		{"Panic", "GET", fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, tn.projectID), "", "", 500, "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, e.url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+owner)
			req.Header.Set("X-Request-ID", "test-"+tc.name)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			res, err := e.httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got := wantError(t, res.StatusCode, []byte(mustRead(t, res)), tc.status, tc.code)
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
			if res.Header.Get("X-Request-ID") != "test-"+tc.name {
				t.Errorf("X-Request-ID %q, want the client's", res.Header.Get("X-Request-ID"))
			}
			if tc.status == 500 {
				if strings.Contains(got.Message, "injected") || strings.Contains(got.Message, "goroutine") {
					t.Errorf("a 500 shows its cause: %q", got.Message)
				}
				if !strings.Contains(got.Message, "test-Panic") {
					t.Errorf("a 500's message %q should give the request id to quote", got.Message)
				}
			}
		})
	}

	logs := e.logs.String()
	var panicLine string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"request_id":"test-Panic"`) {
			if panicLine != "" {
				t.Errorf("the panic is logged twice:\n%s\n%s", panicLine, line)
			}
			panicLine = line
		}
	}
	for _, want := range []string{`"level":"ERROR"`, `"status":500`, "injected fault", "goroutine"} {
		if !strings.Contains(panicLine, want) {
			t.Errorf("the panic's log line lacks %s: it should carry the status, cause and stack:\n%s", want, panicLine)
		}
	}
}

func mustRead(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRequestIDIsGenerated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, sent := range []string{"", "has spaces and; semicolons", strings.Repeat("x", 200)} {
		req, _ := http.NewRequest("GET", e.url+"/healthz", nil)
		if sent != "" {
			req.Header.Set("X-Request-ID", sent)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("X-Request-ID"); got == "" || got == sent {
			t.Errorf("X-Request-ID %q for a request that sent %q; want a fresh id", got, sent)
		}
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("")
	ctx := context.Background()
	health, err := c.GetHealthWithResponse(ctx)
	if err != nil || health.StatusCode() != 200 || health.JSON200.Status != client.HealthStatusOk {
		t.Fatalf("healthz: %v %s", err, health.Body)
	}
	ready, err := c.GetReadyWithResponse(ctx)
	if err != nil || ready.StatusCode() != 200 {
		t.Fatalf("readyz: %v %s", err, ready.Body)
	}
	if ready.JSON200.MigrationVersion < 3 || (ready.JSON200.Storage != client.Postgresql && ready.JSON200.Storage != client.Timescaledb) {
		t.Errorf("readyz %+v, want the migration version and a storage mode", *ready.JSON200)
	}
}

// A database that cannot be reached answers 503 with Retry-After, on the
// probes and on the API, never 500.
func TestDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1; pgxpool connects lazily, so the server starts.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	srv := newService(t, db, slog.New(slog.DiscardHandler), defaultConfig(), faults{}).srv
	ts := serve(t, srv)

	for _, path := range []string{"/readyz", "/api/v1/me", "/api/v1/org/1/proj/1/readings/1"} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer rdg_"+strings.Repeat("a", 43))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := mustRead(t, res)
		res.Body.Close()
		wantError(t, res.StatusCode, []byte(body), 503, "unavailable")
		if res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", path)
		}
	}
	health, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health.Body.Close()
	if health.StatusCode != 200 {
		t.Errorf("healthz = %d while the database is down, want 200 (the process is up)", health.StatusCode)
	}
}
