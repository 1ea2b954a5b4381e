package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// service is the real service binary, running as a child process.
type service struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // why it exited, once exited is closed

	base    string // http://127.0.0.1:port
	pprof   string // http://127.0.0.1:port of /debug/pprof, when profiling
	token   string
	http    *http.Client
	api     *client.ClientWithResponses
	org     int64
	project int64
	sensors []int64  // the sensors' ids, in order of creation
	paths   []string // the readings URL of each sensor, built once
	pathIDs []int64  // the id of the sensor of each of paths
}

// requestTimeout bounds every request to the service: the largest batch
// takes well under a second, so a minute means something is stuck.
const requestTimeout = time.Minute

// startService builds the service from this checkout, creates its owner
// with `readings admin bootstrap`, starts `readings serve` on a free
// loopback port and waits until /readyz answers.
func (e *env) startService(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "readings-bench-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	e.onTearDown(func(context.Context) error { return os.RemoveAll(dir) })
	bin := filepath.Join(dir, "readings")
	e.log.Info("building the service", "binary", bin)
	if _, err := e.run(ctx, 5*time.Minute, e.cfg.environ, "go", "build", "-o", bin, "."); err != nil {
		return err
	}

	environ := append(e.cfg.environ[:len(e.cfg.environ):len(e.cfg.environ)], "DATABASE_URL="+e.dbURL)
	out, err := e.run(ctx, time.Minute, environ, bin, "admin", "bootstrap", "--org", "bench", "--email", "bench@example.com")
	if err != nil {
		return err
	}
	var boot struct {
		OrgID int64  `json:"org_id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &boot); err != nil {
		return fmt.Errorf("admin bootstrap printed %q: %w", out, err)
	}

	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	// Not CommandContext: on Ctrl-C the service must get SIGTERM and drain,
	// as in production, not SIGKILL; tear down sends it.
	cmd := exec.Command(bin, "serve")
	cmd.Dir = e.root
	// No rate limit: the bench measures what the service can do, and its
	// clients would be throttled at 50 requests a second.
	// Row 11c's webhook receiver is on loopback.
	cmd.Env = append(environ, "LISTEN_ADDR="+addr, "LOG_LEVEL=warn", "RATE_LIMIT=0", "WEBHOOK_ALLOW_PRIVATE=true")
	pprofAddr := ""
	if e.cfg.profileDir != "" {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, "PPROF_ADDR="+pprofAddr)
	}
	cmd.Stdout = e.stderr
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the service: %w", err)
	}
	svc := &service{
		cmd:    cmd,
		exited: make(chan struct{}),
		base:   "http://" + addr,
		pprof:  "http://" + pprofAddr,
		token:  boot.Token,
		org:    boot.OrgID,
		http:   newHTTPClient(e.cfg.clients),
	}
	go func() {
		svc.err = cmd.Wait()
		close(svc.exited)
	}()
	e.svc = svc
	e.onTearDown(svc.stop)
	e.log.Info("started the service", "pid", cmd.Process.Pid, "addr", addr)

	svc.api, err = client.NewClientWithResponses(svc.base, client.WithHTTPClient(svc.http),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+svc.token)
			return nil
		}))
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	return svc.waitReady(ctx, time.Minute)
}

// newHTTPClient keeps a connection per client alive: the default of two
// idle connections per host would make the third and fourth concurrent
// client dial for every request, and the figures would include TCP set-up.
// It keeps at least smallClients, for rows 3s and 4s.
func newHTTPClient(clients int) *http.Client {
	clients = max(clients, smallClients)
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback only, whatever HTTP_PROXY says
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        2 * clients,
			MaxIdleConnsPerHost: 2 * clients,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// freeLoopbackAddr asks the kernel for a free port. Another process could
// take it before the service listens; the service would then fail to start,
// and the bench with it, loudly.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls /readyz until it answers 200, the process exits or the
// timeout passes.
func (s *service) waitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, "the service", timeout, s.exited, func() error { return s.err }, func(ctx context.Context) bool {
		_, err := s.storageMode(ctx)
		return err == nil
	})
}

// waitReady polls ready until it is true, the process named exits (exited
// is closed, err says why) or the timeout passes.
func waitReady(ctx context.Context, name string, timeout time.Duration, exited <-chan struct{}, err func() error, ready func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v", name, err())
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %v: %w", name, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// storageMode is the storage mode /readyz reports.
func (s *service) storageMode(ctx context.Context) (string, error) {
	resp, err := s.api.GetReadyWithResponse(ctx)
	if err != nil {
		return "", fmt.Errorf("readyz: %w", err)
	}
	if resp.JSON200 == nil {
		return "", fmt.Errorf("readyz: %s", resp.Status())
	}
	return string(resp.JSON200.Storage), nil
}

// stop sends SIGTERM, as an orchestrator would, and waits for the graceful
// shutdown; a service that does not stop in time is killed.
func (s *service) stop(ctx context.Context) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop the service: %w", err)
	}
	select {
	case <-s.exited:
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("the service did not stop after SIGTERM; killed it")
	}
	s.http.CloseIdleConnections()
	if s.err != nil {
		return fmt.Errorf("the service exited: %w", s.err)
	}
	return nil
}

// createSensors creates the project and the sensors through the API, as a
// user would.
func (e *env) createSensors(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s := e.svc
	proj, err := s.api.CreateProjectWithResponse(ctx, s.org, client.ProjectCreate{Name: "bench"})
	if err != nil {
		return fmt.Errorf("create project: %w", err)
	}
	if proj.JSON201 == nil {
		return fmt.Errorf("create project: %s %s", proj.Status(), proj.Body)
	}
	s.project = proj.JSON201.Id
	for i := range e.cfg.sensors {
		resp, err := s.api.CreateSensorWithResponse(ctx, s.org, s.project, client.SensorCreate{Name: fmt.Sprintf("S%03d", i+1)})
		if err != nil {
			return fmt.Errorf("create sensor: %w", err)
		}
		if resp.JSON201 == nil {
			return fmt.Errorf("create sensor: %s %s", resp.Status(), resp.Body)
		}
		s.sensors = append(s.sensors, resp.JSON201.Id)
		s.addPath(s.project, resp.JSON201.Id)
	}
	e.log.Info("created sensors", "org", s.org, "project", s.project, "sensors", len(s.sensors))
	return nil
}

// addPath adds the readings URL of a sensor of the project to paths.
func (s *service) addPath(project, sensorID int64) {
	s.paths = append(s.paths, fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", s.base, s.org, project, sensorID))
	s.pathIDs = append(s.pathIDs, sensorID)
}

// postReadings posts a JSON batch, already encoded, to the sensor at index
// i; resp receives the response's body.
func (s *service) postReadings(ctx context.Context, i int, body []byte, resp *bytes.Buffer) error {
	return s.postTo(ctx, s.paths[i], body, resp)
}

// postTo posts a JSON batch, already encoded, to a readings URL; resp
// receives the response's body.
func (s *service) postTo(ctx context.Context, url string, body []byte, resp *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return s.do(req, resp)
}

// getReadings reads one page of the sensor at index i, from the instant
// from on, into page.
func (s *service) getReadings(ctx context.Context, i int, from time.Time, outputs bool, page *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.paths[i]+pageQuery(from, outputs), nil)
	if err != nil {
		return err
	}
	return s.do(req, page)
}

// pageQuery is the query of a page of the bench's reads: pageSize
// readings from from on.
func pageQuery(from time.Time, outputs bool) string {
	return "?limit=" + strconv.Itoa(pageSize) + "&outputs=" + strconv.FormatBool(outputs) +
		"&datetime__gte=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano))
}

// do sends req with the token and reads the whole response into body, so
// that the connection is reused; any status but 200 is an error.
func (s *service) do(req *http.Request, body *bytes.Buffer) error {
	req.Header.Set("Authorization", "Bearer "+s.token)
	body.Reset()
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s readings: %w", req.Method, err)
	}
	defer resp.Body.Close()
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("%s readings: %w", req.Method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s readings: %s: %s", req.Method, resp.Status, truncate(body.Bytes()))
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// resetPeakRSS makes the kernel forget the process's peak resident set, so
// that the next peakRSS covers only what happens from now (Linux).
func (s *service) resetPeakRSS() error {
	path := fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid)
	if err := os.WriteFile(path, []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak RSS: %w", err)
	}
	return nil
}

// peakRSS is the process's peak resident set, VmHWM, in bytes (Linux).
func (s *service) peakRSS() (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak RSS: VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("peak RSS: no VmHWM in /proc/<pid>/status")
}
