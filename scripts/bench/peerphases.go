package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// peerResult is a line of the peer table.
type peerResult struct {
	name, acks string
	missing    string // why the peer was not measured, or ""

	ingest, overwrite float64       // readings/s
	read, read99      time.Duration // a page of 1,000
}

// influxFields are the fields of a reading in line protocol: input k is
// field ik.
var influxFields = func() string {
	f := make([]string, inputsPerReading)
	for i := range f {
		f[i] = "i" + strconv.Itoa(i+1)
	}
	return strings.Join(f, ",")
}()

// peerPhases are the phases of one peer: started, the data set written as
// new readings, then again over itself, pages read, stopped.
func (e *env) peerPhases(p *peer) []phase {
	r := &peerResult{name: p.name, acks: p.acks}
	return []phase{
		{name: "start " + p.name, run: e.peerStart(p, r), prepare: true},
		{name: p.name + ": new readings", run: e.peerWrite(p, r, false)},
		{name: p.name + ": overwrite", run: e.peerWrite(p, r, true)},
		{name: p.name + ": read", run: e.peerRead(p, r)},
		{name: "stop " + p.name, run: e.peerStop(p), prepare: true},
	}
}

func (e *env) peerStart(p *peer, r *peerResult) func(context.Context, *results) error {
	return func(ctx context.Context, res *results) error {
		res.peers = append(res.peers, r)
		if err := e.startPeer(ctx, p); err != nil {
			if p.cmd == nil {
				// Not installed, or not startable: the table says so.
				e.log.Warn("peer not measured", "name", p.name, "err", err)
				r.missing = err.Error()
				return nil
			}
			return err
		}
		e.meter.setPeer(p.cmd.Process.Pid)
		return nil
	}
}

func (e *env) peerStop(p *peer) func(context.Context, *results) error {
	return func(ctx context.Context, _ *results) error {
		e.meter.setPeer(0)
		if p.cmd == nil {
			return nil
		}
		return e.stopPeer(ctx)
	}
}

// peerWrite sends the data set as line protocol, in the service's batches
// and order, with as many concurrent clients.
func (e *env) peerWrite(p *peer, r *peerResult, overwrite bool) func(context.Context, *results) error {
	return func(ctx context.Context, _ *results) error {
		if r.missing != "" {
			return nil
		}
		bodies := e.lineBodies()
		stop := e.clock()
		err := parallel(ctx, e.cfg.clients, len(bodies), func(ctx context.Context, _, job int) error {
			return p.do(ctx, http.MethodPost, p.base+p.write, bodies[job], nil)
		})
		elapsed := stop()
		if err != nil {
			return err
		}
		rate := rate(e.data.len(), elapsed)
		e.log.Info("peer write", "name", p.name, "overwrite", overwrite, "readings/s", int(rate))
		if overwrite {
			r.overwrite = rate
		} else {
			r.ingest = rate
		}
		return nil
	}
}

// lineBodies encodes the service's POSTs as InfluxDB line protocol, once
// per run: a line per reading, measurement readings, tag sensor, fields
// i1..i10 as floats, the instant in nanoseconds.
func (e *env) lineBodies() [][]byte {
	if e.lines == nil {
		spans, _ := e.postBodies()
		e.lines = make([][]byte, len(spans))
		for i, sp := range spans {
			var b []byte
			for k := sp.from; k < sp.to; k++ {
				rd := e.data.reading(sp.sensor, k)
				b = append(b, "readings,sensor="...)
				b = append(b, peerSensor(sp.sensor)...)
				for j, id := range rd.InputIDs {
					sep := byte(',')
					if j == 0 {
						sep = ' ' // between the tags and the fields
					}
					b = append(b, sep, 'i')
					b = strconv.AppendInt(b, id, 10)
					b = append(b, '=')
					b = strconv.AppendFloat(b, rd.Values[j], 'g', -1, 64)
				}
				b = append(b, ' ')
				b = strconv.AppendInt(b, rd.Time.UnixNano(), 10)
				b = append(b, '\n')
			}
			e.lines[i] = b
		}
	}
	return e.lines
}

// peerSensor is the tag value of the sensor at index i.
func peerSensor(i int) string { return "s" + strconv.Itoa(i) }

// peerRead times reads of the picks of rows 5 and 6, one at a time on one
// keep-alive connection, after warm-ups that check each page is whole.
func (e *env) peerRead(p *peer, r *peerResult) func(context.Context, *results) error {
	return func(ctx context.Context, _ *results) error {
		if r.missing != "" {
			return nil
		}
		// VictoriaMetrics serves what it has buffered only once flushed;
		// InfluxDB answers 404 here, and has nothing to flush.
		_ = p.do(ctx, http.MethodGet, p.base+"/internal/force_flush", nil, nil)
		picks := e.readPicks()
		var page bytes.Buffer
		for _, pk := range picks[:min(warmUps, len(picks))] {
			if err := p.do(ctx, http.MethodGet, p.readURL(p, peerSensor(pk.sensor), pk.from), nil, &page); err != nil {
				return err
			}
			if err := p.check(page.Bytes()); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		times := make([]time.Duration, 0, len(picks))
		stop := e.clock()
		for _, pk := range picks {
			start := time.Now()
			if err := p.do(ctx, http.MethodGet, p.readURL(p, peerSensor(pk.sensor), pk.from), nil, &page); err != nil {
				return err
			}
			times = append(times, time.Since(start))
		}
		stop()
		r.read, r.read99 = percentiles(times)
		e.log.Info("peer read", "name", p.name, "p50", r.read, "p99", r.read99)
		return nil
	}
}

// checkInfluxPage checks that an InfluxQL answer holds a page of readings.
func checkInfluxPage(body []byte) error {
	var resp struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Columns []string          `json:"columns"`
				Values  []json.RawMessage `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("read a page: %w", err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Error != "" || len(resp.Results[0].Series) != 1 {
		return fmt.Errorf("read a page: %s", truncate(body))
	}
	s := resp.Results[0].Series[0]
	if len(s.Values) != pageSize || len(s.Columns) != 1+inputsPerReading {
		return fmt.Errorf("read a page: %d rows of %d columns, want %d of %d", len(s.Values), len(s.Columns), pageSize, 1+inputsPerReading)
	}
	return nil
}

// checkVictoriaPage checks that an export holds a series per input, each
// with a page of values.
func checkVictoriaPage(body []byte) error {
	series := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Values     []json.RawMessage `json:"values"`
			Timestamps []int64           `json:"timestamps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("read a page: %w", err)
		}
		if len(line.Values) != pageSize || len(line.Timestamps) != pageSize {
			return fmt.Errorf("read a page: a series of %d values, want %d", len(line.Values), pageSize)
		}
		series++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read a page: %w", err)
	}
	if series != inputsPerReading {
		return fmt.Errorf("read a page: %d series, want %d", series, inputsPerReading)
	}
	return nil
}
