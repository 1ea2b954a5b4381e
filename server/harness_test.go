package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/openapi"
	"github.com/sensorreadings/readings/openapi/openapitest"
	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
	"github.com/sensorreadings/readings/tokenuse"
)

// env is the real service on a fresh database, served over HTTP.
type env struct {
	t testing.TB
	service
	pool *pgxpool.Pool
	db   *store.DB
	url  string
	logs *syncBuffer
	spec *openapi3.T
}

// config is the service's configuration: the server's, the domain's and
// the outbox's.
type config struct {
	server.Config
	core   sensing.Config
	outbox outbox.Config
}

// defaultConfig is the service's configuration in tests: its real defaults.
func defaultConfig() config {
	return config{
		Config: server.Config{MaxBatch: 10000, MaxBodyBytes: 16 << 20},
		core:   sensing.Config{MaxFuture: 24 * time.Hour},
	}
}

func newEnv(t testing.TB) *env {
	return newEnvWith(t, defaultConfig(), faults{})
}

// faults are what a test injects: deps changes what the server calls,
// reader wraps the real store that the domain reads readings from.
type faults struct {
	deps   func(*server.Deps, *store.DB)
	reader func(*store.DB) sensing.Reader
}

// newEnvWith serves the real store with the faults f injects.
func newEnvWith(t testing.TB, cfg config, f faults) *env {
	t.Helper()
	return newEnvLimits(t, cfg, store.Limits{}, f)
}

// newEnvLimits is newEnvWith on a store with limits; zero fields keep the
// defaults.
func newEnvLimits(t testing.TB, cfg config, limits store.Limits, f faults) *env {
	t.Helper()
	pool := storetest.NewPool(t)
	db := store.New(pool, limits)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := newService(t, db, log, cfg, f)
	ts := serve(t, svc.srv)
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, service: svc, pool: pool, db: db, url: ts.URL, logs: logs, spec: spec}
}

// service is the service on one database, as main wires it: the domain,
// the outbox it wakes, the record of token use, and the server of them.
type service struct {
	core   *sensing.Service
	outbox *outbox.Outbox
	tokens *tokenuse.Recorder
	srv    *server.Server
}

func newService(t testing.TB, db *store.DB, log *slog.Logger, cfg config, f faults) service {
	t.Helper()
	ob, err := outbox.New(db, log, cfg.outbox, server.WebhookPayload)
	if err != nil {
		t.Fatalf("outbox.New: %v", err)
	}
	cfg.core.DBTimeout = cfg.DBTimeout // one setting, as main makes it
	cfg.core.OnEvents = ob.Wake
	svc := service{core: sensing.New(db, log, cfg.core), outbox: ob, tokens: tokenuse.New(db, log)}
	deps := server.DepsOf(db, svc.core, ob, svc.tokens)
	if f.reader != nil {
		deps.Reads = svc.core.WithReader(f.reader(db))
	}
	if r, ok := cfg.Standby.(sensing.Reader); ok {
		deps.StandbyReads = svc.core.WithReader(r)
	}
	if f.deps != nil {
		f.deps(&deps, db)
	}
	if svc.srv, err = server.New(deps, log, cfg.Config); err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return svc
}

// serve serves h over HTTP until the test ends, and fails the test on every
// answer that the spec does not describe (an undocumented status, a body
// that breaks its schema), error answers included, whatever client sent
// the request: the service cannot drift from its contract unnoticed.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	contract, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(contract.Handler(t, h))
	t.Cleanup(ts.Close)
	return ts
}

