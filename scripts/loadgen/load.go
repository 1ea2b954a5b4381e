package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadConfig is what a load does; see registerLoad for each field's flag.
type loadConfig struct {
	target
	workers     int
	duration    time.Duration
	rate        float64
	writeRatio  float64
	latestRatio float64
	batch       int
	ackLog      string
	tagStart    int64
	policy      policy
	requireRate bool
}

// target is the service, the credentials and the sensors a command uses.
type target struct {
	base       string
	tokensFile string
	tokens     []string
	org, proj  int64
	sensorList string
	sensors    []int64
	timeout    time.Duration
}

func (t *target) register(fs *flag.FlagSet) {
	t.registerService(fs, 10*time.Second)
	fs.StringVar(&t.sensorList, "sensors", "", "comma-separated sensor `ids`")
}

// registerService registers the flags of the service, the credentials and
// the project, but not the sensors.
func (t *target) registerService(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&t.base, "base", "http://127.0.0.1:8080", "the service's base `url`")
	fs.StringVar(&t.tokensFile, "tokens-file", "", "`file` of bearer tokens, one a line, used in turn (a file keeps them out of ps)")
	fs.Int64Var(&t.org, "org", 0, "organization `id`")
	fs.Int64Var(&t.proj, "proj", 0, "project `id`")
	fs.DurationVar(&t.timeout, "timeout", timeout, "the client's timeout for one request: longer is a hang")
}

// setup checks the flags, reads the tokens and parses the sensors.
func (t *target) setup() error {
	errs := []error{t.setupService()}
	for s := range strings.SplitSeq(t.sensorList, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || id < 1 {
			errs = append(errs, fmt.Errorf("-sensors %q is not a list of sensor ids", t.sensorList))
			break
		}
		t.sensors = append(t.sensors, id)
	}
	return errors.Join(errs...)
}

// setupService checks the flags of registerService and reads the tokens.
func (t *target) setupService() error {
	var errs []error
	if !loopbackBase(t.base) {
		// Load and chaos traffic stays on this machine.
		errs = append(errs, fmt.Errorf("base %q is not a loopback http or https URL with a port", t.base))
	}
	t.base = strings.TrimSuffix(t.base, "/")
	if t.org < 1 || t.proj < 1 {
		errs = append(errs, errors.New("-org and -proj are required"))
	}
	if t.timeout <= 0 {
		errs = append(errs, errors.New("-timeout must be positive"))
	}
	tokens, err := readTokens(t.tokensFile)
	if err != nil {
		errs = append(errs, err)
	}
	t.tokens = tokens
	return errors.Join(errs...)
}

// loopbackBase tells whether base is an http or https URL of this
// machine with a port. An https service's certificate is checked against
// the system's roots, or the file SSL_CERT_FILE names (make cluster's CA).
func loopbackBase(base string) bool {
	for _, prefix := range []string{"http://127.0.0.1:", "http://localhost:", "https://127.0.0.1:", "https://localhost:"} {
		if strings.HasPrefix(base, prefix) {
			return true
		}
	}
	return false
}

func readTokens(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("-tokens-file is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	var tokens []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			tokens = append(tokens, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("tokens: %s holds none", path)
	}
	return tokens, nil
}

// newClient is an HTTP client for workers concurrent requests to one
// host: a connection each, kept alive, and bounded in every phase.
func newClient(workers int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			MaxIdleConns:          workers,
			MaxIdleConnsPerHost:   workers,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: timeout,
		},
	}
}

