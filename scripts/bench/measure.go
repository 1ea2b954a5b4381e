package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/store"
)

// results collects the rows of the tables and the raw figures that later
// rows are compared with.
type results struct {
	rows    []row
	storage []storageRow

	rawIngest           float64       // readings/s, row 1
	rawOverwrite        float64       // readings/s, row 2
	rawIngestBatched    float64       // readings/s, row 1b: in the service's batches
	rawOverwriteBatched float64       // readings/s, row 2b
	rawRead             time.Duration // p50, row 5
}

// row is a line of the main table.
type row struct {
	id          string // "1", "7a": the table is sorted by it
	measurement string
	figure      string
	ratio       string // to the matching raw figure, or "" where there is none
}

func (r *results) add(id, measurement, figure, ratio string) {
	r.rows = append(r.rows, row{id, measurement, figure, ratio})
}

// phase is one step of the run. Rows are added by the phase that measures
// them; a new row is a new phase here, or a new add in an existing one.
type phase struct {
	name    string
	run     func(context.Context, *results) error
	prepare bool // measures nothing: other processes' load does not matter
}

// The service's CPU profiles (-profile) run for these times, enough for
// the phases of a full run on two cores: 1,000,000 readings in about 15 s,
// 1,000 pages in about 3 s.
const (
	ingestProfileTime = 15 * time.Second
	readProfileTime   = 5 * time.Second
)

// phaseTimeout bounds each phase; the full run's slowest takes about a
// minute on two cores.
const phaseTimeout = 5 * time.Minute

// measure runs every phase in order. The order matters: the raw writes run
// on an empty table and the service's writes run on a table emptied again,
// so that each pair is measured on the same state; reads run on the
// service's data once vacuumed.
func measure(ctx context.Context, e *env) (*report, error) {
	if err := checkServiceSQL(e.root); err != nil {
		return nil, err
	}
	rep := &report{cfg: e.cfg}
	m, err := e.machine(ctx)
	if err != nil {
		return nil, err
	}
	rep.machine = m
	rep.machine.loadBefore = e.loadBefore

	phases := []phase{
		{name: "raw ingest", run: e.rawIngest},
		{name: "raw overwrite", run: e.rawOverwrite},
		{name: "empty readings", run: e.emptyReadings, prepare: true},
		{name: "raw ingest in the service's batches", run: e.rawIngestBatched},
		{name: "raw overwrite in the service's batches", run: e.rawOverwriteBatched},
		{name: "empty readings", run: e.emptyReadings, prepare: true},
		{name: "raw ingest with the service's concurrency", run: e.rawIngestConcurrent},
		{name: "empty readings", run: e.emptyReadings, prepare: true},
		{name: "service ingest", run: e.serviceIngest},
		{name: "service overwrite", run: e.serviceOverwrite},
		{name: "vacuum readings", run: e.vacuumReadings, prepare: true},
		{name: "raw read", run: e.rawRead},
		{name: "service read", run: e.serviceRead},
		{name: "blueprint sensor", run: e.blueprintSensor, prepare: true},
		{name: "service read with outputs", run: e.serviceReadOutputs},
		{name: "formulas", run: e.formulasRate},
		{name: "peak memory with large batches", run: e.largeBatchMemory},
		{name: "storage: arrays against jsonb", run: e.storageChoice},
		{name: "grow the table for latest values", run: e.growForLatest, prepare: true},
		{name: "latest values", run: e.latestValues},
		{name: "latest values over 100 chunks", run: e.latestOverChunks},
	}
	var (
		res      results
		meter    = e.newCPUMeter(ctx)
		measured []cpuSample // before and after each measuring phase
	)
	e.meter = meter
	for _, p := range phases {
		e.log.Info("phase", "name", p.name)
		pctx, cancel := context.WithTimeout(ctx, phaseTimeout)
		e.timed = nil
		before := meter.sample()
		err := p.run(pctx, &res)
		after := meter.sample()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if p.prepare {
			continue
		}
		measured = append(measured, before, after)
		timed := e.timed
		if len(timed) == 0 {
			timed = []cpuSample{before, after}
		}
		if c, ok := cpuOf(p.name, timed); ok {
			rep.cpu = append(rep.cpu, c)
		}
		share := othersShare(before, after)
		if share > rep.busiest.share {
			rep.busiest = phaseLoad{p.name, share}
		}
		if share > 0.10 {
			e.log.Warn("other processes took CPU during the phase; its figures are low", "phase", p.name, "others_cpu", percent(share))
		}
	}
	rep.others = othersShareOf(measured)
	rep.rows, rep.storage = res.rows, res.storage
	rep.machine.loadAfter = loadAverage()
	return rep, nil
}

