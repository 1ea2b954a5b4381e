package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sensorreadings/readings/store"
)

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

// rawRead is row 5: the service's page query (store.ListReadings), with
// the query the service makes for datetime__gte alone, every row scanned
// into Go values, with no HTTP and no JSON.
func (e *env) rawRead(ctx context.Context, res *results) error {
	db := store.New(e.pool)
	picks := e.readPicks()
	// An untimed pass first brings every page the picks touch into shared
	// buffers. Without it the raw reads would pay for the cache misses and
	// the service's reads of the same pages, run next, would not.
	for pass := range 2 {
		times := make([]time.Duration, 0, len(picks))
		var (
			stop   func() time.Duration
			before cpuSample
		)
		if pass == 1 {
			stop, before = e.clock(), e.meter.sample()
		}
		for _, p := range picks {
			start := time.Now()
			n := 0
			sensor := store.Sensor{ID: e.data.sensors[p.sensor]}
			q := store.ReadingQuery{From: p.from, To: store.MaxTime, Limit: pageSize}
			if err := db.ListReadings(ctx, sensor, q, func(*store.Reading) error { n++; return nil }); err != nil {
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
		var cpu cpuSpent
		cpu.add([]cpuSample{before, e.meter.sample()})
		p50, p99 := percentiles(times)
		res.rawRead = p50
		e.log.Info("raw read", "p50", p50, "p99", p99)
		res.add("5", fmt.Sprintf("Raw read: the service's page query (`store.ListReadings`), %s rows scanned into Go values, 1 connection at a time, %s queries",
			count(pageSize), count(len(times))), latency(p50, p99)+cpu.postgresPerRequest(len(times)), "1 (the limit)")
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
	stop, before := e.clock(), e.meter.sample()
	for _, p := range picks {
		start := time.Now()
		if err := e.svc.getReadings(ctx, p.sensor, p.from, outputs, &page); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	stop()
	var cpu cpuSpent
	cpu.add([]cpuSample{before, e.meter.sample()})
	if err := profiled(); err != nil {
		return err
	}
	p50, p99 := percentiles(times)
	if !outputs {
		res.serviceRead, res.serviceRead99 = p50, p99
	}
	e.log.Info("service read", "outputs", outputs, "p50", p50, "p99", p99)
	res.add(id, measurement+", "+count(len(times))+" requests, 1 client",
		fmt.Sprintf("%s; %s per reading%s", latency(p50, p99), duration(p50/pageSize), cpu.microsPerRequest(len(times))),
		ratio(float64(p50)/float64(res.rawRead), "(5), p50"))
	return nil
}

// microsPerRequest is the CPU per request of n, in microseconds, as a
// figure's suffix: a page costs well under a millisecond of each.
func (c cpuSpent) microsPerRequest(n int) string {
	if !c.known {
		return ""
	}
	return fmt.Sprintf("; CPU per request: service %s, PostgreSQL %s", micros(c.service, n), micros(c.postgres, n))
}

// postgresPerRequest is PostgreSQL's CPU per request of n, for a row
// where the bench, not the service, is its client.
func (c cpuSpent) postgresPerRequest(n int) string {
	if !c.known {
		return ""
	}
	return "; PostgreSQL's CPU per request " + micros(c.postgres, n)
}

func micros(ticks int64, n int) string {
	return fmt.Sprintf("%.0f µs", float64(ticks)/clockTicks/float64(n)*1e6)
}
