package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// machine is what the figures were measured on.
type machine struct {
	cpu       string
	cores     int
	ram       string
	goVersion string
	postgres  string
	settings  string // the PostgreSQL settings that move write figures
	storage   string // /readyz's storage mode

	// The load averages before and after the run: work of other processes
	// skews every figure, and this says how much there was.
	loadBefore, loadAfter string
}

func (e *env) machine(ctx context.Context) (machine, error) {
	m := machine{cpu: "unknown", ram: "unknown", cores: runtime.NumCPU()}
	if s, err := procField("/proc/cpuinfo", "model name"); err == nil {
		m.cpu = s
	}
	if s, err := procField("/proc/meminfo", "MemTotal"); err == nil {
		if kb, err := strconv.ParseInt(strings.TrimSuffix(s, " kB"), 10, 64); err == nil {
			m.ram = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	out, err := e.run(ctx, time.Minute, e.cfg.environ, "go", "version")
	if err != nil {
		return m, err
	}
	m.goVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	err = e.pool.QueryRow(ctx, `
SELECT current_setting('server_version'),
       format('shared_buffers=%s, synchronous_commit=%s, fsync=%s, max_wal_size=%s',
              current_setting('shared_buffers'), current_setting('synchronous_commit'),
              current_setting('fsync'), current_setting('max_wal_size'))`).Scan(&m.postgres, &m.settings)
	if err != nil {
		return m, fmt.Errorf("postgres version: %w", err)
	}
	if v, ok := e.postmasterEnv(ctx, "MALLOC_TRIM_THRESHOLD_"); ok {
		m.settings += ", postmaster's MALLOC_TRIM_THRESHOLD_=" + v
	}
	if m.storage, err = e.svc.storageMode(ctx); err != nil {
		return m, err
	}
	return m, nil
}

// postmasterEnv is a variable of the local PostgreSQL server's environment
// (scripts/devdb.sh sets glibc's heap trim threshold, which moves the
// ingest figures), or false when unset or unreadable.
func (e *env) postmasterEnv(ctx context.Context, name string) (string, bool) {
	postmaster, err := e.localPostmaster(ctx)
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(postmaster), "environ"))
	if err != nil {
		return "", false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// loadAverage is the 1-, 5- and 15-minute load averages, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(b)); err == nil && len(fields) >= 3 {
		return strings.Join(fields[:3], " ")
	}
	return "unknown"
}