// rawIngest is row 1: the fastest PostgreSQL takes new readings from Go,
// one connection, binary COPY, no transaction around it but its own.
func (e *env) rawIngest(ctx context.Context, res *results) error {
	rows := e.cfg.copyRows()
	rate, err := e.rawCopy(ctx, rows)
	if err != nil {
		return err
	}
	res.rawIngest = rate
	res.add("1", fmt.Sprintf("Raw ingest: pgx `CopyFrom` into `readings`, binary, 1 connection, %s", e.copyBatchText(rows)),
		perSecond(rate), "1 (the limit)")
	return nil
}

// rawIngestBatched is row 1b: row 1 in transactions the size of the
// service's POSTs. Each POST is a transaction that must be durable before
// it is acknowledged; this is the limit for that, the yardstick of row 3.
func (e *env) rawIngestBatched(ctx context.Context, res *results) error {
	rows := min(e.cfg.postBatch, e.cfg.perSensor())
	rate, err := e.rawCopy(ctx, rows)
	if err != nil {
		return err
	}
	res.rawIngestBatched = rate
	res.add("1b", fmt.Sprintf("Raw ingest as row 1, in the service's batches: %s", e.copyBatchText(rows)),
		perSecond(rate), "1 (the limit for row 3)")
	return nil
}

// rawIngestConcurrent is row 1c: the COPYs of row 1b sent as the service's
// clients send their POSTs, on as many connections at once. It separates
// what concurrent writers cost PostgreSQL from what the service costs.
func (e *env) rawIngestConcurrent(ctx context.Context, res *results) error {
	spans := e.data.roundRobin(e.cfg.postBatch)
	e.checkpoint(ctx)
	stop := e.clock()
	err := parallel(ctx, e.cfg.clients, len(spans), func(ctx context.Context, _, job int) error {
		return e.copySpan(ctx, e.pool, spans[job])
	})
	elapsed := stop()
	if err != nil {
		return err
	}
	r := rate(e.data.len(), elapsed)
	e.log.Info("raw ingest", "rows_per_copy", e.cfg.postBatch, "connections", e.cfg.clients, "readings/s", int(r))
	res.add("1c", fmt.Sprintf("Raw ingest as row 1b, on %d connections at once, in the order of row 3's POSTs", e.cfg.clients),
		perSecond(r), ratio(r/res.rawIngestBatched, "(1b)"))
	return nil
}

func (e *env) rawCopy(ctx context.Context, rows int) (float64, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	spans := e.data.bySensor(rows)
	e.checkpoint(ctx)
	stop := e.clock()
	for _, sp := range spans {
		if err := e.copySpan(ctx, conn, sp); err != nil {
			return 0, err
		}
	}
	rate := rate(e.data.len(), stop())
	e.log.Info("raw ingest", "rows_per_copy", rows, "readings/s", int(rate))
	return rate, nil
}

// copier is a pool or one of its connections.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// copySpan COPYs a span of the data set into readings, every row of it.
func (e *env) copySpan(ctx context.Context, db copier, sp span) error {
	n, err := db.CopyFrom(ctx, pgx.Identifier{"readings"}, readingColumns, newCopySource(e.data, sp))
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if n != int64(sp.len()) {
		return fmt.Errorf("copy: %d rows of %d", n, sp.len())
	}
	return nil
}

// rawOverwrite is row 2: the service's conflict path (COPY into a
// temporary table, then INSERT … ON CONFLICT DO UPDATE, its SQL verbatim)
// without the service, overwriting every reading of row 1.
func (e *env) rawOverwrite(ctx context.Context, res *results) error {
	rows := e.cfg.copyRows()
	rate, err := e.rawUpsert(ctx, rows)
	if err != nil {
		return err
	}
	res.rawOverwrite = rate
	res.add("2", fmt.Sprintf("Raw overwrite: COPY into a temp table + one `INSERT … ON CONFLICT DO UPDATE` (the service's SQL), 1 connection, %s", e.copyBatchText(rows)),
		perSecond(rate), "1 (the limit)")
	return nil
}

