package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// probeConfig is what a probe watches; see parseProbe for the flags.
type probeConfig struct {
	target
	databaseURL   string
	interval      time.Duration
	duration      time.Duration
	batch         int
	ackLog        string
	tagStart      int64
	expectOutages int
	maxRecovery   time.Duration
}

func parseProbe(args []string, getenv func(string) string, stderr io.Writer) (*probeConfig, error) {
	fs := flag.NewFlagSet("loadgen probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c probeConfig
	c.target.register(fs)
	fs.StringVar(&c.databaseURL, "database-url", getenv("DATABASE_URL"), "the PostgreSQL `url` to watch directly (DATABASE_URL)")
	fs.DurationVar(&c.interval, "interval", 50*time.Millisecond, "how often each of PostgreSQL, /readyz and a write is tried")
	fs.DurationVar(&c.duration, "duration", 5*time.Minute, "the longest the probe runs (SIGINT or SIGTERM end it normally)")
	fs.IntVar(&c.batch, "batch", 10, "readings per probe write")
	fs.StringVar(&c.ackLog, "ack-log", "", "`file` to record the probe's batches, for verify")
	// 100,000,000 s after tagEpoch is in 2023: apart from the load's tags,
	// and in the past, since the service refuses readings dated more than
	// -max-future after its clock.
	fs.Int64Var(&c.tagStart, "tag-start", 100_000_000, "tag of the probe's first batch, apart from the load's")
	fs.IntVar(&c.expectOutages, "expect-outages", 0, "how many PostgreSQL outages the run causes; fewer seen is a failure")
	fs.DurationVar(&c.maxRecovery, "max-recovery", 5*time.Second, "how long after PostgreSQL is back the service may take to answer 200")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	errs := []error{c.target.setup(), checkBatch(c.tagStart, c.batch)}
	if c.databaseURL == "" {
		errs = append(errs, errors.New("-database-url (or DATABASE_URL) is required"))
	}
	if c.interval <= 0 || c.duration <= 0 || c.maxRecovery <= 0 {
		errs = append(errs, errors.New("-interval, -duration and -max-recovery must be positive"))
	}
	return &c, errors.Join(errs...)
}

// probeEvent is one try of one thing: PostgreSQL directly, /readyz, or a
// write through the service.
type probeEvent struct {
	start, end time.Time
	ok         bool // PostgreSQL answered; or the service answered 200
	status     int  // the service's status, 0 when there was none
}

// outage is a run of failed direct tries of PostgreSQL, and how the service
// behaved during and after it.
type outage struct {
	down time.Time // the start of the first failed try
	// up is the end of the last failed try: PostgreSQL came back no sooner,
	// so a recovery measured from here is never flattering.
	up        time.Time
	ready503  int           // 503s from /readyz that started during the outage or until the next
	readyBack time.Duration // from up to the first 200 from /readyz started after it; <0: never
	writeBack time.Duration // the same for a write
}

// runProbe watches PostgreSQL, /readyz and writes side by side until stop,
// then says, for each time PostgreSQL went away, whether /readyz said 503
// and how soon after PostgreSQL was back the service answered 200 again.
func runProbe(stop context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseProbe(args, getenv, stderr)
	if err != nil {
		return err
	}
	acks, err := createAckLog(cfg.ackLog)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(stop, cfg.duration)
	defer cancel()
	client := newClient(4, cfg.timeout)
	defer client.CloseIdleConnections()

	all := stats{}
	readyStats, writeStats := all.kind("readyz"), all.kind(kindWrite)
	var nextTag atomic.Int64
	nextTag.Store(cfg.tagStart)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	sensor, token := cfg.sensors[0], cfg.tokens[0]
	readingsURL := fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", cfg.base, cfg.org, cfg.proj, sensor)
	var body []byte

	var pg, ready, writes []probeEvent
	var wg sync.WaitGroup
	wg.Go(func() {
		pg = poll(ctx, cfg.interval, func() probeEvent { return tryPostgres(cfg.databaseURL, time.Second) })
	})
	wg.Go(func() {
		ready = poll(ctx, cfg.interval, func() probeEvent {
			start := time.Now()
			status := send(client, readyStats, start, http.MethodGet, cfg.base+"/readyz", "", nil)
			return probeEvent{start: start, end: time.Now(), ok: status == http.StatusOK, status: status}
		})
	})
	wg.Go(func() {
		writes = poll(ctx, cfg.interval, func() probeEvent {
			tag := nextTag.Add(1) - 1
			body = appendBatch(body[:0], tag, cfg.batch, r)
			acks.sent(sensor, tag, cfg.batch)
			start := time.Now()
			status := send(client, writeStats, start, http.MethodPost, readingsURL, token, body)
			if status == http.StatusOK {
				acks.ack(sensor, tag, cfg.batch)
			}
			return probeEvent{start: start, end: time.Now(), ok: status == http.StatusOK, status: status}
		})
	})
	wg.Wait()

	outages, unfinished := findOutages(pg)
	for i := range outages {
		next := time.Time{}
		if i+1 < len(outages) {
			next = outages[i+1].down
		}
		measure(&outages[i], ready, writes, next, cfg.interval)
	}
	errs := []error{acks.Close()}
	// The service stays up throughout: 503 is the only failure it may show.
	if v := (policy{allow503: true}).judge(all); !v.ok() {
		errs = append(errs, errors.New(v.String()))
	}
	errs = append(errs, reportProbe(stdout, cfg, all, pg, outages, unfinished)...)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stdout, "probe: FAILED: %v\n", err)
		return reported{err}
	}
	fmt.Fprintln(stdout, "probe: OK")
	return nil
}

