package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/openapi/openapitest"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// checkedClient is the client of the tests that run the service: it fails
// t on every answer the spec does not describe, as the server's tests do.
func checkedClient(t *testing.T) *http.Client {
	t.Helper()
	contract, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: contract.Transport(t, http.DefaultTransport)}
}

func envOf(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func TestParseConfig(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*config) bool
		wantErr string
	}{
		{name: "Defaults", env: map[string]string{"DATABASE_URL": "postgres://x"},
			check: func(c *config) bool {
				return c.addr == "127.0.0.1:8080" && c.maxBatch == 10000 && c.maxBodyBytes == 16<<20 && c.migrate && c.logFormat == "text"
			}},
		{name: "FromEnv", env: map[string]string{"DATABASE_URL": "postgres://x", "LISTEN_ADDR": ":9090", "MAX_BATCH": "50", "MIGRATE_ON_START": "false", "SHUTDOWN_TIMEOUT": "3s"},
			check: func(c *config) bool {
				return c.addr == ":9090" && c.maxBatch == 50 && !c.migrate && c.shutdownTimeout == 3*time.Second
			}},
		{name: "FlagBeatsEnv", args: []string{"-addr", ":7070"}, env: map[string]string{"DATABASE_URL": "postgres://x", "LISTEN_ADDR": ":9090"},
			check: func(c *config) bool { return c.addr == ":7070" }},
		{name: "NoDatabase", wantErr: "DATABASE_URL"},
		{name: "BadEnvNumber", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_BATCH": "lots"}, wantErr: `MAX_BATCH="lots"`},
		{name: "BadEnvBool", env: map[string]string{"DATABASE_URL": "postgres://x", "MIGRATE_ON_START": "perhaps"}, wantErr: "MIGRATE_ON_START"},
		{name: "BadLogFormat", env: map[string]string{"DATABASE_URL": "postgres://x", "LOG_FORMAT": "xml"}, wantErr: "log format"},
		{name: "BadLogLevel", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-log-level", "loud"}, wantErr: "log level"},
		{name: "ZeroBatch", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-max-batch", "0"}, wantErr: "max batch"},
		{name: "StorageDefaults", env: map[string]string{"DATABASE_URL": "postgres://x"},
			check: func(c *config) bool {
				return c.storage == store.StorageConfig{ChunkInterval: 7 * 24 * time.Hour, CompressAfter: 7 * 24 * time.Hour}
			}},
		{name: "StorageInDaysAndHours", env: map[string]string{"DATABASE_URL": "postgres://x", "CHUNK_INTERVAL": "1d", "RETENTION": "365d"},
			args: []string{"-compress-after", "36h"},
			check: func(c *config) bool {
				return c.storage == store.StorageConfig{ChunkInterval: 24 * time.Hour, CompressAfter: 36 * time.Hour, Retention: 365 * 24 * time.Hour}
			}},
		{name: "BadEnvDays", env: map[string]string{"DATABASE_URL": "postgres://x", "CHUNK_INTERVAL": "7 days"}, wantErr: "CHUNK_INTERVAL"},
		{name: "BadFlagDays", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-retention", "1.5d"}, wantErr: "days"},
		{name: "RetentionBelowChunk", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-retention", "1d"}, wantErr: "retention"},
		{name: "StreamCaps", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_STREAMS": "3", "MAX_STREAMS_PER_TOKEN": "1", "DB_MAX_CONNS": "8"},
			check: func(c *config) bool { return c.maxStreams == 3 && c.maxStreamsToken == 1 }},
		{name: "StreamsFillThePool", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_STREAMS": "8", "DB_MAX_CONNS": "8"}, wantErr: "max streams"},
		{name: "RollupWorkers", env: map[string]string{"DATABASE_URL": "postgres://x", "ROLLUP_WORKERS": "3"},
			check: func(c *config) bool { return c.rollupWorkers == 3 }},
		{name: "RollupWorkersFillThePool", env: map[string]string{"DATABASE_URL": "postgres://x", "DB_MAX_CONNS": "2"}, wantErr: "rollup workers"},
		{name: "NoStreamPerToken", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_STREAMS_PER_TOKEN": "0"}, wantErr: "per token"},
		{name: "CapDefaults", env: map[string]string{"DATABASE_URL": "postgres://x"},
			check: func(c *config) bool {
				want := store.DefaultLimits()
				want.SensorInputs = 0 // -max-inputs
				return c.caps == want
			}},
		{name: "CapsFromEnvAndFlags", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_WEBHOOKS": "5", "MAX_SENSORS": "50000"},
			args:  []string{"-max-tokens", "10"},
			check: func(c *config) bool { return c.caps.Webhooks == 5 && c.caps.Sensors == 50000 && c.caps.Tokens == 10 }},
		{name: "ZeroCap", env: map[string]string{"DATABASE_URL": "postgres://x", "MAX_ALARM_RULES": "0"}, wantErr: "-max-alarm-rules 0"},
		{name: "WebhookDefaults", env: map[string]string{"DATABASE_URL": "postgres://x"},
			check: func(c *config) bool {
				return c.webhookLease == time.Minute && c.webhookConc == 32 && c.webhookConcHook == 1
			}},
		{name: "WebhookLeaseOutlivesTheAttempt", env: map[string]string{"DATABASE_URL": "postgres://x", "WEBHOOK_TIMEOUT": "30s", "WEBHOOK_LEASE": "35s"},
			check: func(c *config) bool { return c.webhookLease == 35*time.Second }},
		{name: "WebhookLeaseWithinTheAttempt", env: map[string]string{"DATABASE_URL": "postgres://x", "WEBHOOK_TIMEOUT": "30s", "WEBHOOK_LEASE": "34s"}, wantErr: "-webhook-lease"},
		{name: "WebhookLeaseBelowALongTimeout", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-webhook-timeout", "1m"}, wantErr: "-webhook-lease"},
		{name: "NoWebhookConcurrency", env: map[string]string{"DATABASE_URL": "postgres://x", "WEBHOOK_CONCURRENCY": "0"}, wantErr: "-webhook-concurrency"},
		{name: "WebhookConcurrencyPerWebhook", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"-webhook-concurrency-per-webhook", "17"}, wantErr: "per-webhook"},
		{name: "StrayArgument", env: map[string]string{"DATABASE_URL": "postgres://x"}, args: []string{"extra"}, wantErr: "unexpected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig("serve", tt.args, envOf(tt.env), new(bytes.Buffer))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseConfig error = %v, want one mentioning %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("parseConfig = %+v, %v", c, err)
			}
		})
	}
}

func TestStreamCap(t *testing.T) {
	for _, tt := range []struct {
		setting, pool, want int
		wantErr             bool
	}{
		{setting: 0, pool: 4, want: 2},
		{setting: 0, pool: 5, want: 2},
		{setting: 3, pool: 4, want: 3},
		{setting: 4, pool: 4, wantErr: true},
		{setting: 0, pool: 1, wantErr: true},
	} {
		got, err := streamCap(tt.setting, tt.pool)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("streamCap(%d, %d) = %d, %v; want %d, error %v", tt.setting, tt.pool, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestRedactURL(t *testing.T) {
	if got := redactURL("postgres://app:s3cret@db:5432/readings"); strings.Contains(got, "s3cret") {
		t.Errorf("redactURL shows the password: %s", got)
	}
}

// admin runs `readings admin args…` and decodes its one JSON object.
func runAdmin(t *testing.T, databaseURL string, args ...string) (map[string]any, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"admin"}, args...), envOf(map[string]string{"DATABASE_URL": databaseURL}), &stdout, &stderr)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("admin %v printed %q, not one JSON object: %v", args, stdout.String(), err)
	}
	if strings.Count(strings.TrimSpace(stdout.String()), "\n") != 0 {
		t.Errorf("admin %v printed more than one line: %q", args, stdout.String())
	}
	return out, nil
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	ctx := context.Background()
	pool, err := store.Open(ctx, url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := store.New(pool)

	boot, err := runAdmin(t, url, "bootstrap", "--org", "Acme", "--email", "ada@example.com", "--name", "Ada")
	if err != nil {
		t.Fatal(err)
	}
	orgID := int64(boot["org_id"].(float64))
	p, err := db.Authenticate(ctx, boot["token"].(string), orgID)
	if err != nil || p.Role != store.Owner {
		t.Fatalf("the bootstrap token authenticates as %+v, %v; want the org's owner", p, err)
	}

	org := strconv.FormatInt(orgID, 10)

	t.Run("UserAdd", func(t *testing.T) {
		added, err := runAdmin(t, url, "user", "add", "--org-id", org, "--email", "grace@example.com", "--role", "editor")
		if err != nil {
			t.Fatal(err)
		}
		p, err := db.Authenticate(ctx, added["token"].(string), orgID)
		if err != nil || p.Role != store.Editor || p.UserID != int64(added["user_id"].(float64)) {
			t.Fatalf("the new user's token authenticates as %+v, %v; want an editor", p, err)
		}
		// Again, with another role: the same user, the role changed.
		again, err := runAdmin(t, url, "user", "add", "--org-id", org, "--email", "GRACE@example.com", "--role", "admin")
		if err != nil || again["user_id"] != added["user_id"] {
			t.Fatalf("adding a known user: %v %v, want the same user", again, err)
		}
		if p, _ := db.Authenticate(ctx, again["token"].(string), orgID); p.Role != store.Admin {
			t.Errorf("role after the second add = %s, want admin", p.Role)
		}
	})

	t.Run("TokenCreateAndRevoke", func(t *testing.T) {
		created, err := runAdmin(t, url, "token", "create", "--email", "ada@example.com", "--name", "ci", "--expires-in", "1h")
		if err != nil {
			t.Fatal(err)
		}
		tokens, _, err := db.ListTokens(ctx, p.UserID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if tokens[0].Name != "ci" || tokens[0].ExpiresAt == nil || time.Until(*tokens[0].ExpiresAt) > time.Hour {
			t.Errorf("token %+v, want ci expiring within the hour", tokens[0])
		}
		id := strconv.FormatInt(int64(created["token_id"].(float64)), 10)
		revoked, err := runAdmin(t, url, "token", "revoke", "--token-id", id)
		if err != nil || revoked["revoked"] != true {
			t.Fatalf("revoke: %v %v", revoked, err)
		}
		if _, err := db.Authenticate(ctx, created["token"].(string), 0); err == nil {
			t.Error("a revoked token still authenticates")
		}
	})

	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"Unknown", []string{"frobnicate"}, "unknown admin command"},
		{"MissingFlags", []string{"bootstrap", "--org", "X"}, "--email"},
		{"BadRole", []string{"user", "add", "--org-id", org, "--email", "x@example.com", "--role", "god"}, "role"},
		{"NoSuchOrg", []string{"user", "add", "--org-id", "999999", "--email", "x@example.com", "--role", "viewer"}, "does not exist"},
		{"NoSuchUser", []string{"token", "create", "--email", "nobody@example.com"}, "not found"},
		{"NoSuchToken", []string{"token", "revoke", "--token-id", "999999"}, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := runAdmin(t, url, tt.args...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("admin %v: %v, want an error mentioning %s", tt.args, err, tt.wantErr)
			}
		})
	}
}

// TestAdminDemo is what `make run` does on every start: a demo on an empty
// database, a fresh token for the demo owner after that, and nothing on a
// database that holds someone's data.
func TestAdminDemo(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	first, err := runAdmin(t, url, "demo")
	if err != nil || first["created"] != true || first["project_id"] == nil {
		t.Fatalf("first demo: %v %v", first, err)
	}
	second, err := runAdmin(t, url, "demo")
	if err != nil || second["created"] != false || second["org_id"] != first["org_id"] || second["token"] == first["token"] {
		t.Fatalf("second demo: %v %v, want a new token for the same demo", second, err)
	}
	// The new token replaces the old one: a start does not add a token.
	pool, err := store.Open(t.Context(), url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := store.New(pool)
	if _, err := db.Authenticate(t.Context(), first["token"].(string), 0); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Errorf("the first demo token after the second start: err = %v, want unauthorized", err)
	}
	p, err := db.Authenticate(t.Context(), second["token"].(string), 0)
	if err != nil {
		t.Fatalf("the second demo token: %v", err)
	}
	tokens, _, err := db.ListTokens(t.Context(), p.UserID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tokens), 1; got != want {
		t.Errorf("the demo owner has %d tokens after two starts, want %d", got, want)
	}

	other := storetest.NewDatabase(t)
	if _, err := runAdmin(t, other, "bootstrap", "--org", "Real", "--email", "real@example.com"); err != nil {
		t.Fatal(err)
	}
	if out, err := runAdmin(t, other, "demo"); err == nil {
		t.Errorf("demo on a database with other data = %v, want a refusal", out)
	}
}

// TestAdminDemoKeepsItsToken: with --token-file, as make run calls it, a
// restart answers the token it printed before, so a console signed in with
// it keeps working; a token that no longer works is replaced and the file
// rewritten, for its owner's eyes only.
func TestAdminDemoKeepsItsToken(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	file := filepath.Join(t.TempDir(), "demo-token")
	first, err := runAdmin(t, url, "demo", "--token-file", file)
	if err != nil || first["created"] != true {
		t.Fatalf("first demo: %v %v", first, err)
	}
	kept, err := os.ReadFile(file)
	if err != nil || strings.TrimSpace(string(kept)) != first["token"] {
		t.Fatalf("the token file holds %q (%v), want the first token", kept, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the token file's mode = %v (%v), want 0600", st.Mode().Perm(), err)
	}
	second, err := runAdmin(t, url, "demo", "--token-file", file)
	if err != nil || second["token"] != first["token"] || second["kept"] != true || second["created"] != false {
		t.Fatalf("second demo: %v %v, want the first token kept", second, err)
	}

	// Revoked meanwhile: replaced, and the file follows.
	pool, err := store.Open(t.Context(), url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := store.New(pool)
	p, err := db.Authenticate(t.Context(), first["token"].(string), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(t.Context(), p.UserID, p.TokenID); err != nil {
		t.Fatal(err)
	}
	third, err := runAdmin(t, url, "demo", "--token-file", file)
	if err != nil || third["token"] == first["token"] || third["kept"] != false {
		t.Fatalf("third demo: %v %v, want a new token", third, err)
	}
	if kept, _ := os.ReadFile(file); strings.TrimSpace(string(kept)) != third["token"] {
		t.Errorf("the token file holds %q, want the new token", kept)
	}
	if _, err := db.Authenticate(t.Context(), third["token"].(string), 0); err != nil {
		t.Errorf("the new token: %v", err)
	}

	// Another database's token is no token of this one: replaced too.
	other := storetest.NewDatabase(t)
	fourth, err := runAdmin(t, other, "demo", "--token-file", file)
	if err != nil || fourth["token"] == third["token"] || fourth["created"] != true {
		t.Fatalf("demo on another database: %v %v, want its own new token", fourth, err)
	}
}

// TestGracefulShutdown sends the server its SIGTERM (a cancelled context)
// while a request is in flight: the request finishes, new ones are refused
// and serve returns nil, so the process exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	demo, err := runAdmin(t, url, "demo")
	if err != nil {
		t.Fatal(err)
	}
	token, org, project := demo["token"].(string), int64(demo["org_id"].(float64)), int64(demo["project_id"].(float64))
	ctx := context.Background()
	pool, err := store.Open(ctx, url, store.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	sensor, err := store.New(pool).CreateSensor(ctx, org, project, "s", "", nil)
	if err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	serveCtx, sigterm := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- run(serveCtx, []string{"serve", "-addr", addr, "-log-level", "warn"}, envOf(map[string]string{"DATABASE_URL": url}), io.Discard, io.Discard)
	}()
	base := "http://" + addr
	client := checkedClient(t)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := client.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not start")
		}
	}

	// Hold the sensor so that the POST is still in flight at SIGTERM.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sensors WHERE id = $1 FOR UPDATE`, sensor.ID); err != nil {
		t.Fatal(err)
	}
	inFlight := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", base, org, project, sensor.ID),
			strings.NewReader(`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			inFlight <- 0
			return
		}
		res.Body.Close()
		inFlight <- res.StatusCode
	}()
	// The POST reaches the lock: PostgreSQL shows a session waiting for it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the POST did not reach the sensor's lock within 20 s")
		}
	}
	sigterm()
	// The server stops accepting new requests while the POST is in flight.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := client.Get(base + "/healthz")
		if err != nil {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepted new requests 10 s after SIGTERM")
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if status := <-inFlight; status != http.StatusOK {
		t.Errorf("the in-flight POST got %d, want 200", status)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve returned %v after SIGTERM, want nil (exit 0)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after SIGTERM")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM readings`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d readings after shutdown (%v), want the in-flight POST's 1", n, err)
	}
}
