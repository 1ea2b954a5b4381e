package main

import (
	"fmt"
	"io"
	"time"

	"github.com/sensorreadings/readings/scripts/proccpu"
)

// writePeers prints the peer table, the service's rows next to each
// peer's, and the targets of issue 14 against this run.
func (r *report) writePeers(w io.Writer) {
	res := r.res
	if res == nil || len(res.peers) == 0 {
		return
	}
	c := r.cfg
	pageCost, pageKnown := r.servicePageCost()
	fmt.Fprintf(w, "\nThe same %s readings through each peer's own HTTP ingest (InfluxDB 1.x line protocol, a line per reading with fields i1..i10), "+
		"in the same %s-reading batches from %d concurrent clients, then the same batches again; then the reads of rows 5 and 6, "+
		"a page of %s readings each (InfluxDB: `SELECT … LIMIT %d`; VictoriaMetrics: `/api/v1/export` of the page's range). "+
		"Ratios are the service's figure over the peer's (for reads, p50 over p50: below 1 is faster). "+
		"The last column is the CPU the system spent (the service with PostgreSQL, or the peer) per reading written and per page read, from the CPU table below:\n\n",
		count(c.readings), count(c.postBatch), c.clients, count(pageSize), pageSize)
	fmt.Fprintln(w, "| System | A write is acknowledged once | New readings/s | Overwrites/s | Page of 1,000 | Service ÷ system: new, overwrite, page p50 | CPU per reading: new, overwrite; per page |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|---|---|")
	fmt.Fprintf(w, "| The service, storage mode `%s` (rows 3, 4, 6) | committed: PostgreSQL fsyncs its WAL (synchronous_commit=on) | %s | %s | %s | 1 | %s |\n",
		r.machine.storage, count(int(res.serviceIngest+0.5)), count(int(res.serviceOverwrite+0.5)), latency(res.serviceRead, res.serviceRead99),
		r.cpuCosts("service ingest", "service overwrite", pageCost, pageKnown))
	for _, p := range res.peers {
		if p.missing != "" {
			fmt.Fprintf(w, "| %s | – | not measured: %s | | | | |\n", p.name, p.missing)
			continue
		}
		peerPage, peerKnown := r.phaseCost(p.name+": read", c.queries)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f, %.2f, %.2f | %s |\n", p.name, p.acks,
			count(int(p.ingest+0.5)), count(int(p.overwrite+0.5)), latency(p.read, p.read99),
			res.serviceIngest/p.ingest, res.serviceOverwrite/p.overwrite, float64(res.serviceRead)/float64(p.read),
			r.cpuCosts(p.name+": new readings", p.name+": overwrite", peerPage, peerKnown))
	}

	fmt.Fprint(w, "\nThe targets of issue 14, in this run:\n\n")
	fmt.Fprintln(w, "| Target | This run | |")
	fmt.Fprintln(w, "|---|---:|---|")
	target := func(name string, got, want float64, atMost bool) {
		targetRow(w, name, fmt.Sprintf("%.3f ×", got), got, want, atMost)
	}
	peer := func(name string) *peerResult {
		for _, p := range res.peers {
			if p.name == name && p.missing == "" {
				return p
			}
		}
		return nil
	}
	if p := peer("InfluxDB"); p != nil {
		target("New readings ≥ 1.5 × InfluxDB", res.serviceIngest/p.ingest, 1.5, false)
	}
	if p := peer("VictoriaMetrics"); p != nil {
		target("New readings ≥ 0.75 × VictoriaMetrics", res.serviceIngest/p.ingest, 0.75, false)
	}
	target("Overwrites ≥ 0.8 × the service's new readings (4 ÷ 3)", res.serviceOverwrite/res.serviceIngest, 0.8, false)
	if p := peer("VictoriaMetrics"); p != nil {
		target("Page of 1,000, p50 ≤ 0.8 × VictoriaMetrics' export of its range", ratioOf(res.serviceRead, p.read), 0.8, true)
	}
	target("Service ingest ≥ 0.9 × raw COPY at the same concurrency (3 ÷ 1c)", res.serviceIngest/res.rawIngestConcurrent, 0.9, false)
}

