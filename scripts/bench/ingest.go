package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/scripts/proccpu"
)

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
	if err := e.drainRollups(ctx); err != nil {
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
	res.serviceIngest = r
	res.serviceIngestCPU.add(e.timed[len(e.timed)-2:])
	e.log.Info("service ingest", "readings/s", int(r), "peak_rss_mib", peak>>20)
	res.add("3", fmt.Sprintf("Service ingest, new readings: POST %s readings per batch, %d concurrent clients, keep-alive",
		count(e.cfg.postBatch), e.cfg.clients), perSecond(r)+res.serviceIngestCPU.perReading(e.data.len()),
		ratio(r/res.rawIngestBatched, "(1b)")+"; "+ratio(r/res.rawIngest, "(1)")+"; "+ratio(r/res.rawIngestConcurrent, "(1c)")+
			res.serviceIngestCPU.postgresRatio(res.rawIngestConcurrentCPU, "(1c)"))
	res.add("7a", fmt.Sprintf("Service peak RSS (VmHWM) during (3), %s-reading bodies", count(e.cfg.postBatch)),
		mib(peak), "")
	return e.vacuumAfter(ctx, res, "3", e.data.len())
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
	if err := e.drainRollups(ctx); err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	if err := e.expectReadings(ctx, e.data.len()); err != nil {
		return err
	}
	r := rate(e.data.len(), elapsed)
	res.serviceOverwrite = r
	res.serviceOverwriteCPU.add(e.timed[len(e.timed)-2:])
	e.log.Info("service overwrite", "readings/s", int(r))
	res.add("4", "Service ingest, overwriting: the POSTs of (3) again, every reading replacing a stored one",
		perSecond(r)+res.serviceOverwriteCPU.perReading(e.data.len()),
		ratio(r/res.rawOverwriteBatched, "(2b)")+"; "+ratio(r/res.rawOverwrite, "(2)")+"; "+ratio(r/res.serviceIngest, "(3)"))
	return e.vacuumAfter(ctx, res, "4", e.data.len())
}