// rawOverwriteBatched is row 2b: row 2 in the service's batches, the
// yardstick of row 4.
func (e *env) rawOverwriteBatched(ctx context.Context, res *results) error {
	rows := min(e.cfg.postBatch, e.cfg.perSensor())
	rate, err := e.rawUpsert(ctx, rows)
	if err != nil {
		return err
	}
	res.rawOverwriteBatched = rate
	res.add("2b", fmt.Sprintf("Raw overwrite as row 2, in the service's batches: %s", e.copyBatchText(rows)),
		perSecond(rate), "1 (the limit for row 4)")
	return nil
}

func (e *env) rawUpsert(ctx context.Context, rows int) (float64, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	spans := e.data.bySensor(rows)
	e.checkpoint(ctx)
	stop := e.clock()
	for _, sp := range spans {
		err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, createIncomingSQL); err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"readings_incoming"}, readingColumns, newCopySource(e.data, sp)); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, upsertIncomingSQL)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != int64(sp.len()) {
				return fmt.Errorf("upsert touched %d rows of %d", tag.RowsAffected(), sp.len())
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("overwrite: %w", err)
		}
	}
	rate := rate(e.data.len(), stop())
	e.log.Info("raw overwrite", "rows_per_copy", rows, "readings/s", int(rate))
	return rate, nil
}

func (e *env) copyBatchText(rows int) string {
	text := fmt.Sprintf("%s rows per COPY", count(rows))
	if rows == e.cfg.perSensor() {
		text += " (one COPY per sensor)"
	}
	return text
}

// emptyReadings empties the table the raw phases filled, so that the
// service writes new readings into an empty table, as row 1 did.
func (e *env) emptyReadings(ctx context.Context, _ *results) error {
	_, err := e.pool.Exec(ctx, "TRUNCATE readings")
	return err
}

// serviceIngest is rows 3 and 7a: the same readings POSTed by concurrent
// clients in batches, and the service's peak memory meanwhile. Bodies are
// encoded before the clock starts; the client's cost is sending them.
func (e *env) serviceIngest(ctx context.Context, res *results) error {
	spans, bodies := e.postBodies()
	e.checkpoint(ctx)
	if err := e.svc.resetPeakRSS(); err != nil {
		return err
	}
	profiled := e.profile(ctx, "ingest", ingestProfileTime)
	elapsed, err := e.post(ctx, spans, bodies)
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	peak, err := e.svc.peakRSS()
	if err != nil {
		return err
	}
	if err := e.expectReadings(ctx, e.data.len()); err != nil {
		return err
	}
	r := rate(e.data.len(), elapsed)
	e.log.Info("service ingest", "readings/s", int(r), "peak_rss_mib", peak>>20)
	res.add("3", fmt.Sprintf("Service ingest, new readings: POST %s readings per batch, %d concurrent clients, keep-alive",
		count(e.cfg.postBatch), e.cfg.clients), perSecond(r),
		ratio(r/res.rawIngestBatched, "(1b)")+"; "+ratio(r/res.rawIngest, "(1)"))
	res.add("7a", fmt.Sprintf("Service peak RSS (VmHWM) during (3), %s-reading bodies", count(e.cfg.postBatch)),
		mib(peak), "")
	return nil
}

// serviceOverwrite is row 4: the POSTs of row 3 again, each of whose
// readings now exists, so that every batch takes the conflict path.
func (e *env) serviceOverwrite(ctx context.Context, res *results) error {
	spans, bodies := e.postBodies()
	e.checkpoint(ctx)
	profiled := e.profile(ctx, "overwrite", ingestProfileTime)
	elapsed, err := e.post(ctx, spans, bodies)
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	if err := e.expectReadings(ctx, e.data.len()); err != nil {
		return err
	}
	r := rate(e.data.len(), elapsed)
	e.log.Info("service overwrite", "readings/s", int(r))
	res.add("4", "Service ingest, overwriting: the POSTs of (3) again, every reading replacing a stored one",
		perSecond(r), ratio(r/res.rawOverwriteBatched, "(2b)")+"; "+ratio(r/res.rawOverwrite, "(2)"))
	return nil
}

// postBodies encodes the data set as POST bodies, once per run: the same
// bytes serve rows 3 and 4.
func (e *env) postBodies() ([]span, [][]byte) {
	if e.bodies == nil {
		e.spans = e.data.roundRobin(e.cfg.postBatch)
		e.bodies = make([][]byte, len(e.spans))
		for i, sp := range e.spans {
			e.bodies[i] = e.data.appendJSON(nil, sp)
		}
	}
	return e.spans, e.bodies
}