func parseLoad(args []string, stderr io.Writer) (*loadConfig, error) {
	fs := flag.NewFlagSet("loadgen load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c loadConfig
	c.target.register(fs)
	fs.IntVar(&c.workers, "workers", 64, "concurrent requests at most; a request due while all are busy is counted as not sent")
	fs.DurationVar(&c.duration, "duration", time.Minute, "how long to offer load (SIGINT or SIGTERM end it sooner)")
	fs.Float64Var(&c.rate, "rate", 100, "requests offered per second, whatever the latency")
	fs.Float64Var(&c.writeRatio, "write-ratio", 0.5, "share of requests that are writes, 0 to 1")
	fs.Float64Var(&c.latestRatio, "latest-ratio", 0.25, "share of reads that ask for the latest reading only")
	fs.IntVar(&c.batch, "batch", 100, "readings per write")
	fs.StringVar(&c.ackLog, "ack-log", "", "`file` to record every batch sent and acknowledged, for verify")
	fs.Int64Var(&c.tagStart, "tag-start", 1, "tag of the first batch; runs that share a database need ranges apart")
	fs.BoolVar(&c.policy.allow503, "allow-503", true, "accept 503 (set false for plain load, where the database never goes away)")
	fs.BoolVar(&c.policy.allowConnErrors, "allow-conn-errors", false, "accept refused and reset connections (while the service is being killed)")
	fs.BoolVar(&c.requireRate, "require-rate", true, "fail when a request could not start on time because every worker was busy (set false where stalls are expected)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	errs := []error{c.target.setup()}
	if c.workers < 1 || c.rate <= 0 || c.duration <= 0 {
		errs = append(errs, errors.New("-workers, -rate and -duration must be positive"))
	}
	if c.writeRatio < 0 || c.writeRatio > 1 || c.latestRatio < 0 || c.latestRatio > 1 {
		errs = append(errs, errors.New("-write-ratio and -latest-ratio are from 0 to 1"))
	}
	errs = append(errs, checkBatch(c.tagStart, c.batch))
	return &c, errors.Join(errs...)
}

// loader runs one load. Its counters are shared by the workers.
type loader struct {
	cfg     *loadConfig
	client  *http.Client
	acks    *ackLog
	nextTag atomic.Int64
	nextTok atomic.Uint64
}

func runLoad(stop context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseLoad(args, stderr)
	if err != nil {
		return err
	}
	acks, err := createAckLog(cfg.ackLog)
	if err != nil {
		return err
	}
	l := &loader{cfg: cfg, client: newClient(cfg.workers, cfg.timeout), acks: acks}
	l.nextTag.Store(cfg.tagStart)

	// Requests are not tied to stop: a run that is told to stop lets what is
	// in flight finish, so that every batch it sent ends acknowledged or
	// failed, never abandoned. The client's timeout bounds each one.
	jobs := make(chan time.Time, cfg.workers)
	results := make([]stats, cfg.workers)
	var wg sync.WaitGroup
	for w := range cfg.workers {
		results[w] = stats{}
		wg.Go(func() { l.work(jobs, results[w], rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))) })
	}
	start := time.Now()
	scheduled, notSent := l.schedule(stop, jobs, start)
	wg.Wait()
	elapsed := time.Since(start)
	l.client.CloseIdleConnections()

	total := stats{}
	for _, r := range results {
		total.merge(r)
	}
	v := cfg.policy.judge(total)
	report(stdout, cfg, total, elapsed, scheduled, notSent)
	var errs []error
	if err := acks.Close(); err != nil {
		errs = append(errs, err)
	}
	if !v.ok() {
		errs = append(errs, errors.New(v.String()))
	}
	if notSent > 0 && cfg.requireRate {
		errs = append(errs, fmt.Errorf("the offered rate was not sustained: %d requests were due while all %d workers were busy", notSent, cfg.workers))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stdout, "loadgen: FAILED: %v\n", err)
		return reported{err}
	}
	fmt.Fprintln(stdout, "loadgen: OK")
	return nil
}

// schedule hands out one due time per request at the configured rate, until
// the duration is over or stop is done. It never waits for a worker: a
// request that is due while every worker is busy is counted and dropped, so
// that a slow service cannot lower the rate offered to it unnoticed.
func (l *loader) schedule(stop context.Context, jobs chan<- time.Time, start time.Time) (scheduled, notSent int64) {
	defer close(jobs)
	end := start.Add(l.cfg.duration)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := int64(0); ; i++ {
		due := start.Add(time.Duration(float64(i) * float64(time.Second) / l.cfg.rate))
		if !due.Before(end) {
			return scheduled, notSent
		}
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-stop.Done():
				return scheduled, notSent
			case <-timer.C:
			}
		} else if stop.Err() != nil {
			return scheduled, notSent
		}
		select {
		case jobs <- due:
			scheduled++
		default:
			notSent++
		}
	}
}

// work sends one request per due time it receives. Latency counts from
// the due time, not from the send, so that time spent waiting for a worker
// shows up instead of hiding (coordinated omission).
func (l *loader) work(jobs <-chan time.Time, s stats, r *rand.Rand) {
	var body []byte
	for due := range jobs {
		sensor := l.cfg.sensors[r.IntN(len(l.cfg.sensors))]
		switch {
		case r.Float64() < l.cfg.writeRatio:
			body = l.write(s.kind(kindWrite), due, sensor, body, r)
		case r.Float64() < l.cfg.latestRatio:
			l.read(s.kind(kindLatest), due, sensor, "?order=desc&limit=1")
		default:
			l.read(s.kind(kindRead), due, sensor, "?limit=1000")
		}
	}
}