// drainRollups waits until the rollups' maintainer has emptied its queue,
// and moves the end of the last timed part's CPU there: the hours a write
// queued are its work, wherever the maintainer does it (it may leave an
// hour until the writes to it have stopped). The part's time, and so its
// rate, stays where the writes ended.
func (e *env) drainRollups(ctx context.Context) error {
	for {
		var queued int
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM rollup_dirty").Scan(&queued); err != nil {
			return fmt.Errorf("count the rollups' queue: %w", err)
		}
		if queued == 0 {
			e.timed[len(e.timed)-1] = e.meter.sample()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the rollups' queue still held %d hours: %w", queued, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// vacuumAfter runs VACUUM (ANALYZE) on readings after row's write of n
// readings and adds what it cost PostgreSQL as a row of its own: the debt
// the write left (the visibility of new rows, the dead versions of
// overwritten ones), which autovacuum would otherwise pay during the next
// phase and bill to it (a full run's row 3s took row 4's). It is left out
// of the phase's CPU table.
func (e *env) vacuumAfter(ctx context.Context, res *results, row string, n int) error {
	before := e.meter.sample()
	start := time.Now()
	if _, err := e.pool.Exec(ctx, "VACUUM (ANALYZE) readings"); err != nil {
		return fmt.Errorf("vacuum readings: %w", err)
	}
	elapsed := time.Since(start)
	var cpu cpuSpent
	cpu.add([]cpuSample{before, e.meter.sample()})
	figure := fmt.Sprintf("%.1f s", elapsed.Seconds())
	if cpu.known {
		figure += fmt.Sprintf("; PostgreSQL's CPU per reading of (%s) %.1f µs", row, float64(cpu.postgres)/proccpu.ClockTicks/float64(n)*1e6)
	}
	res.add(row+"v", fmt.Sprintf("VACUUM (ANALYZE) of readings right after (%s), which autovacuum would otherwise run during the next phase", row), figure, "–")
	return nil
}

// The small-batch rows, 3s and 4s: a fleet of loggers, each posting a few
// readings at a time (issue 26).
const (
	smallSensors  = 10_000 // the default cap of a project's sensors
	smallReadings = 10     // per POST, one POST per sensor
	smallClients  = 16
)

// smallBatches is rows 3s and 4s: smallSensors sensors of a project of
// their own, created through the API before the clock starts, each posted
// one batch of smallReadings new readings by smallClients concurrent
// clients, then the same batches again, every reading replacing a stored
// one. The readings are the data set's first ones, each sensor taking
// those of a sensor of the data set in turn.
func (e *env) smallBatches(ctx context.Context, res *results) error {
	s := e.svc
	proj, err := s.api.CreateProjectWithResponse(ctx, s.org, client.ProjectCreate{Name: "small batches"})
	if err != nil {
		return fmt.Errorf("create project: %w", err)
	}
	if proj.JSON201 == nil {
		return fmt.Errorf("create project: %s", proj.Body)
	}
	paths := make([]string, smallSensors)
	err = parallel(ctx, smallClients, smallSensors, func(ctx context.Context, _, i int) error {
		resp, err := s.api.CreateSensorWithResponse(ctx, s.org, proj.JSON201.Id, client.SensorCreate{Name: fmt.Sprintf("L%05d", i+1)})
		if err != nil {
			return fmt.Errorf("create sensor: %w", err)
		}
		if resp.JSON201 == nil {
			return fmt.Errorf("create sensor: %s", resp.Body)
		}
		paths[i] = fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", s.base, s.org, proj.JSON201.Id, resp.JSON201.Id)
		return nil
	})
	if err != nil {
		return err
	}
	bodies := make([][]byte, smallSensors)
	for i := range bodies {
		bodies[i] = e.data.appendJSON(nil, span{sensor: i % len(e.data.sensors), from: 0, to: smallReadings}, nil)
	}
	n := smallSensors * smallReadings
	var rates [2]float64
	for pass, row := range []string{"3s", "4s"} {
		e.checkpoint(ctx)
		buffers := make([]bytes.Buffer, smallClients)
		profiled := e.profile(ctx, "small-"+row, ingestProfileTime)
		stop := e.clock()
		err := parallel(ctx, smallClients, smallSensors, func(ctx context.Context, worker, job int) error {
			return s.postTo(ctx, paths[job], bodies[job], &buffers[worker])
		})
		elapsed := stop()
		if err != nil {
			return err
		}
		if err := e.drainRollups(ctx); err != nil {
			return err
		}
		if err := profiled(); err != nil {
			return err
		}
		var cpu cpuSpent
		cpu.add(e.timed[len(e.timed)-2:])
		rates[pass] = rate(n, elapsed)
		e.log.Info("small batches", "row", row, "readings/s", int(rates[pass]))
		if pass == 0 {
			res.add(row, fmt.Sprintf("Service ingest, new readings in small batches: %s sensors each POSTing %d readings, %d concurrent clients, keep-alive",
				count(smallSensors), smallReadings, smallClients), perSecond(rates[0])+cpu.perReading(n), ratio(rates[0]/res.serviceIngest, "(3)"))
		} else {
			res.add(row, "Service ingest, overwriting in small batches: the POSTs of (3s) again, every reading replacing a stored one",
				perSecond(rates[1])+cpu.perReading(n), ratio(rates[1]/rates[0], "(3s)"))
		}
	}
	return nil
}

// postBodies encodes the data set as POST bodies, once per run: the same
// bytes serve rows 3 and 4.
func (e *env) postBodies() ([]span, [][]byte) {
	if e.bodies == nil {
		e.spans = e.data.roundRobin(e.cfg.postBatch)
		e.bodies = make([][]byte, len(e.spans))
		for i, sp := range e.spans {
			e.bodies[i] = e.data.appendJSON(nil, sp, nil)
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
		bodies[i] = e.data.appendJSON(nil, sp, nil)
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
