package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/store/storetest"
)

// previousRelease is the release an upgrade starts from: main as it was
// before the newest migration that changes what is stored or how it is
// read (00040, the rollups), so that TestUpgrade runs that migration on a
// database of the previous release with its data. When a migration lands,
// set this to the commit before it. A clone without this commit (a
// shallow one) fails the test and says how to fetch it.
const previousRelease = "47f89696d15224210c01eff4ba95dda7e3dffd69"

// buildPreviousRelease builds the service's binary as of previousRelease,
// from git's copy of that commit, into a directory of the test's. The Go
// build cache keeps the next build of the same commit quick.
func buildPreviousRelease(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	if out, err := exec.CommandContext(ctx, "git", "cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the previous release %s is not in this clone (%v: %s); a shallow clone needs: git fetch --unshallow", previousRelease, err, out)
	}
	src := t.TempDir()
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", previousRelease)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v: %s", previousRelease, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v: %s", err, stderr.String())
	}
	bin := filepath.Join(t.TempDir(), "readings-previous")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", previousRelease, err, out)
	}
	return bin
}

// process is a service binary serving on a port of its own.
type process struct {
	base string
	stop func()
}

// startBinary starts bin's serve with env and waits until it is ready; its
// stop sends SIGTERM and fails the test unless it exits 0.
func startBinary(t *testing.T, bin string, env []string, args ...string) *process {
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
	stopped := false
	p := &process{base: "http://" + addr}
	p.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s: %v, want exit 0; its log:\n%s", bin, err, logs.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s did not stop within 30 s of SIGTERM", bin)
		}
	}
	t.Cleanup(p.stop)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(p.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it was ready: %v\n%s", bin, err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not ready within 60 s:\n%s", bin, logs.String())
		}
	}
}

// api is a client of one process with one token.
type api struct {
	t     *testing.T
	base  string
	token string
}

// call sends body (JSON, none when nil) and decodes the answer, failing
// the test unless its status is want.
func (a api) call(method, path string, body any, want int) any {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		a.t.Fatalf("%s %s%s = %d, want %d: %s", method, a.base, path, res.StatusCode, want, raw)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil && len(raw) > 0 {
		a.t.Fatalf("%s %s: not JSON: %s", method, path, raw)
	}
	return v
}

func (a api) get(path string) any {
	a.t.Helper()
	return a.call(http.MethodGet, path, nil, http.StatusOK)
}

func field(v any, key string) any { return v.(map[string]any)[key] }

func id(v any) int64 { return int64(field(v, "id").(float64)) }

// upgradeSite is what TestUpgrade stores through the previous release:
// a piezometer with a blueprint, an alarm rule on one of its outputs, and
// readings over several days, some above the rule's threshold.
type upgradeSite struct {
	org, project, sensor int64
	freq                 string // the frequency input's id
}

func (s upgradeSite) readingsPath() string {
	return fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", s.org, s.project, s.sensor)
}

// post writes readings of the frequency every 10 minutes from start, n of
// them, the frequency following i.
func (s upgradeSite) post(a api, start time.Time, n int, freq func(i int) float64) {
	a.t.Helper()
	batch := make([]map[string]any, n)
	for i := range batch {
		batch[i] = map[string]any{"datetime": start.Add(time.Duration(i) * 10 * time.Minute).Format(time.RFC3339),
			"inputs": map[string]float64{s.freq: freq(i)}}
	}
	a.call(http.MethodPost, s.readingsPath(), batch, http.StatusOK)
}

// reads are the answers an upgrade must leave unchanged, by name.
func (s upgradeSite) reads(a api) map[string]any {
	a.t.Helper()
	proj := fmt.Sprintf("/api/v1/org/%d/proj/%d", s.org, s.project)
	return map[string]any{
		"readings with outputs": a.get(s.readingsPath() + "?outputs=true&limit=1000"),
		"hourly aggregates":     a.get(s.readingsPath() + "/aggregates?interval=1h&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-06-01T00:00:00Z"),
		"daily aggregates":      a.get(s.readingsPath() + "/aggregates?interval=1d&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-06-01T00:00:00Z&tz=Europe/Zurich"),
		"latest values":         a.get(proj + "/latest"),
		"current alarms":        a.get(proj + "/alarms"),
		"alarm events":          a.get(proj + "/alarm-events"),
		"alarm rules":           a.get(fmt.Sprintf("%s/sensors/%d/alarm-rules", proj, s.sensor)),
	}
}