func (l *loader) readingsURL(sensor int64) string {
	return fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", l.cfg.base, l.cfg.org, l.cfg.proj, sensor)
}

func (l *loader) token() string {
	return l.cfg.tokens[(l.nextTok.Add(1)-1)%uint64(len(l.cfg.tokens))]
}

// write posts one tagged batch, recording it in the ack log before it is
// sent and again once it is acknowledged. buf is reused between batches.
func (l *loader) write(ks *kindStats, due time.Time, sensor int64, buf []byte, r *rand.Rand) []byte {
	tag := l.nextTag.Add(1) - 1
	buf = appendBatch(buf[:0], tag, l.cfg.batch, r)
	l.acks.sent(sensor, tag, l.cfg.batch)
	status := send(l.client, ks, due, http.MethodPost, l.readingsURL(sensor), l.token(), buf)
	if status == http.StatusOK {
		l.acks.ack(sensor, tag, l.cfg.batch)
		ks.written += int64(l.cfg.batch)
	}
	return buf
}

func (l *loader) read(ks *kindStats, due time.Time, sensor int64, query string) {
	send(l.client, ks, due, http.MethodGet, l.readingsURL(sensor)+query, l.token(), nil)
}

// send makes one request, with a JSON body if any, and records its
// outcome in ks. It returns the status, or 0 when there was none.
func send(client *http.Client, ks *kindStats, due time.Time, method, url, token string, body []byte) int {
	return sendAs(client, ks, due, method, url, token, "application/json", body)
}

// sendAs is send with a body of contentType.
func sendAs(client *http.Client, ks *kindStats, due time.Time, method, url, token, contentType string, body []byte) int {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		ks.errors[errOther]++
		ks.sample(errOther, err.Error())
		return 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := client.Do(req)
	if err != nil {
		class := classifyError(err)
		ks.errors[class]++
		ks.sample(class, err.Error())
		return 0
	}
	defer res.Body.Close()
	// Reading the whole body is part of the request: a page of readings is
	// only served once it has arrived.
	data, err := io.ReadAll(res.Body)
	if err != nil {
		class := classifyError(err)
		ks.errors[class]++
		ks.sample(class, "reading the body: "+err.Error())
		return 0
	}
	ks.latencies = append(ks.latencies, time.Since(due))
	ks.statuses[res.StatusCode]++
	if res.StatusCode/100 != 2 {
		ks.sample(strconv.Itoa(res.StatusCode), fmt.Sprintf("%s %s: %s (request id %s, Retry-After %q)",
			method, req.URL.Path, bytes.TrimSpace(data), res.Header.Get("X-Request-Id"), res.Header.Get("Retry-After")))
	}
	return res.StatusCode
}

func report(w io.Writer, cfg *loadConfig, s stats, elapsed time.Duration, scheduled, notSent int64) {
	secs := elapsed.Seconds()
	requests, written := 0, int64(0)
	for _, ks := range s {
		requests += sum(ks.statuses) + sum(ks.errors)
		written += ks.written
	}
	fmt.Fprintf(w, "loadgen: %.1f s, %g req/s offered (%.0f%% writes of %d readings) by %d workers with %d tokens: %d sent, %d not sent (all workers busy)\n",
		secs, cfg.rate, cfg.writeRatio*100, cfg.batch, cfg.workers, len(cfg.tokens), scheduled, notSent)
	fmt.Fprintf(w, "loadgen: throughput %.1f req/s; %d readings written in acknowledged batches = %.0f readings/s\n",
		float64(requests)/secs, written, float64(written)/secs)
	fmt.Fprintln(w, "loadgen: latency from each request's due time, so waiting for a worker counts:")
	writeTable(w, s)
	for _, k := range []string{kindWrite, kindRead, kindLatest} {
		if ks := s[k]; ks != nil {
			for _, key := range slices.Sorted(maps.Keys(ks.samples)) {
				fmt.Fprintf(w, "loadgen: first %s %s: %s\n", k, key, ks.samples[key])
			}
		}
	}
}
