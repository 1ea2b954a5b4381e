package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// replica is one service process of a cluster, served by run as main does.
type replica struct {
	base   string
	stop   context.CancelFunc
	served chan error
}

// freeAddr is a loopback address with a port free at the time of asking.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startReplica(t *testing.T, env map[string]string) *replica {
	t.Helper()
	addr := freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	r := &replica{base: "http://" + addr, stop: stop, served: make(chan error, 1)}
	go func() {
		r.served <- run(ctx, []string{"serve", "-addr", addr, "-log-level", "warn"}, envOf(env), io.Discard, io.Discard)
	}()
	t.Cleanup(func() { r.shutdown(t) })
	return r
}

// waitReady waits for /readyz to answer 200, and fails if serve returns.
func (r *replica) waitReady(t *testing.T) {
	t.Helper()
	client := checkedClient(t)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-r.served:
			t.Fatalf("replica %s stopped before it was ready: %v", r.base, err)
		default:
		}
		if res, err := client.Get(r.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("replica %s was not ready within 60 s", r.base)
}

// shutdown stops the replica as SIGTERM would, once.
func (r *replica) shutdown(t *testing.T) {
	if r.stop == nil {
		return
	}
	r.stop()
	r.stop = nil
	select {
	case err := <-r.served:
		if err != nil {
			t.Errorf("replica %s: serve returned %v, want nil", r.base, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("replica %s did not stop", r.base)
	}
}

// Two service processes started at once on an empty database: both
// migrate, one applies the migrations while the other waits, and both
// serve. A write through one is read through the other, the second
// reading its "standby" (here the same database) with the write's LSN,
// and both record the token's use when they stop.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	url := storetest.NewEmptyDatabase(t)
	a := startReplica(t, map[string]string{"DATABASE_URL": url})
	b := startReplica(t, map[string]string{"DATABASE_URL": url, "READ_DATABASE_URL": url})
	a.waitReady(t)
	b.waitReady(t)

	ctx := context.Background()
	pool, err := store.Open(ctx, url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var applied, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != distinct || applied == 0 {
		t.Errorf("goose_db_version: %d rows for %d versions, want each version applied once", applied, distinct)
	}

	demo, err := runAdmin(t, url, "demo")
	if err != nil {
		t.Fatal(err)
	}
	token, org, project := demo["token"].(string), int64(demo["org_id"].(float64)), int64(demo["project_id"].(float64))
	sensor, err := store.New(pool).CreateSensor(ctx, org, project, "s", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", org, project, sensor.ID)
	client := checkedClient(t)
	send := func(method, url, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, body := send("POST", a.base+path, `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`, nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Readings-LSN") != "" {
		t.Fatalf("POST through a: %d %s, X-Readings-LSN %q; want 200 and no LSN (a has no standby)", res.StatusCode, body, res.Header.Get("X-Readings-LSN"))
	}
	res, body = send("POST", b.base+path, `[{"datetime":"2024-05-01T13:00:00Z","inputs":{"1":2}}]`, nil)
	lsn := res.Header.Get("X-Readings-LSN")
	if res.StatusCode != http.StatusOK || lsn == "" {
		t.Fatalf("POST through b: %d %s, X-Readings-LSN %q; want 200 and an LSN", res.StatusCode, body, lsn)
	}
	res, body = send("GET", b.base+path, "", map[string]string{"X-Readings-Min-LSN": lsn})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "2024-05-01T12:00:00") || !strings.Contains(body, "2024-05-01T13:00:00") {
		t.Errorf("GET through b after both writes: %d %s; want both readings", res.StatusCode, body)
	}

	a.shutdown(t)
	b.shutdown(t)
	var used bool
	if err := pool.QueryRow(ctx, `SELECT last_used_at IS NOT NULL FROM api_tokens WHERE user_id = (SELECT id FROM users WHERE email = $1)`,
		demoEmail).Scan(&used); err != nil || !used {
		t.Errorf("the token's last_used_at after both replicas stopped: set=%v (%v), want set", used, err)
	}
}

// Rate limits are buckets in each replica's memory, as docs/deployment.md
// says: a token that spent its burst on one replica is refused there, and
// still has its burst on another. HAProxy's hashing on Authorization (make
// cluster) is what sends a token to one replica, so that the setting is
// the limit across the replicas.
func TestRateLimitPerReplica(t *testing.T) {
	t.Parallel()
	url := storetest.NewEmptyDatabase(t)
	env := map[string]string{"DATABASE_URL": url, "RATE_LIMIT": "0.001", "RATE_BURST": "3"}
	a, b := startReplica(t, env), startReplica(t, env)
	a.waitReady(t)
	b.waitReady(t)
	demo, err := runAdmin(t, url, "demo")
	if err != nil {
		t.Fatal(err)
	}
	client := checkedClient(t)
	statuses := func(base string, n int) []int {
		t.Helper()
		var got []int
		for range n {
			req, _ := http.NewRequest("GET", base+"/api/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+demo["token"].(string))
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			got = append(got, res.StatusCode)
		}
		return got
	}
	if got, want := fmt.Sprint(statuses(a.base, 4)), "[200 200 200 429]"; got != want {
		t.Errorf("four requests to replica a = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(statuses(b.base, 4)), "[200 200 200 429]"; got != want {
		t.Errorf("then four to replica b = %s, want %s: each replica keeps its own bucket", got, want)
	}
}

// buildService builds the service's binary, as it is deployed.
func buildService(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "readings")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProcess starts the binary bin's serve with args and env, and stops
// it with SIGTERM at the end of the test, failing it unless it exits 0.
func startProcess(t *testing.T, bin string, env []string, args ...string) {
	t.Helper()
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, append([]string{"serve", "-addr", addr, "-log-level", "warn"}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("process %s: %v, want exit 0; its log:\n%s", addr, err, logs.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("process %s did not stop within 30 s of SIGTERM", addr)
		}
	})
}

// TestOverdueTwoProcesses runs two processes of the service on one
// database, each checking overdue sensors every second and delivering
// webhooks, and shows that each overdue sensor raises its alarm once, one
// triggered event each, delivered to the project's webhook once, however
// the processes' checks and deliveries interleave.
func TestOverdueTwoProcesses(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	demo, err := runAdmin(t, url, "demo")
	if err != nil {
		t.Fatal(err)
	}
	org, project := int64(demo["org_id"].(float64)), int64(demo["project_id"].(float64))
	ctx := t.Context()
	pool, err := store.Open(ctx, url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := store.New(pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})

	var (
		mu         sync.Mutex
		deliveries = map[string]int{} // by event id
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deliveries[r.Header.Get("X-Readings-Event-Id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	if _, err := db.CreateWebhook(ctx, org, project, receiver.URL, "a secret of sixteen bytes or more"); err != nil {
		t.Fatal(err)
	}
	// silent adds a sensor whose reading of 2024 makes it overdue from the
	// next check.
	silent := func(name string) {
		t.Helper()
		s, err := db.CreateSensor(ctx, org, project, name, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		key := store.SensorKey{OrgID: org, ProjectID: project, SensorID: s.ID}
		if _, err := core.Ingest(ctx, key, sensing.NewBatch([]store.Reading{{Time: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), InputIDs: []int64{1}, Values: []float64{1}}})); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SetOverdueRule(ctx, key, "Maintenance", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	const sensors = 20
	for i := range sensors {
		silent(fmt.Sprintf("silent-%d", i))
	}

	bin, env := buildService(t), []string{"DATABASE_URL=" + url}
	for range 2 {
		startProcess(t, bin, env, "-alarm-check-interval", "1s", "-webhook-allow-private")
	}
	count := func() (alarms, events, delivered int) {
		err := pool.QueryRow(ctx, `
SELECT (SELECT count(*) FROM alarms WHERE target_key = 'overdue'),
       (SELECT count(*) FROM alarm_events WHERE target_key = 'overdue' AND kind = 'triggered'),
       (SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered')`).Scan(&alarms, &events, &delivered)
		if err != nil {
			t.Fatal(err)
		}
		return alarms, events, delivered
	}
	// waitFor waits until n sensors have their alarm, event and delivery.
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if a, _, d := count(); a == n && d == n {
				return
			}
			if time.Now().After(deadline) {
				a, ev, d := count()
				t.Fatalf("after 30 s: %d overdue alarms, %d triggered events, %d deliveries; want %d of each", a, ev, d, n)
			}
		}
	}
	waitFor(sensors)
	// More checks and delivery rounds of the processes, which must change
	// nothing of the sensors handled: a sensor added now is handled by a
	// check and a delivery round that begin after, so two added one after
	// the other, each once handled, are two more of each at least.
	for i := range 2 {
		silent(fmt.Sprintf("later-%d", i))
		waitFor(sensors + i + 1)
	}
	const all = sensors + 2
	if a, ev, d := count(); a != all || ev != all || d != all {
		t.Errorf("%d overdue alarms, %d triggered events and %d deliveries, want %d of each", a, ev, d, all)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != all {
		t.Errorf("the receiver got %d distinct events, want %d", len(deliveries), all)
	}
	for id, n := range deliveries {
		if n != 1 {
			t.Errorf("event %s arrived %d times, want once", id, n)
		}
	}
}