// post sends the bodies with cfg.clients concurrent clients and returns how
// long all of them took.
func (e *env) post(ctx context.Context, spans []span, bodies [][]byte) (time.Duration, error) {
	buffers := make([]bytes.Buffer, e.cfg.clients)
	stop := e.clock()
	err := parallel(ctx, e.cfg.clients, len(bodies), func(ctx context.Context, worker, job int) error {
		return e.svc.postReadings(ctx, spans[job].sensor, bodies[job], &buffers[worker])
	})
	return stop(), err
}

// expectReadings checks that the table holds n readings: a figure for
// readings the service did not store would be worthless.
func (e *env) expectReadings(ctx context.Context, n int) error {
	var got int
	if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM readings").Scan(&got); err != nil {
		return fmt.Errorf("count readings: %w", err)
	}
	if got != n {
		return fmt.Errorf("readings holds %d rows, want %d", got, n)
	}
	return nil
}

// vacuumReadings clears the dead rows the overwrites left, so that the
// reads see the table as it is between ingest bursts.
func (e *env) vacuumReadings(ctx context.Context, _ *results) error {
	_, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
}

// readPick is one timed read: a sensor and an instant with at least a page
// of readings from it on.
type readPick struct {
	sensor int
	from   time.Time
}

// warmUps are reads run before the timed ones, so that the first timed
// reads pay for no connection's first planning of the statement.
const warmUps = 50

// readPicks are the timed reads of rows 5 and 6, the same ones in the same
// order, so that the service's figure differs from the raw one only by the
// service.
func (e *env) readPicks() []readPick {
	rng := rand.New(rand.NewPCG(e.cfg.seed, 2))
	picks := make([]readPick, e.cfg.queries)
	for i := range picks {
		picks[i] = readPick{
			sensor: rng.IntN(len(e.data.sensors)),
			from:   e.data.at(rng.IntN(e.data.perSensor - pageSize + 1)),
		}
	}
	return picks
}

// rawRead is row 5: the service's page query, with the parameters the
// service passes for datetime__gte alone, every row scanned into Go values
// as the service scans it (store.ScanReadings).
func (e *env) rawRead(ctx context.Context, res *results) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	picks := e.readPicks()
	// An untimed pass first brings every page the picks touch into shared
	// buffers. Without it the raw reads would pay for the cache misses and
	// the service's reads of the same pages, run next, would not.
	for pass := range 2 {
		times := make([]time.Duration, 0, len(picks))
		var stop func() time.Duration
		if pass == 1 {
			stop = e.clock()
		}
		for _, p := range picks {
			start := time.Now()
			rows, err := conn.Query(ctx, listReadingsAscSQL, e.data.sensors[p.sensor], p.from, store.MaxTime, pageSize, int64(0))
			if err != nil {
				return err
			}
			n := 0
			if err := store.ScanReadings(rows, func(*store.Reading) error { n++; return nil }); err != nil {
				return err
			}
			times = append(times, time.Since(start))
			if n != pageSize {
				return fmt.Errorf("read %d rows, want %d", n, pageSize)
			}
		}
		if pass == 0 {
			continue
		}
		stop()
		p50, p99 := percentiles(times)
		res.rawRead = p50
		e.log.Info("raw read", "p50", p50, "p99", p99)
		res.add("5", fmt.Sprintf("Raw read: the service's page query (`listReadingsAscSQL`), %s rows scanned into Go values, 1 connection, %s queries",
			count(pageSize), count(len(times))), latency(p50, p99), "1 (the limit)")
	}
	return nil
}

// serviceRead is row 6.
func (e *env) serviceRead(ctx context.Context, res *results) error {
	return e.timeServiceRead(ctx, res, "6", "Service read: `GET …/readings/{sensor}?limit=1000&datetime__gte=…&outputs=false`", false, e.readPicks())
}

