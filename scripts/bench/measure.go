package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
	rawIngestConcurrent float64       // readings/s, row 1c
	serviceIngest       float64       // readings/s, row 3
	serviceOverwrite    float64       // readings/s, row 4
	serviceRead         time.Duration // p50, row 6

	// The CPU per reading of rows 1c, 3 and 4, for the targets of issue 26.
	rawIngestConcurrentCPU, serviceIngestCPU, serviceOverwriteCPU cpuSpent
	serviceRead99                                                 time.Duration // p99, row 6
	serviceReadCPU                                                cpuSpent      // row 6's: the service's and its share of PostgreSQL's

	peers []*peerResult
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
	prepare bool          // measures nothing: other processes' load does not matter
	timeout time.Duration // phaseTimeout when 0
}

// The service's CPU profiles (-profile) run for these fixed times, meant
// to cover a phase of a full run on two cores (the CPU table's seconds say
// whether they did).
const (
	ingestProfileTime = 15 * time.Second
	readProfileTime   = 5 * time.Second
)

// phaseTimeout bounds each phase, far above what the CPU table shows the
// slowest taking, so that only a stuck phase meets it.
const phaseTimeout = 5 * time.Minute

// measure runs every phase in order. The order matters: the raw writes run
// on an empty table and the service's writes run on a table emptied again,
// so that each pair is measured on the same state; reads run on the
// service's data once vacuumed.
func measure(ctx context.Context, e *env) (*report, error) {
	rep := &report{cfg: e.cfg}
	m, err := e.machine(ctx)
	if err != nil {
		return nil, err
	}
	rep.machine = m
	e.log.Info("measuring", "storage_mode", m.storage)
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
		{name: "small batches of a logger fleet", run: e.smallBatches},
		{name: "vacuum readings", run: e.vacuumReadings, prepare: true},
		{name: "service read", run: e.serviceRead},
		{name: "blueprint sensor", run: e.blueprintSensor, prepare: true},
		{name: "service read with outputs", run: e.serviceReadOutputs},
		{name: "linked sensors", run: e.linkedSensors, prepare: true},
		{name: "service read with a linked input", run: e.linkedRead},
		{name: "formulas", run: e.formulasRate},
		{name: "peak memory with large batches", run: e.largeBatchMemory},
		{name: "storage: arrays against jsonb", run: e.storageChoice},
		{name: "grow the table for latest values", run: e.growForLatest, prepare: true},
		{name: "latest values", run: e.latestValues},
		{name: "latest values over 100 chunks", run: e.latestOverChunks},
		{name: "file import", run: e.serviceImport},
		{name: "ingest with alarm rules", run: e.alarmIngest},
		{name: "ingest with a rate rule", run: e.rateIngest, timeout: 10 * time.Minute}, // three variants, two rounds
		{name: "alarm to webhook", run: e.webhookLatency},
	}
	rollups := []phase{
		{name: "rollups: ingest with their queue", run: e.rollupIngest},
		{name: "rollups: a year of minutes", run: e.rollupYearMinutes},
		{name: "rollups: the readings alone", run: e.rollupRawFallback, timeout: 10 * time.Minute}, // four rows, and a compression
	}
	if e.cfg.yearSeconds {
		rollups = append(rollups, phase{name: "rollups: a year of seconds", run: e.rollupYearSeconds, timeout: time.Hour})
	}
	phases = append(phases, rollups...)
	// The peers last, so that none runs while the service is measured;
	// they need nothing of PostgreSQL.
	for _, p := range peers() {
		phases = append(phases, e.peerPhases(p)...)
	}
	var (
		res      results
		meter    = e.newCPUMeter(ctx)
		measured []cpuSample // before and after each measuring phase
	)
	e.meter = meter
	for _, p := range phases {
		if e.cfg.phases != nil && !e.cfg.phases.MatchString(p.name) {
			continue
		}
		e.log.Info("phase", "name", p.name)
		timeout := phaseTimeout
		if p.timeout > 0 {
			timeout = p.timeout
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
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
	rep.res = &res
	rep.machine.loadAfter = loadAverage()
	return rep, nil
}

func (e *env) emptyReadings(ctx context.Context, _ *results) error {
	// The sensors' newest readings go with them: ingest takes a batch
	// after the newest as one that overwrites nothing.
	_, err := e.pool.Exec(ctx, "TRUNCATE readings, sensor_latest")
	return err
}

func (e *env) vacuumReadings(ctx context.Context, _ *results) error {
	_, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
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
