package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sensorreadings/readings/scripts/proccpu"
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

// rawPage reads the page of row 5 on db: the service's page query
// (store.ListReadings) with the query the service makes for
// datetime__gte alone, every row scanned into Go values, with no HTTP and
// no JSON.
func rawPage(ctx context.Context, db *store.DB, sensorID int64, from time.Time) error {
	n := 0
	q := store.ReadingQuery{From: from, To: store.MaxTime, Limit: pageSize}
	if err := db.ListReadings(ctx, store.Sensor{ID: sensorID}, q, func(*store.Reading) error { n++; return nil }); err != nil {
		return err
	}
	if n != pageSize {
		return fmt.Errorf("read %d rows, want %d", n, pageSize)
	}
	return nil
}

// serviceRead is rows 5 and 6: the raw page query and the service's page
// of the same range, in turns.
func (e *env) serviceRead(ctx context.Context, res *results) error {
	return e.timeServiceRead(ctx, res, "6", "Service read: `GET …/readings/{sensor}?limit=1000&datetime__gte=…&outputs=false`", false, e.readPicks())
}

// timeServiceRead times GETs of picks, one at a time on one keep-alive
// connection, in turns with the raw query of the same page on one
// connection of the bench (inTurns), and adds row id, comparing its p50
// with the raw query's. Row 6 adds row 5, the raw query, too.
func (e *env) timeServiceRead(ctx context.Context, res *results, id, measurement string, outputs bool, picks []readPick) error {
	sensorIDs := e.svc.pathIDs
	// An untimed pass first brings every page the picks touch into shared
	// buffers, so that neither side pays for cache misses the other does
	// not.
	warm := store.New(e.pool)
	for _, p := range picks {
		if err := rawPage(ctx, warm, sensorIDs[p.sensor], p.from); err != nil {
			return err
		}
	}
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
	raw := func(ctx context.Context, db *store.DB, i int) error {
		return rawPage(ctx, db, sensorIDs[picks[i].sensor], picks[i].from)
	}
	// The pages read by Go's http.Client first, as VictoriaMetrics' are
	// (the peers' table holds them to each other), then by the bare
	// client, whose turns with the raw query are the row's ratio.
	withGo, err := e.inTurns(ctx, "read-"+id+"-http", len(picks), raw, func(ctx context.Context, i int) error {
		return e.svc.getReadings(ctx, picks[i].sensor, picks[i].from, outputs, &page)
	})
	if err != nil {
		return err
	}
	bare, err := e.svc.dialBare()
	if err != nil {
		return err
	}
	defer bare.Close()
	t, err := e.inTurns(ctx, "read-"+id, len(picks), raw, func(_ context.Context, i int) error {
		return bare.get(strings.TrimPrefix(e.svc.paths[picks[i].sensor], e.svc.base) + pageQuery(picks[i].from, outputs))
	})
	if err != nil {
		return err
	}
	rawP50, rawP99 := percentiles(t.raw)
	p50, p99 := percentiles(t.served)
	e.log.Info("service read", "outputs", outputs, "p50", p50, "p99", p99, "raw_p50", rawP50)
	vs := "(5), p50; target ≤ 1.3"
	if id == "6" {
		res.rawRead = rawP50
		res.serviceRead, res.serviceRead99 = percentiles(withGo.served)
		res.serviceReadCPU = withGo.servedCPU
		res.add("5", fmt.Sprintf("Raw read: the service's page query (`store.ListReadings`), %s rows scanned into Go values, 1 connection, %s queries, in turns with (6)",
			count(pageSize), count(len(t.raw))), latency(rawP50, rawP99)+t.rawCPU.postgresPerRequest(len(t.raw)), "1 (the limit)")
	} else {
		vs = "the raw query of the same pages in turns, p50; target ≤ 1.3"
		measurement += fmt.Sprintf("; the raw query of the same pages, as (5), in turns: p50 %s%s", duration(rawP50), t.rawCPU.postgresPerRequest(len(t.raw)))
	}
	res.add(id, measurement+", "+count(len(t.served))+" requests, 1 client, read by the bench's bare client, in turns with the raw query"+withGoClient(withGo),
		fmt.Sprintf("%s; %s per reading%s", latency(p50, p99), duration(p50/pageSize), t.servedCPU.microsPerRequest(len(t.served))),
		ratio(float64(p50)/float64(rawP50), vs))
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
	return fmt.Sprintf("%.0f µs", float64(ticks)/proccpu.ClockTicks/float64(n)*1e6)
}