// procField is the value of the first "name : value" line of a /proc file.
func procField(path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == name {
			return strings.TrimSpace(value), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no %s", path, name)
}

// report is what a run prints.
type report struct {
	cfg     config
	machine machine
	rows    []row
	storage []storageRow
	elapsed time.Duration

	// The share of the machine's CPU other processes took, over all the
	// phases and in the phase where they took most; -1 when unknown.
	others  float64
	busiest phaseLoad
	cpu     []phaseCPU // per measuring phase, when known
	res     *results   // the figures the peer and target tables compare
}

type phaseLoad struct {
	name  string
	share float64
}

// write prints the report as markdown, ready for the README.
func (r *report) write(w io.Writer) {
	m, c := r.machine, r.cfg
	fmt.Fprintf(w, "Machine: %s, %d cores, %s RAM; %s; PostgreSQL %s (%s), storage mode `%s`.\n",
		m.cpu, m.cores, m.ram, m.goVersion, m.postgres, m.settings, m.storage)
	fmt.Fprintf(w, "Service, PostgreSQL and the bench's clients share the machine's cores. Load average before the run %s, after %s.\n",
		m.loadBefore, m.loadAfter)
	if r.others >= 0 {
		fmt.Fprintf(w, "Other processes took %s of the machine's CPU during the measurements", percent(r.others))
		if r.busiest.name != "" {
			fmt.Fprintf(w, ", at most %s (%s)", percent(r.busiest.share), r.busiest.name)
		}
		fmt.Fprintln(w, ".")
	}
	fmt.Fprintf(w, "Data: %s readings, %d sensors × %s at 1 s spacing, inputs 1..10 each with random float64 values; seed %d.\n\n",
		count(c.readings), c.sensors, count(c.perSensor()), c.seed)

	rows := slices.Clone(r.rows)
	slices.SortStableFunc(rows, func(a, b row) int { return compareIDs(a.id, b.id) })
	fmt.Fprintln(w, "| # | Measurement | Figure | Ratio to raw |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, row := range rows {
		ratio := row.ratio
		if ratio == "" {
			ratio = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", row.id, row.measurement, row.figure, ratio)
	}

	r.writeIngestTargets(w)
	r.writePeers(w)
	if len(r.storage) > 0 {
		fmt.Fprintf(w, "\nStorage of a reading's 10 inputs, the same readings COPYed into two scratch tables (primary key included, after VACUUM ANALYZE):\n\n")
		fmt.Fprintln(w, "| Inputs stored as | Bytes per row | COPY readings/s | Read 1,000 rows, p50 of 100 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|")
		for _, s := range r.storage {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", s.layout, count(int(s.bytesPerRow+0.5)), count(int(s.copyRate)), duration(s.read))
		}
		if len(r.storage) == 2 {
			a, j := r.storage[0], r.storage[1]
			fmt.Fprintf(w, "| jsonb ÷ arrays | %.2f | %.2f | %.2f |\n",
				j.bytesPerRow/a.bytesPerRow, j.copyRate/a.copyRate, float64(j.read)/float64(a.read))
		}
	}
	if len(r.cpu) > 0 {
		fmt.Fprintf(w, "\nWhere the CPU went in each phase, in cores busy on average (the machine has %d); \"elsewhere\" is other processes and the kernel's own threads:\n\n", m.cores)
		fmt.Fprintln(w, "| Phase | Seconds | Bench | Service (or peer) | PostgreSQL | Elsewhere |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, p := range r.cpu {
			fmt.Fprintf(w, "| %s | %.1f | %.2f | %.2f | %.2f | %.2f |\n", p.phase, p.seconds, p.bench, p.service, p.postgres, p.elsewhere)
		}
	}
	fmt.Fprintf(w, "\nThe run took %s.\n", r.elapsed.Round(time.Second))
}

// compareIDs orders row ids by number, then suffix: 1 < 6 < 6b < 7a < 10.
func compareIDs(a, b string) int {
	split := func(id string) (int, string) {
		i := 0
		for i < len(id) && id[i] >= '0' && id[i] <= '9' {
			i++
		}
		n, _ := strconv.Atoi(id[:i])
		return n, id[i:]
	}
	an, as := split(a)
	bn, bs := split(b)
	return cmp.Or(cmp.Compare(an, bn), cmp.Compare(as, bs))
}

// count writes n with thousands separators: 1,000,000.
func count(n int) string {
	if n < 0 {
		return "-" + count(-n)
	}
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func percent(share float64) string { return fmt.Sprintf("%.0f %%", 100*share) }

func perSecond(r float64) string { return count(int(r+0.5)) + " readings/s" }

func mib(bytes int64) string { return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20)) }

// ratio writes x as a multiple of what: "0.42 × (1)".
// ratio is x to the figure of row what; a row that -phases left out has
// none.
func ratio(x float64, what string) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "– " + what + " not run"
	}
	return fmt.Sprintf("%.2f × %s", x, what)
}

func latency(p50, p99 time.Duration) string {
	return fmt.Sprintf("p50 %s, p99 %s", duration(p50), duration(p99))
}

// duration writes d to three significant digits in a unit that suits it.
func duration(d time.Duration) string {
	switch {
	case d >= 1000*time.Second: // whole seconds, not 1.51e+03
		return strconv.FormatFloat(d.Seconds(), 'f', 0, 64) + " s"
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + " s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', 3, 64) + " ms"
	default:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'g', 3, 64) + " µs"
	}
}
