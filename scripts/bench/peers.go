package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// A peer is another time-series database the service is compared with,
// run by the bench from Debian's package on loopback for its phases only.
type peer struct {
	name    string // as the table names it
	binary  string // looked up on PATH
	pkg     string // the Debian package that installs it
	acks    string // what a 2xx to a write means, for the table
	write   string // path and query of its line-protocol write
	start   func(e *env, p *peer, dir, addr string) *exec.Cmd
	ready   string // path that answers 2xx once it serves
	prepare func(ctx context.Context, e *env, p *peer) error
	// readURL is the URL of a page of 1,000 readings of a sensor from an
	// instant on; check says whether a response holds that page.
	readURL func(p *peer, sensor string, from time.Time) string
	check   func(body []byte) error

	// Set while it runs.
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	base   string
	http   *http.Client
}

// peers are the databases of the peer table, in its order.
func peers() []*peer {
	return []*peer{influxDB(), victoriaMetrics()}
}

// startPeer starts p with its data in a temporary directory on a free
// loopback port and waits until it answers.
func (e *env) startPeer(ctx context.Context, p *peer) error {
	bin, err := exec.LookPath(p.binary)
	if err != nil {
		return fmt.Errorf("%s is not installed (apt-get install %s): %w", p.binary, p.pkg, err)
	}
	p.binary = bin
	dir, err := os.MkdirTemp("", "readings-bench-"+p.pkg+"-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	p.cmd = p.start(e, p, dir, addr)
	p.cmd.Dir = dir
	p.cmd.Stdout = e.stderr
	p.cmd.Stderr = e.stderr
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.exited = make(chan struct{})
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	p.base = "http://" + addr
	p.http = newHTTPClient(e.cfg.clients)
	e.log.Info("started a peer", "name", p.name, "pid", p.cmd.Process.Pid, "addr", addr)
	stopped := false
	stop := func(ctx context.Context) error {
		if stopped {
			return nil
		}
		stopped = true
		err := p.stop(ctx)
		return errors.Join(err, os.RemoveAll(dir))
	}
	e.onTearDown(stop)
	e.stopPeer = stop
	if err := p.waitReady(ctx, time.Minute); err != nil {
		return err
	}
	return p.prepare(ctx, e, p)
}

// waitReady polls the peer's ready path until it answers 2xx.
func (p *peer) waitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, p.name, timeout, p.exited, func() error { return p.err }, func(ctx context.Context) bool {
		return p.do(ctx, http.MethodGet, p.base+p.ready, nil, nil) == nil
	})
}

// stop sends SIGTERM and waits; a peer that does not stop in time is
// killed.
func (p *peer) stop(ctx context.Context) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.http.CloseIdleConnections()
	return nil
}

// do sends a request to the peer and reads the whole response into resp
// (when not nil), so that the connection is reused; any status but 2xx is
// an error.
func (p *peer) do(ctx context.Context, method, u string, body []byte, resp *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	defer r.Body.Close()
	var sink bytes.Buffer
	if resp == nil {
		resp = &sink
	}
	resp.Reset()
	if _, err := resp.ReadFrom(r.Body); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if r.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", p.name, method, r.Status, truncate(resp.Bytes()))
	}
	return nil
}

// influxDB is InfluxDB 1.x with the settings of Debian's package but its
// directories and ports, and quieter logs.
func influxDB() *peer {
	return &peer{
		name:   "InfluxDB",
		binary: "influxd",
		pkg:    "influxdb",
		acks:   "written to its WAL and fsynced (`wal-fsync-delay = \"0s\"`, the default)",
		write:  "/write?db=bench&precision=ns",
		ready:  "/ping",
		start: func(e *env, p *peer, dir, addr string) *exec.Cmd {
			config := filepath.Join(dir, "influxdb.conf")
			rpc, _ := freeLoopbackAddr()
			text := fmt.Sprintf(`bind-address = %q
[meta]
  dir = %q
[data]
  dir = %q
  wal-dir = %q
  wal-fsync-delay = "0s"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = %q
  log-enabled = false
[logging]
  level = "warn"
`, rpc, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), addr)
			if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
				e.log.Error("write influxdb.conf", "err", err)
			}
			return exec.Command(p.binary, "run", "-config", config)
		},
		prepare: func(ctx context.Context, e *env, p *peer) error {
			return p.do(ctx, http.MethodPost, p.base+"/query?q="+url.QueryEscape("CREATE DATABASE bench"), nil, nil)
		},
		readURL: func(p *peer, sensor string, from time.Time) string {
			q := fmt.Sprintf("SELECT %s FROM readings WHERE sensor = '%s' AND time >= %d ORDER BY time LIMIT %d",
				influxFields, sensor, from.UnixNano(), pageSize)
			return p.base + "/query?db=bench&epoch=ns&q=" + url.QueryEscape(q)
		},
		check: checkInfluxPage,
	}
}

// victoriaMetrics is single-node VictoriaMetrics. Its default retention of
// one month would drop the data set's 2024 readings without an error, and
// without deduplication a reading sent twice would be read back twice.
func victoriaMetrics() *peer {
	return &peer{
		name:   "VictoriaMetrics",
		binary: "victoria-metrics",
		pkg:    "victoria-metrics",
		acks:   "buffered in memory, written to disk about once a second without an fsync per request; a crash loses the last seconds",
		write:  "/write",
		ready:  "/health",
		start: func(e *env, p *peer, dir, addr string) *exec.Cmd {
			return exec.Command(p.binary,
				"-storageDataPath="+filepath.Join(dir, "data"),
				"-retentionPeriod=100y",
				"-dedup.minScrapeInterval=1ms",
				"-httpListenAddr="+addr,
				"-loggerLevel=WARN")
		},
		prepare: func(context.Context, *env, *peer) error { return nil },
		readURL: func(p *peer, sensor string, from time.Time) string {
			to := from.Add(time.Duration(pageSize-1) * time.Second)
			q := url.Values{
				"match[]": {fmt.Sprintf(`{__name__=~"readings_i[0-9]+",sensor=%q}`, sensor)},
				"start":   {fmt.Sprint(from.Unix())},
				"end":     {fmt.Sprint(to.Unix())},
			}
			return p.base + "/api/v1/export?" + q.Encode()
		},
		check: checkVictoriaPage,
	}
}