// within tells whether every field of was is in now with the same value,
// numbers to a relative 1e-9 (a sum added in another order), and says
// where they part. now may have fields was lacks: a new release may add
// fields to an answer, never change or drop one.
func within(was, now any, at string) (bool, string) {
	switch w := was.(type) {
	case map[string]any:
		n, ok := now.(map[string]any)
		if !ok {
			return false, at
		}
		for k, v := range w {
			if ok, where := within(v, n[k], at+"."+k); !ok {
				return false, where
			}
		}
		return true, ""
	case []any:
		n, ok := now.([]any)
		if !ok || len(n) != len(w) {
			return false, at + fmt.Sprintf(" (length %d, was %d)", len(n), len(w))
		}
		for i := range w {
			if ok, where := within(w[i], n[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
				return false, where
			}
		}
		return true, ""
	case float64:
		n, ok := now.(float64)
		return ok && math.Abs(n-w) <= 1e-9*math.Max(math.Abs(w), 1), at
	}
	return reflect.DeepEqual(was, now), at
}

func checkReads(t *testing.T, when string, was, now map[string]any) {
	t.Helper()
	for name, w := range was {
		if ok, where := within(w, now[name], ""); !ok {
			a, _ := json.Marshal(w)
			b, _ := json.Marshal(now[name])
			t.Errorf("%s: %s differ at %s:\nwas %.2000s\nnow %.2000s", when, name, where, a, b)
		}
	}
}

// TestUpgrade upgrades a database of the previous release, with its data,
// to the current schema, and checks that every read answers as before:
// readings, outputs, aggregates (before and after the new rollups are
// built), latest values, alarm state. Then it runs the previous release's
// binary against the upgraded schema beside the current one, as a rolling
// upgrade does, and checks that it still serves reads and writes, and that
// the current binary reads what it wrote.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	previous := buildPreviousRelease(t)
	url := storetest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url, "PATH=" + os.Getenv("PATH")}
	ctx := t.Context()

	// The previous release creates its schema and its data.
	migrate := exec.CommandContext(ctx, previous, "migrate")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("previous release's migrate: %v\n%s", err, out)
	}
	boot := exec.CommandContext(ctx, previous, "admin", "bootstrap", "--org", "Upgrade", "--email", "owner@upgrade.example.com")
	boot.Env = env
	out, err := boot.Output()
	if err != nil {
		t.Fatalf("previous release's admin bootstrap: %v", err)
	}
	var owner struct {
		OrgID int64  `json:"org_id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &owner); err != nil {
		t.Fatalf("admin bootstrap printed %q: %v", out, err)
	}
	old := startBinary(t, previous, env)
	a := api{t: t, base: old.base, token: owner.Token}
	site := upgradeSite{org: owner.OrgID}
	site.project = id(a.call(http.MethodPost, fmt.Sprintf("/api/v1/org/%d/projects", site.org), map[string]any{"name": "Dam"}, http.StatusCreated))
	blueprint := id(a.call(http.MethodPost, fmt.Sprintf("/api/v1/org/%d/blueprints", site.org), map[string]any{
		"name":      "Vibrating-wire piezometer",
		"inputs":    []map[string]any{{"key": "freq", "name": "Frequency", "unit": "Hz"}},
		"constants": []map[string]any{{"key": "G", "name": "Gauge factor", "default": 0.1}, {"key": "R0", "name": "Zero reading", "default": 0}},
		"outputs": []map[string]any{
			{"key": "digits", "name": "Digits", "formula": "freq^2 / 1000"},
			{"key": "pressure", "name": "Pressure", "unit": "kPa", "formula": "G * (R0 - digits)"},
		},
	}, http.StatusCreated))
	sensor := a.call(http.MethodPost, fmt.Sprintf("/api/v1/org/%d/proj/%d/sensors", site.org, site.project),
		map[string]any{"name": "PZ-01", "blueprint_id": blueprint, "constants": map[string]float64{"G": 0.12, "R0": 9000}}, http.StatusCreated)
	site.sensor = id(sensor)
	site.freq = fmt.Sprint(id(field(sensor, "inputs").([]any)[0]))
	a.call(http.MethodPost, fmt.Sprintf("/api/v1/org/%d/proj/%d/sensors/%d/alarm-rules", site.org, site.project, site.sensor),
		map[string]any{"target": "digits", "level": "Alarm", "direction": "above", "threshold": 8000}, http.StatusCreated)
	wave := func(i int) float64 { return 2800 + 200*math.Sin(float64(i)/7) }
	site.post(a, time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), 500, wave) // three and a half days, the alarm raised and cleared
	before := site.reads(a)
	old.stop()

	// The current release migrates it and answers as the previous did,
	// whether an hour's aggregates come from the readings (queued for
	// the rollups) or, once the maintainer has built them, the rollups.
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"migrate"}, envOf(map[string]string{"DATABASE_URL": url}), &stdout, &stderr); err != nil {
		t.Fatalf("migrate: %v\n%s", err, stderr.String())
	}
	current := startReplica(t, map[string]string{"DATABASE_URL": url, "ROLLUP_INTERVAL": "100ms"})
	current.waitReady(t)
	c := api{t: t, base: current.base, token: owner.Token}
	checkReads(t, "after the migration", before, site.reads(c))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	waitRollups := func() {
		t.Helper()
		var queued int
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM rollup_dirty`).Scan(&queued); err != nil {
				t.Fatal(err)
			}
			if queued == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d hours still queued for the rollups after 60 s", queued)
			}
		}
	}
	waitRollups()
	var hours int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM rollup_hours`).Scan(&hours); err != nil || hours < 80 {
		t.Fatalf("%d hours of rollups built (%v), want the 84 of the readings", hours, err)
	}
	checkReads(t, "with the rollups built", before, site.reads(c))

	// A rolling upgrade: the previous release's binary, started with its
	// defaults (it migrates at start), serves the new schema beside the
	// current one: it answers as before, and its writes are read back by
	// both.
	old = startBinary(t, previous, env)
	a.base = old.base
	checkReads(t, "the previous release on the new schema", before, site.reads(a))
	site.post(a, time.Date(2024, 5, 2, 12, 0, 0, 0, time.UTC), 12, func(int) float64 { return 3000 }) // overwrites in rolled-up hours
	site.post(a, time.Date(2024, 5, 10, 0, 0, 0, 0, time.UTC), 30, wave)                              // new hours, the newest readings
	written := site.reads(a)
	if got, want := len(written["readings with outputs"].([]any)), 530; got != want {
		// Overwrites of the same instants do not add readings.
		t.Errorf("the previous release lists %d readings after its writes, want %d", got, want)
	}
	now := site.reads(c)
	for _, name := range []string{"readings with outputs", "latest values", "current alarms", "alarm events", "alarm rules"} {
		checkReads(t, "the current release reading the previous one's writes", map[string]any{name: written[name]}, now)
	}
	// The previous release does not queue the hours it writes for the
	// rollups (it knows none): after a rollout across 00040 they are
	// queued again, as docs/deployment.md says, and then the aggregates
	// are what the readings give.
	if _, err := conn.Exec(ctx, requeueRollupsSQL); err != nil {
		t.Fatal(err)
	}
	waitRollups()
	checkReads(t, "the current release's aggregates after the requeue", written, site.reads(c))
	old.stop()
}

// requeueRollupsSQL is the step docs/deployment.md gives after a rolling
// upgrade from a release before the rollups: every hour with readings is
// queued for the maintainer.
const requeueRollupsSQL = `
INSERT INTO rollup_dirty (sensor_id, hour, inputs)
SELECT DISTINCT sensor_id, date_bin('1 hour', datetime, TIMESTAMPTZ '2000-01-01 00:00+00'), true FROM readings
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true`
