// Density measures what a denser storage of readings would cost and save
// PostgreSQL (issue 26): for each candidate layout, on a scratch hypertable
// of a private database, the COPY of the bench's data set (100 sensors ×
// 10,000 readings at 1 s, 10 inputs of random doubles) in batches of
// 1,000 on 4 connections (as row 1c) and on 1 (as row 1b), PostgreSQL's
// CPU a reading (its processes' /proc times, as the bench meters them), the
// WAL a reading, the bytes a reading on disk, a 1,000-reading page read's
// p50, and the overwrite of every batch (DELETE and COPY in a transaction)
// on 4 connections. It changes nothing of the service's schema: it makes
// its own database and drops it.
//
//	go run ./scripts/density -pg "$(scripts/devdb.sh url)"             # every layout, 2 rounds
//	go run ./scripts/density -pg … -layouts a,b -rounds 3 -per-sensor 2000
//
// Layouts: a (as now), b (a set id for the ids), c (ids NULL when the
// sensor's fixed set), d<seconds> (one row per sensor and span of that
// many seconds, d60 a minute). Rounds alternate the layouts' order, so
// that a change in the machine's load falls on each. The figures go to
// stdout as a Markdown table; progress to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

type config struct {
	serverURL string
	layouts   []string
	rounds    int
	sensors   int
	perSensor int
	batch     int
	conns     int
	queries   int
	timeout   time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "density: %v\n", err)
		}
		os.Exit(1)
	}
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("density", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	layouts := fs.String("layouts", "a,b,c,d60,d20", "the layouts to measure, comma-separated")
	fs.StringVar(&c.serverURL, "pg", getenv("DATABASE_URL"), "PostgreSQL `url` of the server (TimescaleDB preloaded) to make the scratch database on; its user needs CREATEDB")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds over the layouts, each in the order of the one before reversed")
	fs.IntVar(&c.sensors, "sensors", 100, "sensors")
	fs.IntVar(&c.perSensor, "per-sensor", 10_000, "readings a sensor, 1 s apart")
	fs.IntVar(&c.batch, "batch", 1000, "readings a COPY (a POST's batch)")
	fs.IntVar(&c.conns, "conns", 4, "connections of the concurrent COPYs and overwrites")
	fs.IntVar(&c.queries, "queries", 300, "timed page reads a layout")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.layouts = strings.Split(*layouts, ",")
	switch {
	case c.serverURL == "":
		return c, errors.New("-pg or DATABASE_URL: the server to measure on")
	case c.perSensor < 1000 || c.perSensor%c.batch != 0:
		return c, fmt.Errorf("-per-sensor %d: a multiple of -batch %d, and a page (1,000) at least", c.perSensor, c.batch)
	case c.sensors < 1 || c.conns < 1 || c.rounds < 1 || c.queries < 1:
		return c, errors.New("-sensors, -conns, -rounds and -queries must be positive")
	}
	for _, name := range c.layouts {
		if _, err := layoutNamed(name); err != nil {
			return c, err
		}
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	dbURL, drop, err := scratchDatabase(ctx, cfg.serverURL)
	if err != nil {
		return err
	}
	defer drop()
	log.Info("scratch database", "url", dbURL)
	m, err := newMeter(ctx, dbURL)
	if err != nil {
		return err
	}
	defer m.conn.Close(context.Background())
	d := newDataset(rand.New(rand.NewPCG(1, 2)), cfg.sensors, cfg.perSensor)
	var all []result
	order := slices.Clone(cfg.layouts)
	for round := range cfg.rounds {
		for _, name := range order {
			l, _ := layoutNamed(name)
			log.Info("measuring", "round", round+1, "layout", name)
			r, err := measure(ctx, cfg, dbURL, m, d, l)
			if err != nil {
				return fmt.Errorf("layout %s: %w", name, err)
			}
			r.round = round + 1
			all = append(all, r)
		}
		slices.Reverse(order)
	}
	report(stdout, cfg, m, all)
	return nil
}

// scratchDatabase makes a database of its own on the server and returns
// its URL and what drops it.
func scratchDatabase(ctx context.Context, serverURL string) (string, func(), error) {
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("density_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, serverURL); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	}
	c, err := pgx.Connect(ctx, u.String())
	if err == nil {
		_, err = c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS timescaledb")
		c.Close(ctx)
	}
	if err != nil {
		drop()
		return "", nil, fmt.Errorf("timescaledb in the scratch database: %w", err)
	}
	return u.String(), drop, nil
}

// dataset is the bench's: each sensor's readings 1 s apart from
// 2024-01-01, inputs 1..10 of random values in [0, 1000).
type dataset struct {
	sensors   []int64
	perSensor int
	inputIDs  []int64
	vals      []float64
}

var dataStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newDataset(rng *rand.Rand, sensors, perSensor int) *dataset {
	d := &dataset{perSensor: perSensor, inputIDs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, vals: make([]float64, sensors*perSensor*10)}
	for s := range sensors {
		d.sensors = append(d.sensors, int64(s+1))
	}
	for i := range d.vals {
		d.vals[i] = rng.Float64() * 1000
	}
	return d
}

func (d *dataset) len() int           { return len(d.sensors) * d.perSensor }
func (d *dataset) at(i int) time.Time { return dataStart.Add(time.Duration(i) * time.Second) }
func (d *dataset) values(s, i int) []float64 {
	k := (s*d.perSensor + i) * 10
	return d.vals[k : k+10 : k+10]
}
func (s span) len() int                           { return s.to - s.from }
func (d *dataset) spans(size int, rr bool) []span { return cut(len(d.sensors), d.perSensor, size, rr) }

// span is readings from to to (exclusive) of a sensor, by index.
type span struct{ sensor, from, to int }

// cut cuts the data into spans of size: round robin takes each sensor's
// next span in turn (row 3's POSTs, row 1c), else a sensor's in a row
// (row 1b).
func cut(sensors, perSensor, size int, roundRobin bool) []span {
	var spans []span
	if roundRobin {
		for from := 0; from < perSensor; from += size {
			for s := range sensors {
				spans = append(spans, span{s, from, min(from+size, perSensor)})
			}
		}
		return spans
	}
	for s := range sensors {
		for from := 0; from < perSensor; from += size {
			spans = append(spans, span{s, from, min(from+size, perSensor)})
		}
	}
	return spans
}

// connect opens n connections to the scratch database.
func connect(ctx context.Context, dbURL string, n int) ([]*pgx.Conn, error) {
	cs := make([]*pgx.Conn, 0, n)
	for range n {
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			closeAll(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeAll(cs []*pgx.Conn) {
	for _, c := range cs {
		c.Close(context.Background())
	}
}

// parallel runs fn for each span on the connections, each span once, in
// order of the spans as the connections take them. A sensor's spans take
// turns, in order, as the service's lock on the sensor makes its batches
// do: a span written while the one before it is in flight would find the
// span row it continues not there yet.
func parallel(ctx context.Context, cs []*pgx.Conn, spans []span, fn func(context.Context, *pgx.Conn, span) error) error {
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		turn   = sync.NewCond(&mu)
		done   = map[int]int{} // by sensor: the index its next span starts at
		failed bool
	)
	for _, sp := range spans {
		done[sp.sensor] = min(done[sp.sensor], sp.from)
	}
	errs := make([]error, len(cs))
	for w, c := range cs {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(spans) || ctx.Err() != nil {
					return
				}
				sp := spans[j]
				mu.Lock()
				for done[sp.sensor] != sp.from && !failed {
					turn.Wait()
				}
				mu.Unlock()
				err := fn(ctx, c, sp)
				mu.Lock()
				done[sp.sensor] = sp.to
				failed = failed || err != nil
				turn.Broadcast()
				mu.Unlock()
				if err != nil {
					errs[w] = err
					next.Store(int64(len(spans)))
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
