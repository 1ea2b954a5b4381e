package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	// A bucket of 3 that refills once every 10 s: the fourth request of a
	// quick burst is refused whatever the machine's speed.
	cfg.RateLimit, cfg.RateBurst = 0.1, 3
	e := newEnvWith(t, cfg, faults{})
	tn := e.newTenant("Acme")
	get := func(token string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", e.url+"/api/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	for want := 2; want >= 0; want-- {
		res, body := get(tn.tokens[store.Viewer])
		if res.StatusCode != 200 {
			t.Fatalf("request within the burst: %d %s", res.StatusCode, body)
		}
		if res.Header.Get("RateLimit-Limit") != "3" || res.Header.Get("RateLimit-Remaining") != strconv.Itoa(want) {
			t.Errorf("RateLimit-Limit %q, -Remaining %q; want 3 and %d", res.Header.Get("RateLimit-Limit"), res.Header.Get("RateLimit-Remaining"), want)
		}
	}
	res, body := get(tn.tokens[store.Viewer])
	got := wantError(t, res.StatusCode, body, 429, "rate_limited")
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q, want whole seconds", res.Header.Get("Retry-After"))
	}
	if strings.Contains(got.Message, tn.tokens[store.Viewer]) {
		t.Error("the 429 shows the token")
	}
	if other, _ := get(tn.tokens[store.Editor]); other.StatusCode != 200 {
		t.Errorf("another token: %d, want its own bucket", other.StatusCode)
	}
}

// A request that waits for the database past its deadline answers 503,
// and its transaction leaves nothing behind.
func TestDatabaseDeadline(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	// Long enough that the POST after the lock's release, which must
	// succeed, is not itself cut short on a loaded machine (it was, at
	// 500 ms, while the whole suite ran on two cores).
	cfg.DBTimeout = 2 * time.Second
	e := newEnvWith(t, cfg, faults{})
	tn := e.newTenant("Acme")
	ctx := context.Background()

	// Hold the sensor's row as a schema change would: ingest waits for it.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sensors WHERE id = $1 FOR UPDATE`, tn.sensorID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := e.client(tn.tokens[store.Editor]).PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil,
		[]client.ReadingInput{reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1})})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the request took %v; the deadline is %v", took, cfg.DBTimeout)
	}
	wantError(t, res.StatusCode(), res.Body, 503, "unavailable")
	if res.HTTPResponse.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored by a request that timed out, want 0", n)
	}
	post(t, e.client(tn.tokens[store.Editor]), tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}))
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	editor := e.client(tn.tokens[store.Editor])
	admin := e.client(tn.tokens[store.Admin])

	post(t, editor, tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}), reading(t, "2024-05-01T12:00:01Z", client.Values{"1": 2}))
	post(t, editor, tn, reading(t, "2024-05-01T12:00:02Z", client.Values{"1": 3}))
	list(t, editor, tn, client.ListReadingsParams{})
	e.do(tn.tokens[store.Viewer], "GET", "/api/v1/nowhere", "", nil)

	// An output that divides by zero counts as a formula error, each time
	// it is left out: of its hour's rollup, as the POST stores the
	// reading, and of the page that lists it.
	if res, _ := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID,
		client.FormulasUpdate{Outputs: &map[string]string{"digits": "freq / 0"}}); res.StatusCode() != 200 {
		t.Fatalf("formulas: %d %s", res.StatusCode(), res.Body)
	}
	sensor, _ := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	piezo := tn
	piezo.sensorID = tn.instanceID
	post(t, editor, piezo, reading(t, "2024-05-01T12:00:00Z", client.Values{strconv.FormatInt(sensor.Instance.Inputs[0].ID, 10): 1}))
	list(t, editor, piezo, client.ListReadingsParams{Outputs: ptr(true)})

	res, err := http.Get(e.url + "/metrics") // no token: metrics are open
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	metrics := string(body)
	for _, want := range []string{
		`readings_http_requests_total{operation="postReadings",status="200"} 3`,
		`readings_http_requests_total{operation="listReadings",status="200"} 2`,
		`readings_http_requests_total{operation="unmatched",status="404"} 1`,
		`readings_http_request_duration_seconds_count{operation="postReadings"} 3`,
		"readings_ingested_total 4",
		"readings_formula_errors_total 2",
		"readings_db_pool_max_connections ",
		"readings_db_pool_acquires ",
		"go_goroutines ",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, token := range tn.tokens {
		if strings.Contains(metrics, token) || strings.Contains(metrics, token[:10]) {
			t.Error("/metrics shows a token")
		}
	}
}

// With every connection of the pool taken, a request waits its deadline
// for one, then answers 503: never a hang.
func TestPoolExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := store.Open(ctx, storetest.NewDatabase(t), store.PoolConfig{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	org, err := db.CreateOrg(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	user, err := db.EnsureUser(ctx, "ada@example.com", "Ada")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetMembership(ctx, org.ID, user.ID, store.Owner); err != nil {
		t.Fatal(err)
	}
	_, token, err := db.CreateToken(ctx, user.ID, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.DBTimeout = 300 * time.Millisecond
	srv := newService(t, db, slog.New(slog.DiscardHandler), cfg, faults{}).srv
	ts := serve(t, srv)

	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/org/%d/projects", ts.URL, org.ID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantError(t, res.StatusCode, body, 503, "unavailable")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the request took %v with the pool exhausted", took)
	}
	held.Release()
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("after the connection came back: %d, want 200", res.StatusCode)
	}
}
