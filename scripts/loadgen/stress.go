package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The kinds of request a stress sends.
const (
	kindForward   = "forward"   // new readings after the sensor's newest
	kindOverwrite = "overwrite" // a batch again, with new values
	kindBackfill  = "backfill"  // new readings between old ones
	kindFile      = "file"      // a CSV file: an overwrite in order, then new readings out of order
	kindDelete    = "delete"    // a range delete
	kindFormulas  = "formulas"  // an edit of a sensor's constants
	kindAggregate = "aggregate" // hourly aggregates of two days, outputs too
	kindExport    = "export"    // a CSV export of a day
)

var stressKinds = []string{kindForward, kindOverwrite, kindBackfill, kindFile, kindDelete, kindFormulas, kindAggregate, kindExport}

// stressConfig is what a stress does; see parseStress for the flags.
type stressConfig struct {
	target                      // its sensors are the ones the stress creates
	adminTokenFile, databaseURL string
	sensors, readers, days      int
	duration, compressEvery     time.Duration
	admin                       string
}

func parseStress(args []string, getenv func(string) string, stderr io.Writer) (*stressConfig, error) {
	fs := flag.NewFlagSet("loadgen stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c stressConfig
	c.target.registerService(fs, 30*time.Second)
	fs.StringVar(&c.adminTokenFile, "admin-token-file", "", "`file` holding an admin's bearer token, for the blueprint, the sensors, the deletes and the formula edits")
	fs.StringVar(&c.databaseURL, "database-url", getenv("DATABASE_URL"), "the service's PostgreSQL `url`: the compression job runs there, and the readings are checked there (DATABASE_URL)")
	fs.IntVar(&c.sensors, "sensors", 16, "sensors to create in the project, each with a writer of its own")
	fs.IntVar(&c.readers, "readers", 4, "readers of aggregates and exports")
	fs.DurationVar(&c.duration, "duration", time.Minute, "how long to write, read, edit and compress")
	fs.DurationVar(&c.compressEvery, "compress-every", 3*time.Second, "how often to run the compression policy's job")
	fs.IntVar(&c.days, "days", 9, "how many days of data the writers' newest readings cross in the run, one chunk a day at CHUNK_INTERVAL=1d")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	errs := []error{c.target.setupService()}
	admin, err := readTokens(c.adminTokenFile)
	if err != nil {
		errs = append(errs, fmt.Errorf("-admin-token-file: %w", err))
	} else {
		c.admin = admin[0]
	}
	if c.databaseURL == "" {
		errs = append(errs, errors.New("-database-url (or DATABASE_URL) is required"))
	}
	if c.sensors < 1 || c.readers < 0 || c.days < 1 || c.duration <= 0 || c.compressEvery <= 0 {
		errs = append(errs, errors.New("-sensors, -days, -duration and -compress-every must be positive, -readers not negative"))
	}
	return &c, errors.Join(errs...)
}

// stressor runs one stress.
type stressor struct {
	cfg     *stressConfig
	client  *http.Client
	tokens  []string
	admin   string
	nextTok atomic.Uint64
	start   time.Time
	first   time.Time // the instant of the first forward batch
	sensors []*sensorModel
}

// sensorModel is what one sensor's readings should be: every batch its
// writer had acknowledged, applied in order. Only its writer changes it,
// and it sends one request at a time.
type sensorModel struct {
	id       int64
	inputIDs [2]string // decimal, for JSON
	keys     [2]string // for CSV
	readings map[int64][2]float64
	spans    []span // what forward batches wrote, to go back to
	newest   int64
	unknown  string // why the model no longer says what is stored
}

type span struct{ from, to int64 } // microseconds since the Unix epoch, inclusive

func runStress(stop context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseStress(args, getenv, stderr)
	if err != nil {
		return err
	}
	s := &stressor{cfg: cfg, client: newClient(cfg.sensors+cfg.readers+2, cfg.timeout), tokens: cfg.tokens, admin: cfg.admin}
	ctx := context.WithoutCancel(stop)
	connCfg, err := pgx.ParseConfig(cfg.databaseURL)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	notices := &policyNotices{}
	connCfg.OnNotice = notices.add
	db, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	defer db.Close(ctx)
	if err := s.setup(ctx); err != nil {
		return fmt.Errorf("stress: set-up: %w", err)
	}
	var jobID int64
	err = db.QueryRow(ctx, `SELECT job_id FROM timescaledb_information.jobs WHERE proc_name = 'policy_compression' AND hypertable_name = 'readings'`).Scan(&jobID)
	if err != nil {
		return fmt.Errorf("stress: the compression policy's job (is the service on TimescaleDB, with COMPRESS_AFTER set?): %w", err)
	}
	deadlocks := func() (n int64) {
		_ = db.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
		return n
	}
	deadlocksBefore := deadlocks()

	// The writers' newest readings cross cfg.days days in the run, from
	// days+1 days ago: every chunk of them is older than COMPRESS_AFTER=1d,
	// so the job compresses the chunks being written, and a new one is
	// made each day of data.
	s.start = time.Now()
	s.first = s.start.UTC().Truncate(24*time.Hour).AddDate(0, 0, -cfg.days-1)
	runCtx, cancel := context.WithTimeout(stop, cfg.duration)
	defer cancel()
	results := make([]stats, cfg.sensors+cfg.readers+1)
	var wg sync.WaitGroup
	for i, m := range s.sensors {
		results[i] = stats{}
		wg.Go(func() {
			s.write(runCtx, m, results[i], rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))))
		})
	}
	for i := range cfg.readers {
		r := cfg.sensors + i
		results[r] = stats{}
		wg.Go(func() { s.read(runCtx, results[r], rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(r)))) })
	}
	editor := len(results) - 1
	results[editor] = stats{}
	wg.Go(func() {
		s.edit(runCtx, results[editor], rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(editor))))
	})
	job := s.compress(runCtx, db, jobID, notices)
	wg.Wait()
	elapsed := time.Since(s.start)
	s.client.CloseIdleConnections()

	total := stats{}
	for _, r := range results {
		total.merge(r)
	}
	var chunks, compressed int
	err = db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE is_compressed) FROM timescaledb_information.chunks WHERE hypertable_name = 'readings'`).Scan(&chunks, &compressed)
	if err != nil {
		return fmt.Errorf("stress: count chunks: %w", err)
	}
	checked, mismatches, err := s.verify(ctx, db)
	if err != nil {
		return fmt.Errorf("stress: verify: %w", err)
	}
	// PostgreSQL counts a deadlock when the victim's session reports its
	// statistics, within 10 s of going idle.
	time.Sleep(11 * time.Second)
	found := deadlocks() - deadlocksBefore

	fmt.Fprintf(stdout, "stress: %.1f s; %d writers (one a sensor), %d readers, 1 formula editor; the writers' newest readings crossed %d days\n",
		elapsed.Seconds(), cfg.sensors, cfg.readers, cfg.days)
	fmt.Fprintf(stdout, "stress: compression job run %d times, %d failed; %d chunks' recompressions gave way to writers (TimescaleDB retries them at its next run), %d were skipped; %d chunks of readings at the end, %d compressed\n",
		job.runs, len(job.errs), job.gaveWay, job.skipped, chunks, compressed)
	writeKinds(stdout, total, stressKinds)
	for _, k := range stressKinds {
		if ks := total[k]; ks != nil {
			for _, key := range slices.Sorted(maps.Keys(ks.samples)) {
				fmt.Fprintf(stdout, "stress: first %s %s: %s\n", k, key, ks.samples[key])
			}
		}
	}
	for _, e := range job.errs[:min(len(job.errs), 3)] {
		fmt.Fprintf(stdout, "stress: compression failed: %v\n", e)
	}
	fmt.Fprintf(stdout, "stress: deadlocks PostgreSQL detected in the run's database: %d\n", found)
	for _, m := range mismatches[:min(len(mismatches), 5)] {
		fmt.Fprintf(stdout, "stress: %s\n", m)
	}

	var errs []error
	if v := stressPolicy(total); !v.ok() {
		errs = append(errs, errors.New(v.String()))
	}
	if len(job.errs) > 0 {
		errs = append(errs, fmt.Errorf("%d runs of the compression job failed", len(job.errs)))
	}
	if job.runs == 0 || compressed == 0 {
		errs = append(errs, errors.New("nothing was compressed: the run did not test what it is for"))
	}
	if len(mismatches) > 0 {
		errs = append(errs, fmt.Errorf("%d readings do not read back as acknowledged", len(mismatches)))
	}
	if found > 0 {
		errs = append(errs, fmt.Errorf("PostgreSQL detected %d deadlocks", found))
	}
	// The summary comes last, so that scripts can quote the last line.
	summary := fmt.Sprintf("requests=%d 5xx=%d readings checked=%d mismatched=%d deadlocks=%d", requests(total), fiveXX(total), checked, len(mismatches), found)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stdout, "stress: FAILED: %v\n%s\n", err, summary)
		return reported{err}
	}
	fmt.Fprintf(stdout, "stress: OK\n%s\n", summary)
	return nil
}

// stressPolicy judges a stress's answers: every write and edit 2xx, every
// read 2xx or 429 (the exports' caps), no transport error.
func stressPolicy(s stats) verdict {
	v := verdict{badStatuses: map[int]int{}, badErrors: map[string]int{}}
	for k, ks := range s {
		for code, n := range ks.statuses {
			if !(code >= 200 && code < 300 || code == 429 && (k == kindAggregate || k == kindExport)) {
				v.badStatuses[code] += n
			}
		}
		maps.Copy(v.badErrors, ks.errors)
	}
	return v
}

func requests(s stats) (n int) {
	for _, ks := range s {
		n += sum(ks.statuses) + sum(ks.errors)
	}
	return n
}

func fiveXX(s stats) (n int) {
	for _, ks := range s {
		for code, c := range ks.statuses {
			if code >= 500 {
				n += c
			}
		}
	}
	return n
}

func (s *stressor) token() string {
	return s.tokens[(s.nextTok.Add(1)-1)%uint64(len(s.tokens))]
}

func (s *stressor) url(format string, args ...any) string {
	return s.cfg.base + fmt.Sprintf("/api/v1/org/%d/proj/%d", s.cfg.org, s.cfg.proj) + fmt.Sprintf(format, args...)
}

// setup creates a blueprint of two inputs, a constant and an output, and
// the sensors, one instance of it each.
func (s *stressor) setup(ctx context.Context) error {
	blueprint := map[string]any{
		"name":      "stress",
		"inputs":    []map[string]string{{"key": "a", "name": "A"}, {"key": "b", "name": "B"}},
		"constants": []map[string]any{{"key": "k", "name": "K", "default": 1}},
		"outputs":   []map[string]string{{"key": "p", "name": "P", "formula": "a * k + b"}},
	}
	var bp struct {
		ID int64 `json:"id"`
	}
	if err := s.api(ctx, http.MethodPost, s.cfg.base+fmt.Sprintf("/api/v1/org/%d/blueprints", s.cfg.org), blueprint, &bp); err != nil {
		return err
	}
	for i := range s.cfg.sensors {
		var sensor struct {
			ID     int64 `json:"id"`
			Inputs []struct {
				ID  int64  `json:"id"`
				Key string `json:"key"`
			} `json:"inputs"`
		}
		body := map[string]any{"name": fmt.Sprintf("stress-%d", i+1), "blueprint_id": bp.ID}
		if err := s.api(ctx, http.MethodPost, s.url("/sensors"), body, &sensor); err != nil {
			return err
		}
		if len(sensor.Inputs) != 2 {
			return fmt.Errorf("sensor %d has %d inputs, want 2", sensor.ID, len(sensor.Inputs))
		}
		m := &sensorModel{id: sensor.ID, readings: map[int64][2]float64{}}
		for j, in := range sensor.Inputs {
			m.inputIDs[j], m.keys[j] = strconv.FormatInt(in.ID, 10), in.Key
		}
		s.sensors = append(s.sensors, m)
	}
	return nil
}

// api makes one request of the set-up as the admin, and decodes its answer.
func (s *stressor) api(ctx context.Context, method, url string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, answer)
	}
	return json.Unmarshal(answer, out)
}

// frontier is where the writers' new readings are at the moment: it
// crosses cfg.days days in the run.
func (s *stressor) frontier() int64 {
	progress := float64(time.Since(s.start)) / float64(s.cfg.duration)
	return s.first.Add(time.Duration(min(progress, 1) * float64(time.Duration(s.cfg.days)*24*time.Hour))).UnixMicro()
}

// write is the writer of one sensor: one request at a time until ctx is
// done, each applied to the model once acknowledged.
func (s *stressor) write(ctx context.Context, m *sensorModel, st stats, r *rand.Rand) {
	for ctx.Err() == nil && m.unknown == "" {
		switch n := r.IntN(100); {
		case n < 40 || len(m.spans) < 3:
			s.forward(m, st, r)
		case n < 55:
			s.overwrite(m, st, r)
		case n < 70:
			s.backfill(m, st, r)
		case n < 85:
			s.file(m, st, r)
		default:
			s.deleteRange(m, st, r)
		}
	}
}

const second = int64(time.Second / time.Microsecond)

// forward posts 100 readings a second apart, after the sensor's newest and
// from the frontier on.
func (s *stressor) forward(m *sensorModel, st stats, r *rand.Rand) {
	from := max(m.newest+second, s.frontier())
	readings := make(map[int64][2]float64, 100)
	for i := range int64(100) {
		readings[from+i*second] = values(r)
	}
	if s.post(m, st.kind(kindForward), readings) {
		m.spans = append(m.spans, span{from, from + 99*second})
	}
}

// overwrite posts, with new values, the readings the model holds in one
// of the sensor's old spans.
func (s *stressor) overwrite(m *sensorModel, st stats, r *rand.Rand) {
	sp := m.spans[r.IntN(len(m.spans))]
	readings := map[int64][2]float64{}
	for t := range m.readings {
		if t >= sp.from && t <= sp.to {
			readings[t] = values(r)
		}
	}
	if len(readings) == 0 {
		return
	}
	s.post(m, st.kind(kindOverwrite), readings)
}

// backfill posts 50 new readings half a second after those of an old span.
func (s *stressor) backfill(m *sensorModel, st stats, r *rand.Rand) {
	sp := m.spans[r.IntN(len(m.spans))]
	readings := make(map[int64][2]float64, 50)
	for i := range int64(50) {
		readings[sp.from+i*second+second/2] = values(r)
	}
	s.post(m, st.kind(kindBackfill), readings)
}

// file posts a CSV file: new values for the model's readings of an old
// span, in order, then 40 new readings a quarter of a second after them,
// shuffled, which the service stages.
func (s *stressor) file(m *sensorModel, st stats, r *rand.Rand) {
	sp := m.spans[r.IntN(len(m.spans))]
	var times []int64
	for t := range m.readings {
		if t >= sp.from && t <= sp.to {
			times = append(times, t)
		}
	}
	slices.Sort(times)
	late := make([]int64, 40)
	for i := range late {
		late[i] = sp.from + int64(i)*second + second/4
	}
	r.Shuffle(len(late), func(i, j int) { late[i], late[j] = late[j], late[i] })
	times = append(times, late...)
	readings := make(map[int64][2]float64, len(times))
	var body bytes.Buffer
	fmt.Fprintf(&body, "datetime,%s,%s\n", m.keys[0], m.keys[1])
	for _, t := range times {
		v := values(r)
		readings[t] = v
		fmt.Fprintf(&body, "%s,%s,%s\n", time.UnixMicro(t).UTC().Format(time.RFC3339Nano), number(v[0]), number(v[1]))
	}
	ks := st.kind(kindFile)
	status := sendAs(s.client, ks, time.Now(), http.MethodPost, s.url("/readings/%d", m.id), s.token(), "text/csv", body.Bytes())
	s.apply(m, status, readings, nil)
}

// deleteRange deletes 30 s of an old span, as the admin (the role a
// delete takes).
func (s *stressor) deleteRange(m *sensorModel, st stats, r *rand.Rand) {
	sp := m.spans[r.IntN(len(m.spans))]
	from := sp.from + int64(r.IntN(60))*second
	to := from + 30*second
	q := url.Values{"datetime__gte": {stamp(from)}, "datetime__lt": {stamp(to)}}
	status := send(s.client, st.kind(kindDelete), time.Now(), http.MethodDelete, s.url("/readings/%d?%s", m.id, q.Encode()), s.admin, nil)
	s.apply(m, status, nil, &span{from, to - 1})
}

// post posts readings as a JSON batch, and says whether it was acknowledged.
func (s *stressor) post(m *sensorModel, ks *kindStats, readings map[int64][2]float64) bool {
	var body bytes.Buffer
	body.WriteByte('[')
	for i, t := range slices.Sorted(maps.Keys(readings)) {
		if i > 0 {
			body.WriteByte(',')
		}
		v := readings[t]
		fmt.Fprintf(&body, `{"datetime":%q,"inputs":{%q:%s,%q:%s}}`, stamp(t), m.inputIDs[0], number(v[0]), m.inputIDs[1], number(v[1]))
	}
	body.WriteByte(']')
	status := send(s.client, ks, time.Now(), http.MethodPost, s.url("/readings/%d", m.id), s.token(), body.Bytes())
	return s.apply(m, status, readings, nil)
}

// apply applies an acknowledged write to the model. Any other answer
// leaves the model unknown: the write may or may not have been stored.
func (s *stressor) apply(m *sensorModel, status int, readings map[int64][2]float64, deleted *span) bool {
	if status != http.StatusOK {
		m.unknown = fmt.Sprintf("a write answered %d", status)
		return false
	}
	for t, v := range readings {
		m.readings[t] = v
		m.newest = max(m.newest, t)
	}
	if deleted != nil {
		for t := range m.readings {
			if t >= deleted.from && t <= deleted.to {
				delete(m.readings, t)
			}
		}
	}
	return true
}

// read reads aggregates of two days and exports of one, of sensors chosen
// at random and where the writers have been, until ctx is done, pausing
// readPause between requests so as not to crowd out the writers.
func (s *stressor) read(ctx context.Context, st stats, r *rand.Rand) {
	const day = int64(24 * time.Hour / time.Microsecond)
	for ctx.Err() == nil {
		m := s.sensors[r.IntN(len(s.sensors))]
		first := s.first.UnixMicro()
		from := first + r.Int64N(s.frontier()-first+1)
		if r.IntN(2) == 0 {
			q := url.Values{"interval": {"1h"}, "fn": {"avg,min,max"}, "outputs": {"true"},
				"datetime__gte": {stamp(from - day)}, "datetime__lt": {stamp(from + day)}}
			send(s.client, st.kind(kindAggregate), time.Now(), http.MethodGet, s.url("/readings/%d/aggregates?%s", m.id, q.Encode()), s.token(), nil)
		} else {
			q := url.Values{"datetime__gte": {stamp(from - day)}, "datetime__lt": {stamp(from)}}
			send(s.client, st.kind(kindExport), time.Now(), http.MethodGet, s.url("/readings/%d/export?%s", m.id, q.Encode()), s.token(), nil)
		}
		select {
		case <-ctx.Done():
		case <-time.After(readPause):
		}
	}
}

// readPause is how long a reader waits between two requests.
const readPause = 50 * time.Millisecond

// edit edits the constant of a sensor chosen at random, a few times a
// second, until ctx is done: each edit queues every hour of the sensor's
// output rollups again.
func (s *stressor) edit(ctx context.Context, st stats, r *rand.Rand) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m := s.sensors[r.IntN(len(s.sensors))]
		body := fmt.Appendf(nil, `{"constants":{"k":%s}}`, number(float64(r.IntN(100)+1)/10))
		send(s.client, st.kind(kindFormulas), time.Now(), http.MethodPut, s.url("/sensors/%d/formulas", m.id), s.admin, body)
	}
}

// jobRuns is what the compression job's runs did.
type jobRuns struct {
	runs    int
	errs    []error // of runs that failed, but for giving way to writers
	gaveWay int     // chunks whose recompression gave way to writers
	skipped int     // chunks whose recompression was skipped for writers
}

// policyNotices collects the warnings the compression job sends its
// session: one for each chunk it could not compress, with the cause.
type policyNotices struct {
	mu      sync.Mutex
	notices []*pgconn.Notice
}

func (p *policyNotices) add(_ *pgconn.PgConn, n *pgconn.Notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notices = append(p.notices, n)
}

func (p *policyNotices) take() []*pgconn.Notice {
	p.mu.Lock()
	defer p.mu.Unlock()
	taken := p.notices
	p.notices = nil
	return taken
}

// What a notice of the compression job says of a chunk.
const (
	chunkOther   = iota // nothing of one chunk
	chunkSkipped        // its recompression was skipped: writers were at it
	chunkGaveWay        // its recompression gave up rather than wait for writers
	chunkFailed         // it could not be compressed, for another cause
)

// chunkOutcome reads a notice of the compression job.
func chunkOutcome(n *pgconn.Notice) int {
	switch {
	case strings.HasPrefix(n.Message, "skipping recompression of chunk") && strings.Contains(n.Message, "concurrent DML"):
		return chunkSkipped
	case strings.Contains(n.Detail, "aborting recompression due to concurrent"):
		return chunkGaveWay
	case strings.HasPrefix(n.Message, "converting chunk") && strings.Contains(n.Message, "failed"):
		return chunkFailed
	}
	return chunkOther
}

// compress runs the compression policy's job every cfg.compressEvery
// until ctx is done, as TimescaleDB's scheduler would run it, only far
// more often. Recompressing a chunk being written gives way to its
// writers by design: TimescaleDB skips it, or gives up at the end rather
// than wait for them, says so in a warning and fails the run ("columnstore
// policy failure") after trying the other chunks. Such a run is not a
// failure here; any other cause of a chunk's failure, a deadlock say, is.
func (s *stressor) compress(ctx context.Context, db *pgx.Conn, jobID int64, notices *policyNotices) jobRuns {
	var job jobRuns
	tick := time.NewTicker(s.cfg.compressEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return job
		case <-tick.C:
		}
		job.runs++
		_, err := db.Exec(context.WithoutCancel(ctx), `CALL run_job($1)`, jobID)
		other := 0
		for _, n := range notices.take() {
			switch chunkOutcome(n) {
			case chunkSkipped:
				job.skipped++
			case chunkGaveWay:
				job.gaveWay++
			case chunkFailed:
				other++
				job.errs = append(job.errs, fmt.Errorf("%s: %s", n.Message, n.Detail))
			}
		}
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Message == "columnstore policy failure" && other == 0) {
			job.errs = append(job.errs, err)
		}
	}
}

// verify reads every reading of the sensors back from the database and
// compares them with the models. It returns how many readings it checked
// and a line for each one that differs.
func (s *stressor) verify(ctx context.Context, db *pgx.Conn) (checked int, mismatches []string, err error) {
	for _, m := range s.sensors {
		if m.unknown != "" {
			mismatches = append(mismatches, fmt.Sprintf("sensor %d: not checked: %s", m.id, m.unknown))
			continue
		}
		rows, _ := db.Query(ctx, `SELECT (extract(epoch FROM datetime) * 1000000)::bigint, input_ids, vals FROM readings WHERE sensor_id = $1`, m.id)
		stored := map[int64][2]float64{}
		var (
			t   int64
			ids []int64
			vs  []float64
		)
		_, err := pgx.ForEachRow(rows, []any{&t, &ids, &vs}, func() error {
			var v [2]float64
			for i, id := range ids {
				for j := range m.inputIDs {
					if strconv.FormatInt(id, 10) == m.inputIDs[j] {
						v[j] = vs[i]
					}
				}
			}
			stored[t] = v
			return nil
		})
		if err != nil {
			return checked, mismatches, err
		}
		for t, want := range m.readings {
			checked++
			if got, ok := stored[t]; !ok {
				mismatches = append(mismatches, fmt.Sprintf("sensor %d: %s acknowledged, not stored", m.id, stamp(t)))
			} else if got != want {
				mismatches = append(mismatches, fmt.Sprintf("sensor %d: %s stored %v, acknowledged %v", m.id, stamp(t), got, want))
			}
		}
		for t := range stored {
			if _, ok := m.readings[t]; !ok {
				mismatches = append(mismatches, fmt.Sprintf("sensor %d: %s stored, never acknowledged or deleted since", m.id, stamp(t)))
			}
		}
	}
	return checked, mismatches, nil
}

// values are two random values with two decimals, which every format
// carries exactly.
func values(r *rand.Rand) [2]float64 {
	return [2]float64{float64(r.IntN(1_000_000)) / 100, float64(r.IntN(1_000_000)) / 100}
}

func number(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func stamp(t int64) string {
	return time.UnixMicro(t).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
