package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/scripts/proccpu"
)

// meter reads PostgreSQL's CPU as the bench does (proccpu.Postgres) and
// the WAL position.
type meter struct {
	conn       *pgx.Conn
	postmaster int
	server     string
}

type sample struct {
	at             time.Time
	postgres, busy int64 // clock ticks
	own            int64
	wal            string
}

func newMeter(ctx context.Context, dbURL string) (*meter, error) {
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	m := &meter{conn: c}
	var backend int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid(), version()").Scan(&backend, &m.server); err != nil {
		return nil, err
	}
	st, err := proccpu.Read(backend)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL must run on this machine, to read its CPU: %w", err)
	}
	m.postmaster = st.PPID
	return m, nil
}

func (m *meter) sample(ctx context.Context) (sample, error) {
	s := sample{at: time.Now()}
	if err := m.conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&s.wal); err != nil {
		return s, err
	}
	var err error
	if s.postgres, err = proccpu.Postgres(m.postmaster); err != nil {
		return s, err
	}
	if st, err := proccpu.Read(os.Getpid()); err == nil {
		s.own = st.Self
	}
	s.busy, err = proccpu.MachineBusy()
	return s, err
}

// usage is what a phase cost between two samples.
type usage struct {
	readings int
	elapsed  time.Duration
	cpu      time.Duration // PostgreSQL's
	wal      int64         // bytes
	others   float64       // share of the machine's CPU taken by other processes
}

func (m *meter) between(ctx context.Context, a, b sample, readings int) (usage, error) {
	u := usage{readings: readings, elapsed: b.at.Sub(a.at), cpu: ticks(b.postgres - a.postgres)}
	if err := m.conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint", b.wal, a.wal).Scan(&u.wal); err != nil {
		return u, err
	}
	capacity := u.elapsed.Seconds() * proccpu.ClockTicks * float64(runtime.NumCPU())
	u.others = max(0, float64((b.busy-a.busy)-(b.postgres-a.postgres)-(b.own-a.own))/capacity)
	return u, nil
}

func (u usage) rate() float64 { return float64(u.readings) / u.elapsed.Seconds() }
func (u usage) cpuPerReading() float64 {
	return float64(u.cpu.Nanoseconds()) / 1000 / float64(u.readings)
}
func (u usage) walPerReading() float64 { return float64(u.wal) / float64(u.readings) }

func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / proccpu.ClockTicks }

// result is one layout's figures in one round.
type result struct {
	layout         layout
	round          int
	one, many, ovw usage
	bytes          int64   // the table's, indexes and TOAST included
	width          float64 // a row's average pg_column_size
	rows           int64
	pageP50        time.Duration
	pageP90        time.Duration
}

func measure(ctx context.Context, cfg config, dbURL string, m *meter, d *dataset, l layout) (result, error) {
	r := result{layout: l}
	newPhase := func(conns int, spans []span, overwrite bool) (usage, error) {
		// The connections live from before the first sample to after the
		// last: a backend's CPU is read from its own /proc entry, with no
		// race against its exit and the postmaster's reaping.
		cs, err := connect(ctx, dbURL, conns)
		if err != nil {
			return usage{}, err
		}
		defer closeAll(cs)
		if _, err := m.conn.Exec(ctx, "CHECKPOINT"); err != nil {
			return usage{}, err
		}
		a, err := m.sample(ctx)
		if err != nil {
			return usage{}, err
		}
		err = parallel(ctx, cs, spans, func(ctx context.Context, c *pgx.Conn, sp span) error {
			return l.write(ctx, c, d, sp, overwrite)
		})
		if err != nil {
			return usage{}, err
		}
		b, err := m.sample(ctx)
		if err != nil {
			return usage{}, err
		}
		return m.between(ctx, a, b, d.len())
	}
	var err error
	if err = recreate(ctx, m.conn, l); err != nil {
		return r, err
	}
	if r.one, err = newPhase(1, d.spans(cfg.batch, false), false); err != nil {
		return r, err
	}
	if err = check(ctx, m.conn, l, d.len()); err != nil {
		return r, fmt.Errorf("after the COPYs on one connection: %w", err)
	}
	if err = recreate(ctx, m.conn, l); err != nil {
		return r, err
	}
	if r.many, err = newPhase(cfg.conns, d.spans(cfg.batch, true), false); err != nil {
		return r, err
	}
	if err = check(ctx, m.conn, l, d.len()); err != nil {
		return r, fmt.Errorf("after the concurrent COPYs: %w", err)
	}
	q := fmt.Sprintf("SELECT hypertable_size('%[1]s'), (SELECT avg(pg_column_size(t.*)) FROM %[1]s t), (SELECT count(*) FROM %[1]s)", l.table)
	if err = m.conn.QueryRow(ctx, q).Scan(&r.bytes, &r.width, &r.rows); err != nil {
		return r, err
	}
	if _, err = m.conn.Exec(ctx, "VACUUM ANALYZE "+l.table); err != nil {
		return r, err
	}
	if r.pageP50, r.pageP90, err = readPages(ctx, cfg, m.conn, d, l); err != nil {
		return r, err
	}
	if r.ovw, err = newPhase(cfg.conns, d.spans(cfg.batch, true), true); err != nil {
		return r, err
	}
	if err = check(ctx, m.conn, l, d.len()); err != nil {
		return r, fmt.Errorf("after the overwrites: %w", err)
	}
	return r, nil
}