// poll calls try every interval until ctx is done, and returns what it saw.
// A try that takes longer than the interval delays the next one rather
// than overlapping it.
func poll(ctx context.Context, interval time.Duration, try func() probeEvent) []probeEvent {
	var events []probeEvent
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		events = append(events, try())
		select {
		case <-ctx.Done():
		case <-ticker.C:
		}
	}
	return events
}

// tryPostgres connects afresh and runs one query: a new connection is what
// tells whether PostgreSQL is up, not one that survived from before.
func tryPostgres(databaseURL string, timeout time.Duration) probeEvent {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT 1")
		conn.Close(ctx)
	}
	return probeEvent{start: start, end: time.Now(), ok: err == nil}
}

// findOutages turns the direct tries into outages. unfinished says that
// PostgreSQL was still down when the probe ended.
func findOutages(pg []probeEvent) (outages []outage, unfinished bool) {
	var cur *outage
	for _, e := range pg {
		switch {
		case !e.ok && cur == nil:
			cur = &outage{down: e.start, up: e.end}
		case !e.ok:
			cur.up = e.end
		case cur != nil:
			outages = append(outages, *cur)
			cur = nil
		}
	}
	return outages, cur != nil
}

// measure fills in how the service behaved during o and after it, up to
// next, the start of the next outage (zero for none).
func measure(o *outage, ready, writes []probeEvent, next time.Time, interval time.Duration) {
	before := func(t time.Time) bool { return next.IsZero() || t.Before(next) }
	for _, e := range ready {
		if e.status == http.StatusServiceUnavailable && !e.start.Before(o.down.Add(-interval)) && before(e.start) {
			o.ready503++
		}
	}
	o.readyBack = firstOKAfter(ready, o.up, before)
	o.writeBack = firstOKAfter(writes, o.up, before)
}

// firstOKAfter is the time from up to the end of the first successful try
// that started at or after up; -1 when there was none.
func firstOKAfter(events []probeEvent, up time.Time, before func(time.Time) bool) time.Duration {
	for _, e := range events {
		if e.ok && !e.start.Before(up) && before(e.start) {
			return e.end.Sub(up)
		}
	}
	return -1
}

// reportProbe writes one line per outage and a summary line, and returns
// what failed.
func reportProbe(w io.Writer, cfg *probeConfig, all stats, pg []probeEvent, outages []outage, unfinished bool) []error {
	var errs []error
	start := time.Time{}
	if len(pg) > 0 {
		start = pg[0].start
	}
	worst, worstReady, worstWrite, with503 := time.Duration(0), time.Duration(0), time.Duration(0), 0
	for i, o := range outages {
		fmt.Fprintf(w, "probe: outage %d at +%.1f s: PostgreSQL refused new connections for %.2f s; /readyz 503 x%d; 200 again %s after PostgreSQL was back (/readyz), %s (write)\n",
			i+1, o.down.Sub(start).Seconds(), o.up.Sub(o.down).Seconds(), o.ready503, seconds(o.readyBack), seconds(o.writeBack))
		if o.ready503 > 0 {
			with503++
		} else {
			errs = append(errs, fmt.Errorf("outage %d: /readyz never answered 503", i+1))
		}
		for _, back := range []struct {
			what string
			d    time.Duration
			max  *time.Duration
		}{{"/readyz", o.readyBack, &worstReady}, {"write", o.writeBack, &worstWrite}} {
			switch {
			case back.d < 0:
				errs = append(errs, fmt.Errorf("outage %d: %s never answered 200 again", i+1, back.what))
			case back.d > cfg.maxRecovery:
				errs = append(errs, fmt.Errorf("outage %d: %s answered 200 only %s after PostgreSQL was back (limit %s)", i+1, back.what, seconds(back.d), cfg.maxRecovery))
			}
			*back.max = max(*back.max, back.d)
			worst = max(worst, back.d)
		}
	}
	if unfinished {
		errs = append(errs, errors.New("PostgreSQL was still down when the probe ended"))
	}
	if len(outages) < cfg.expectOutages {
		errs = append(errs, fmt.Errorf("saw %d PostgreSQL outages, expected %d: the checks could not be made for all", len(outages), cfg.expectOutages))
	}
	fmt.Fprintf(w, "probe: tries every %s: PostgreSQL %d, /readyz %d (%s), write %d (%s)\n", cfg.interval, len(pg),
		sum(all["readyz"].statuses)+sum(all["readyz"].errors), counts(all["readyz"].statuses),
		sum(all[kindWrite].statuses)+sum(all[kindWrite].errors), counts(all[kindWrite].statuses))
	for _, k := range []string{"readyz", kindWrite} {
		for _, key := range slices.Sorted(maps.Keys(all[k].samples)) {
			fmt.Fprintf(w, "probe: first %s %s: %s\n", k, key, all[k].samples[key])
		}
	}
	fmt.Fprintf(w, "recovery outages=%d readyz_503=%d/%d worst=%s (readyz %s, write %s) limit=%s\n",
		len(outages), with503, len(outages), seconds(worst), seconds(worstReady), seconds(worstWrite), seconds(cfg.maxRecovery))
	return errs
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
