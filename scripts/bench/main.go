// Command bench measures the Sensor Readings Service against the limits of
// the PostgreSQL it runs on (issue 6), on this machine, in one run:
//
//	go run ./scripts/bench            # the full run: 1,000,000 readings
//	go run ./scripts/bench -quick     # 100,000 readings, to try it fast
//	go run ./scripts/bench -phases alarm  # only rows 11a-11c
//
// It creates a database of its own on the private cluster of
// scripts/devdb.sh (or on -pg), builds and starts the real service binary
// against it, and prints markdown tables on stdout: each service figure
// next to the raw figure of the store's own code it should approach (the
// first line names the storage mode, timescaledb or postgresql); the
// service next to InfluxDB and VictoriaMetrics, started from Debian's
// packages on loopback for their phases only, and the targets of issue 14;
// the storage comparison behind the migration's choice of arrays over
// jsonb; and where the CPU went. Progress goes to stderr. The database,
// the binary and the processes are removed at the end, also on error or
// Ctrl-C.
//
// Speed is measured here and only here; no test is timed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		}
		os.Exit(1)
	}
}

// config is the size and shape of a run.
type config struct {
	readings        int            // readings in the main data set
	sensors         int            // sensors they are spread over
	copyBatch       int            // rows per raw COPY
	postBatch       int            // readings per service POST
	clients         int            // concurrent service clients when ingesting
	queries         int            // timed reads, raw and through the service
	largeBatch      int            // readings per POST in the peak-memory phase
	storageReadings int            // readings per table in the storage comparison
	latestPerSensor int            // readings per sensor when timing latest values
	seed            uint64         // makes the data and the read pattern repeatable
	serverURL       string         // PostgreSQL server to create the bench database on
	profileDir      string         // where to write the service's CPU profiles; none when empty
	phases          *regexp.Regexp // runs only the phases it matches; all when nil
	timeout         time.Duration  // bounds the whole run
	yearSeconds     bool           // row 13b: a year of 1-second readings
	environ         []string       // the environment the service inherits
}

// perSensor is how many readings each sensor holds.
func (c config) perSensor() int { return c.readings / c.sensors }

// copyRows is the rows of one raw COPY: -copy-batch, or a whole sensor when
// it holds fewer.
func (c config) copyRows() int { return min(c.copyBatch, c.perSensor()) }

// pageSize is the service's largest page, the one every read asks for.
const pageSize = 1000

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	quick := fs.Bool("quick", false, "a small run: 100,000 readings and 200 timed reads")
	fs.IntVar(&c.readings, "readings", 1_000_000, "readings in the data set, spread evenly over -sensors")
	fs.IntVar(&c.sensors, "sensors", 100, "sensors")
	fs.IntVar(&c.copyBatch, "copy-batch", 10_000, "rows per raw COPY (one COPY per sensor when it equals readings per sensor)")
	fs.IntVar(&c.postBatch, "post-batch", 1000, "readings per service POST")
	fs.IntVar(&c.clients, "clients", 4, "concurrent clients posting to the service")
	fs.IntVar(&c.queries, "queries", 1000, "timed reads of a 1,000-reading page, raw and through the service")
	fs.IntVar(&c.largeBatch, "large-batch", 10_000, "readings per POST when measuring peak memory with large bodies")
	fs.IntVar(&c.storageReadings, "storage-readings", 200_000, "readings per table when comparing arrays with jsonb")
	fs.IntVar(&c.latestPerSensor, "latest-per-sensor", 100_000, "readings per sensor when timing latest values (the table grows to that)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the data and of the read pattern")
	fs.StringVar(&c.serverURL, "pg", "", "PostgreSQL `url` of a server to create the bench database on (its user needs CREATEDB); default: scripts/devdb.sh start")
	fs.StringVar(&c.profileDir, "profile", "", "write the service's CPU profile of each service phase into this `directory`; a profile runs for a fixed time, so the phases take longer and the CPU table is diluted")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "give up after this long")
	fs.BoolVar(&c.yearSeconds, "year-seconds", false, "also run row 13b: a year of 1-second readings of one sensor (31.5 million, some 5 GB; tens of minutes: raise -timeout)")
	fs.Func("phases", "run only the phases whose names match this `regexp` (the progress on stderr names them), with the preparing phases they need: "+
		"'service ingest|service overwrite' for rows 3 and 4, 'alarm' for rows 11a-11c, 'rollups' for rows 13a-13e; rows whose ratio needs a phase left out show none",
		func(v string) (err error) {
			c.phases, err = regexp.Compile(v)
			return err
		})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		c.readings, c.queries, c.latestPerSensor = 100_000, 200, 10_000
	}
	return c, c.validate()
}

func (c *config) validate() error {
	var errs []error
	if c.sensors < 4 {
		errs = append(errs, fmt.Errorf("-sensors %d: need at least 4, one per client of the peak-memory phase", c.sensors))
	}
	if c.sensors > 0 && c.readings%c.sensors != 0 {
		errs = append(errs, fmt.Errorf("-readings %d is not a multiple of -sensors %d", c.readings, c.sensors))
	}
	perSensor := 0
	if c.sensors > 0 {
		perSensor = c.readings / c.sensors
	}
	// Every timed read asks for a full page, so a sensor must hold one.
	if perSensor < pageSize {
		errs = append(errs, fmt.Errorf("%d readings per sensor: a read needs at least %d", perSensor, pageSize))
	}
	// Batches never straddle two sensors, as neither a POST nor the
	// service's COPY can.
	if c.copyBatch < 1 || perSensor > 0 && perSensor%min(c.copyBatch, perSensor) != 0 {
		errs = append(errs, fmt.Errorf("-copy-batch %d must divide the %d readings per sensor", c.copyBatch, perSensor))
	}
	if c.postBatch < 1 || perSensor%c.postBatch != 0 {
		errs = append(errs, fmt.Errorf("-post-batch %d must divide the %d readings per sensor", c.postBatch, perSensor))
	}
	if c.postBatch > 10_000 || c.largeBatch < 1 || c.largeBatch > 10_000 {
		errs = append(errs, errors.New("-post-batch and -large-batch must be from 1 to 10,000, the service's batch limit"))
	}
	if c.clients < 1 || c.queries < 1 || c.storageReadings < pageSize {
		errs = append(errs, fmt.Errorf("-clients and -queries must be positive and -storage-readings at least %d", pageSize))
	}
	return errors.Join(errs...)
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	cfg.environ = environ
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	started := time.Now()

	env, err := setUp(ctx, cfg, log, stderr)
	if err != nil {
		return err
	}
	// Tear down even when ctx is done (Ctrl-C, timeout): the database and
	// the child process must not outlive the run.
	defer env.tearDown()

	report, err := measure(ctx, env)
	if err != nil {
		return err
	}
	report.elapsed = time.Since(started)
	report.write(stdout)
	log.Info("done", "elapsed", report.elapsed.Round(time.Second))
	return nil
}