func ratioOf(a, b time.Duration) float64 { return float64(a) / float64(b) }

// cpuCosts is the CPU the system under test spent (the service and
// PostgreSQL, or the peer) per reading written in the two write phases,
// from the CPU table, and per page read (page, known): unlike a rate, it
// hardly moves with what other processes take of the machine.
func (r *report) cpuCosts(ingest, overwrite string, page time.Duration, known bool) string {
	newCost, ok1 := r.phaseCost(ingest, r.cfg.readings)
	overCost, ok2 := r.phaseCost(overwrite, r.cfg.readings)
	if !ok1 || !ok2 || !known {
		return "–"
	}
	return fmt.Sprintf("%s, %s; %s", duration(newCost), duration(overCost), duration(page))
}

// phaseCost is the CPU of the service and PostgreSQL, or the peer, in
// the phase of the CPU table, per unit of work of n.
func (r *report) phaseCost(phase string, n int) (time.Duration, bool) {
	for _, c := range r.cpu {
		if c.phase == phase {
			return time.Duration((c.service + c.postgres) * c.seconds / float64(n) * float64(time.Second)), true
		}
	}
	return 0, false
}

// servicePageCost is the CPU of the service and its share of PostgreSQL
// per page of row 6. Its phase times the raw query in turns with the
// pages, so the phase's line of the CPU table counts both.
func (r *report) servicePageCost() (time.Duration, bool) {
	c := r.res.serviceReadCPU
	return time.Duration(float64(c.service+c.postgres) / proccpu.ClockTicks / float64(r.cfg.queries) * float64(time.Second)), c.known
}

// writeIngestTargets prints the targets of issue 26 that rows 1c, 3 and 4
// decide, by CPU per reading where the target is one, when they ran.
func (r *report) writeIngestTargets(w io.Writer) {
	res := r.res
	if res == nil || !res.serviceIngestCPU.known || !res.rawIngestConcurrentCPU.known {
		return
	}
	n := float64(r.cfg.readings)
	us := func(ticks int64) float64 { return float64(ticks) / proccpu.ClockTicks / n * 1e6 }
	fresh, raw := res.serviceIngestCPU, res.rawIngestConcurrentCPU
	fmt.Fprint(w, "\nThe targets of issue 26 that rows 1c, 3 and 4 decide, in this run (CPU per reading holds on a shared machine; rates do not):\n\n")
	fmt.Fprintln(w, "| Target | This run | |")
	fmt.Fprintln(w, "|---|---:|---|")
	target := func(name string, got, want float64, unit string, atMost bool) {
		targetRow(w, name, fmt.Sprintf("%.2f%s", got, unit), got, want, atMost)
	}
	target("The service's CPU per new reading (3) ≤ 1.0 µs", us(fresh.service), 1.0, " µs", true)
	target("PostgreSQL's CPU per new reading (3) ≤ 1.3 × raw COPY's (1c)", float64(fresh.postgres)/float64(raw.postgres), 1.3, " ×", true)
	target("CPU per new reading (3), service and PostgreSQL, ≤ 4.0 µs", us(fresh.service+fresh.postgres), 4.0, " µs", true)
	target("New readings ≥ 0.6 × raw COPY at the same concurrency (3 ÷ 1c)", res.serviceIngest/res.rawIngestConcurrent, 0.6, " ×", false)
	if over := res.serviceOverwriteCPU; over.known {
		target("Overwrites ≥ 0.8 × the service's new readings (4 ÷ 3)", res.serviceOverwrite/res.serviceIngest, 0.8, " ×", false)
		target("CPU per overwrite (4), service and PostgreSQL, ≤ 6.0 µs", us(over.service+over.postgres), 6.0, " µs", true)
	}
}

// targetRow prints a target's row: its figure, and whether got is at least
// want (at most, when atMost).
func targetRow(w io.Writer, name, figure string, got, want float64, atMost bool) {
	verdict := "not met"
	if got >= want && !atMost || got <= want && atMost {
		verdict = "met"
	}
	fmt.Fprintf(w, "| %s | %s | %s |\n", name, figure, verdict)
}