// client returns a generated client that sends token (none when empty).
func (e *env) client(token string) *client.ClientWithResponses {
	e.t.Helper()
	opts := []client.ClientOption{client.WithHTTPClient(e.httpClient())}
	if token != "" {
		opts = append(opts, client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := client.NewClientWithResponses(e.url, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// httpClient is the client of the tests' own requests: the server checks
// every answer (serve).
func (e *env) httpClient() *http.Client { return http.DefaultClient }

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tenant is an organization with a member of each role, a project and a
// sensor in it.
type tenant struct {
	orgID       int64
	projectID   int64
	sensorID    int64 // without a blueprint
	blueprintID int64 // the piezometer
	instanceID  int64 // a sensor using the piezometer
	userIDs     map[store.Role]int64
	tokens      map[store.Role]string
}

// piezometer is the blueprint of the README's worked example.
func piezometer() store.Blueprint {
	g, r0 := 0.1, 0.0
	return store.Blueprint{
		Name: "Vibrating-wire piezometer",
		Inputs: []store.BlueprintInput{
			{Key: "freq", Name: "Frequency", Unit: "Hz"},
			{Key: "temp", Name: "Temperature", Unit: "degC"},
		},
		Constants: []store.BlueprintConstant{
			{Key: "G", Name: "Gauge factor", Unit: "kPa/digit", Default: &g},
			{Key: "R0", Name: "Zero reading", Unit: "digit", Default: &r0},
		},
		Outputs: []store.BlueprintOutput{
			{Key: "digits", Name: "Digits", Unit: "digit", Formula: "freq^2 / 1000"},
			{Key: "pressure", Name: "Pressure", Unit: "kPa", Formula: "G * (R0 - digits)"},
		},
	}
}

func (e *env) newTenant(name string) tenant {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.db.CreateOrg(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	tn := tenant{orgID: org.ID, userIDs: map[store.Role]int64{}, tokens: map[store.Role]string{}}
	for _, role := range []store.Role{store.Viewer, store.Editor, store.Admin, store.Owner} {
		user, err := e.db.EnsureUser(ctx, fmt.Sprintf("%s-%d@%s.example.com", role, org.ID, strings.ToLower(strings.ReplaceAll(name, " ", "-"))), string(role))
		if err != nil {
			e.t.Fatal(err)
		}
		if err := e.db.SetMembership(ctx, org.ID, user.ID, role); err != nil {
			e.t.Fatal(err)
		}
		_, secret, err := e.db.CreateToken(ctx, user.ID, "test", nil)
		if err != nil {
			e.t.Fatal(err)
		}
		tn.userIDs[role], tn.tokens[role] = user.ID, secret
	}
	project, err := e.db.CreateProject(ctx, org.ID, name+" project", "")
	if err != nil {
		e.t.Fatal(err)
	}
	sensor, err := e.db.CreateSensor(ctx, org.ID, project.ID, name+" sensor", "", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	blueprint, err := e.db.CreateBlueprint(ctx, org.ID, piezometer())
	if err != nil {
		e.t.Fatal(err)
	}
	inst, err := blueprint.Instantiate(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	instance, err := e.db.CreateSensor(ctx, org.ID, project.ID, name+" piezometer", "",
		&store.Attachment{BlueprintID: blueprint.ID, Instance: inst})
	if err != nil {
		e.t.Fatal(err)
	}
	tn.projectID, tn.sensorID, tn.blueprintID, tn.instanceID = project.ID, sensor.ID, blueprint.ID, instance.ID
	return tn
}

// newPiezometer makes another sensor using the tenant's piezometer
// blueprint, in projectID, and returns its id.
func (e *env) newPiezometer(t testing.TB, tn tenant, projectID int64, name string) int64 {
	t.Helper()
	ctx := context.Background()
	b, err := e.db.GetBlueprint(ctx, tn.orgID, tn.blueprintID)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := b.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	sensor, err := e.db.CreateSensor(ctx, tn.orgID, projectID, name, "", &store.Attachment{BlueprintID: b.ID, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	return sensor.ID
}

// owner returns a client of the tenant's owner.
func (e *env) owner(tn tenant) *client.ClientWithResponses { return e.client(tn.tokens[store.Owner]) }

// do sends a raw request, for what the generated client cannot send
// (malformed bodies, wrong content types), still checked against the spec.
func (e *env) do(token, method, path, contentType string, body io.Reader) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := e.httpClient().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, b
}

// wantError checks that a response is the JSON error with status and code.
func wantError(t *testing.T, status int, body []byte, wantStatus int, wantCode string) client.Error {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d; body %s", status, wantStatus, body)
	}
	var e client.Error
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	if e.Code != wantCode || e.Message == "" {
		t.Fatalf("error %+v, want code %q and a message", e, wantCode)
	}
	return e
}

// syncBuffer collects the logs of a server serving concurrent requests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func readingsPath(tn tenant) string {
	return fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", tn.orgID, tn.projectID, tn.sensorID)
}

// linkParams reads the rel="next" Link of a response into the parameters
// of the next call. It fails on a parameter the spec does not define.
func linkParams(t *testing.T, header http.Header) (*client.ListReadingsParams, bool) {
	t.Helper()
	link := header.Get("Link")
	if link == "" {
		return nil, false
	}
	target, rel, ok := strings.Cut(link, ">; ")
	if !ok || rel != `rel="next"` || !strings.HasPrefix(target, "<") {
		t.Fatalf("Link %q is not <url>; rel=\"next\"", link)
	}
	u, err := url.Parse(strings.TrimPrefix(target, "<"))
	if err != nil {
		t.Fatalf("Link %q: %v", link, err)
	}
	var p client.ListReadingsParams
	for key, values := range u.Query() {
		v := values[0]
		switch key {
		case "datetime__gte", "datetime__gt", "datetime__lte", "datetime__lt":
			*map[string]**client.Bound{
				"datetime__gte": &p.DatetimeGte, "datetime__gt": &p.DatetimeGt,
				"datetime__lte": &p.DatetimeLte, "datetime__lt": &p.DatetimeLt,
			}[key] = &v
		case "keys":
			k := client.ListReadingsParamsKeys(v)
			p.Keys = &k
		case "limit":
			var n int
			fmt.Sscan(v, &n)
			p.Limit = &n
		case "order":
			o := client.ListReadingsParamsOrder(v)
			p.Order = &o
		case "outputs":
			b := v == "true"
			p.Outputs = &b
		case "flags":
			b := v == "true"
			p.Flags = &b
		case "as_of":
			p.AsOf = &v
		default:
			t.Fatalf("Link %q has parameter %q, which listReadings does not define", link, key)
		}
	}
	return &p, true
}
