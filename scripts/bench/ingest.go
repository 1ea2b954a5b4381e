package main

import (
	"bytes"
	"context"
	"fmt"
	"time"
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
	res.serviceOverwrite = r
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