// check says whether the layout's table holds want readings, each well
// formed.
func check(ctx context.Context, c *pgx.Conn, l layout, want int) error {
	var n, bad int64
	if err := c.QueryRow(ctx, l.count).Scan(&n, &bad); err != nil {
		return err
	}
	if n != int64(want) || bad != 0 {
		return fmt.Errorf("%s holds %d readings of %d, %d rows malformed", l.table, n, want, bad)
	}
	return nil
}

// recreate drops the layout's tables and makes them again, empty.
func recreate(ctx context.Context, c *pgx.Conn, l layout) error {
	if _, err := c.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %[1]s, %[1]s_sets, %[1]s_ids", l.table)); err != nil {
		return err
	}
	for _, s := range l.create {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// readPages times cfg.queries reads of 1,000 readings from a random
// sensor and instant, and returns the p50 and p90.
func readPages(ctx context.Context, cfg config, c *pgx.Conn, d *dataset, l layout) (time.Duration, time.Duration, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	var took []time.Duration
	for i := range cfg.queries + 20 {
		sensor := d.sensors[rng.IntN(len(d.sensors))]
		from := d.at(rng.IntN(d.perSensor - 999))
		start := time.Now()
		n, err := l.readPage(ctx, c, sensor, from)
		if err != nil {
			return 0, 0, err
		}
		if n != 1000 {
			return 0, 0, fmt.Errorf("a page of %d readings", n)
		}
		if i >= 20 { // the first warm the plan cache
			took = append(took, time.Since(start))
		}
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)*9/10], nil
}

func report(w io.Writer, cfg config, m *meter, all []result) {
	fmt.Fprintf(w, "%s; %d cores. %d readings (%d sensors × %d at 1 s, 10 inputs), COPYs of %d, %d connections for the concurrent rows.\n\n",
		m.server, runtime.NumCPU(), cfg.sensors*cfg.perSensor, cfg.sensors, cfg.perSensor, cfg.batch, cfg.conns)
	fmt.Fprintln(w, "| Layout | Round | New, 1 conn: PG µs/reading, WAL B/reading, readings/s (others) | New, concurrent: PG µs, WAL B, readings/s (others) | Bytes/reading on disk (row width) | Page p50 / p90 | Overwrite, concurrent: PG µs, WAL B, readings/s (others) |")
	fmt.Fprintln(w, "|---|---:|---|---|---|---|---|")
	for _, r := range all {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.0f (%.0f) | %.2f / %.2f ms | %s |\n", r.layout.name, r.round,
			cell(r.one), cell(r.many), float64(r.bytes)/float64(cfg.sensors*cfg.perSensor), r.width,
			ms(r.pageP50), ms(r.pageP90), cell(r.ovw))
	}
	fmt.Fprintln(w)
	for _, name := range cfg.layouts {
		l, _ := layoutNamed(name)
		fmt.Fprintf(w, "- %s: %s\n", name, l.what)
	}
}

func cell(u usage) string {
	return fmt.Sprintf("%.2f, %.0f, %.0f (%.0f %%)", u.cpuPerReading(), u.walPerReading(), u.rate(), 100*u.others)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