// timeServiceRead times GETs of the picks of row 5, one at a time on one
// keep-alive connection, and adds the row id, comparing its p50 with the
// raw read's.
func (e *env) timeServiceRead(ctx context.Context, res *results, id, measurement string, outputs bool, picks []readPick) error {
	var page bytes.Buffer
	// The warm-ups reach every connection of the service's pool; they are
	// the only responses decoded, as decoding is the client's cost.
	for _, p := range picks[:min(warmUps, len(picks))] {
		if err := e.svc.getReadings(ctx, p.sensor, p.from, outputs, &page); err != nil {
			return err
		}
		var readings []json.RawMessage
		if err := json.Unmarshal(page.Bytes(), &readings); err != nil {
			return fmt.Errorf("GET readings: %w", err)
		}
		if len(readings) != pageSize {
			return fmt.Errorf("GET readings: %d readings, want %d", len(readings), pageSize)
		}
	}
	times := make([]time.Duration, 0, len(picks))
	profiled := e.profile(ctx, "read-"+id, readProfileTime)
	stop := e.clock()
	for _, p := range picks {
		start := time.Now()
		if err := e.svc.getReadings(ctx, p.sensor, p.from, outputs, &page); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	stop()
	if err := profiled(); err != nil {
		return err
	}
	p50, p99 := percentiles(times)
	e.log.Info("service read", "outputs", outputs, "p50", p50, "p99", p99)
	res.add(id, measurement+", "+count(len(times))+" requests, 1 client",
		fmt.Sprintf("%s; %s per reading", latency(p50, p99), duration(p50/pageSize)),
		ratio(float64(p50)/float64(res.rawRead), "(5), p50"))
	return nil
}

// largeBatchMemory is row 7b: the service's peak memory while clients post
// the largest batches it takes. Readings are new, at instants after the
// data set's.
func (e *env) largeBatchMemory(ctx context.Context, res *results) error {
	const rounds = 3
	n := e.cfg.largeBatch
	spans := make([]span, 0, rounds*e.cfg.clients)
	for round := range rounds {
		for c := range e.cfg.clients {
			from := e.data.perSensor + round*n
			spans = append(spans, span{sensor: c % len(e.data.sensors), from: from, to: from + n})
		}
	}
	bodies := make([][]byte, len(spans))
	for i, sp := range spans {
		bodies[i] = e.data.appendJSON(nil, sp)
	}
	// Before the reset: the profile's own request is not the phase's.
	if err := e.heapProfile(ctx, "heap-before-7b"); err != nil {
		return err
	}
	if err := e.svc.resetPeakRSS(); err != nil {
		return err
	}
	elapsed, err := e.post(ctx, spans, bodies)
	if err != nil {
		return err
	}
	peak, err := e.svc.peakRSS()
	if err != nil {
		return err
	}
	if err := e.heapProfile(ctx, "heap-after-7b"); err != nil {
		return err
	}
	r := rate(len(spans)*n, elapsed)
	e.log.Info("large batches", "readings/s", int(r), "peak_rss_mib", peak>>20, "body_mib", len(bodies[0])>>20)
	res.add("7b", fmt.Sprintf("Service peak RSS (VmHWM), %d concurrent POSTs of %s readings (%s bodies), %d rounds",
		e.cfg.clients, count(n), mib(int64(len(bodies[0]))), rounds),
		fmt.Sprintf("%s (at %s)", mib(peak), perSecond(r)), "")
	return nil
}

// clock starts the timed part of a phase and returns its stop, which says
// how long it took. The CPU table covers the timed parts of a phase that
// has them, not its set-up: encoding bodies, checkpoints, counting rows,
// waiting for a profile.
func (e *env) clock() (stop func() time.Duration) {
	before := e.meter.sample()
	start := time.Now()
	return func() time.Duration {
		elapsed := time.Since(start)
		e.timed = append(e.timed, before, e.meter.sample())
		return elapsed
	}
}

// checkpoint flushes dirty pages before a write phase, so that a phase does
// not pay for the previous one's checkpoint. It needs superuser or
// pg_checkpoint; without, the figures are noisier, not wrong.
func (e *env) checkpoint(ctx context.Context) {
	if _, err := e.pool.Exec(ctx, "CHECKPOINT"); err != nil {
		e.log.Warn("checkpoint failed; write figures may include the previous phase's checkpoint", "err", err)
	}
}

// parallel runs fn for jobs 0..jobs-1 on workers goroutines and returns the
// first error, after which no job starts.
func parallel(ctx context.Context, workers, jobs int, fn func(ctx context.Context, worker, job int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				job := int(next.Add(1) - 1)
				if job >= jobs {
					return
				}
				if err := fn(ctx, w, job); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

// percentiles returns the p50 and p99 of times, by the nearest-rank method.
func percentiles(times []time.Duration) (p50, p99 time.Duration) {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return sorted[max(0, min(i, len(sorted)-1))]
	}
	return rank(0.50), rank(0.99)
}
