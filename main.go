// Command readings is the Sensor Readings Service: an HTTP API that stores
// time-stamped sensor readings in PostgreSQL and serves them back.
//
//	readings [serve]         serve the API (the default)
//	readings migrate         apply the database migrations and exit
//	readings admin …         create organizations, users and tokens
//	readings backup-metrics  pgBackRest's info as Prometheus metrics, for a textfile collector
//	readings healthcheck     exit 0 when the service on this host is ready, for a container's health check
//
// Every setting is a flag whose default comes from the environment; run
// `readings serve -h` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	// The zone database in the binary: aggregates take IANA zones, and the
	// image the Dockerfile builds has none of its own.
	_ "time/tzdata"

	"github.com/sensorreadings/readings/authcache"
	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/tokenuse"
)

func main() {
	command, _ := commandOf(os.Args[1:])
	keepSysmonAwake(command)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "readings: %v\n", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	command, args := commandOf(args)
	switch command {
	case "serve":
		return serve(ctx, args, getenv, stderr)
	case "migrate":
		return migrate(ctx, args, getenv, stderr)
	case "admin":
		return admin(ctx, args, getenv, stdout, stderr)
	case "backup-metrics":
		return backupMetrics(ctx, args, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, args, getenv, stderr)
	}
	return fmt.Errorf("unknown command %q: use serve, migrate, admin, backup-metrics or healthcheck", command)
}

// commandOf splits args into the command they name, their first unless
// it is a flag, else serve, and the command's own arguments.
func commandOf(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "serve", args
}

// readBuffer is what each database connection reads of its socket at
// once: 64 kB, 8 times pgx's, so that a page's rows PostgreSQL sent while
// the service encoded the ones before come in one read rather than one
// per 8 kB (docs/performance.md, branches page15 and page18b: 11 to 16
// reads a row-6b page rather than 25 to 40). It is held for the
// connection's life: DB_MAX_CONNS × 64 kB in all, per pool.
const readBuffer = 64 << 10

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parseConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	log.Info("starting", "config", c.logValue())

	pool, err := store.Open(ctx, c.databaseURL, store.PoolConfig{MaxConns: int32(c.dbMaxConns), ReadBuffer: readBuffer})
	if err != nil {
		return err
	}
	defer pool.Close()
	if c.migrate {
		if err := store.Migrate(ctx, pool, log); err != nil {
			return err
		}
		if err := store.ConfigureStorage(ctx, pool, c.storage, log); err != nil {
			return err
		}
	}
	limits := c.caps
	limits.SensorInputs = c.maxInputs
	db := store.New(pool, limits)
	if err := db.LogStorageMode(ctx, log); err != nil {
		return err
	}
	maxStreams, err := streamCap(c.maxStreams, int(pool.Stat().MaxConns()))
	if err != nil {
		return err
	}
	log.Info("export caps", "max_streams", maxStreams, "max_streams_per_token", c.maxStreamsToken, "db_max_conns", pool.Stat().MaxConns())

	// The webhooks' outbox, the domain, which wakes the outbox when a
	// write of readings raised events, and the record of token use.
	ob, err := outbox.New(db, log, outbox.Config{
		Timeout: c.webhookTimeout, MaxAttempts: c.webhookAttempts, Lease: c.webhookLease,
		Concurrency: c.webhookConc, ConcurrencyPerWebhook: c.webhookConcHook, AllowPrivate: c.webhookPrivate,
	}, server.WebhookPayload)
	if err != nil {
		return err
	}
	core := sensing.New(db, log, sensing.Config{MaxFuture: c.maxFuture, DBTimeout: c.dbTimeout, OnEvents: ob.Wake})
	tokens := tokenuse.New(db, log)
	principals := authcache.New(db, log)
	deps := server.DepsOf(db, core, ob, tokens)
	deps.Authenticator = principals
	cfg := server.Config{
		MaxBatch:           c.maxBatch,
		MaxBodyBytes:       c.maxBodyBytes,
		MaxInputs:          c.maxInputs,
		RateLimit:          c.rateLimit,
		RateBurst:          c.rateBurst,
		DBTimeout:          c.dbTimeout,
		MaxStreams:         maxStreams,
		MaxStreamsPerToken: c.maxStreamsToken,
		StandbyWait:        c.readWait,
	}
	if c.readURL != "" {
		readPool, err := store.Open(ctx, c.readURL, store.PoolConfig{MaxConns: int32(c.dbMaxConns), Lazy: true, ReadBuffer: readBuffer})
		if err != nil {
			return err
		}
		defer readPool.Close()
		standby := store.New(readPool)
		cfg.Standby, deps.StandbyReads = standby, core.WithReader(standby)
	}
	srv, err := server.New(deps, log, cfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // a 16 MiB batch over a slow uplink
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveFn, err := serveHTTP(c, httpServer, ln)
	if err != nil {
		ln.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serveFn() }()

	// The workers run until the server has stopped, then stop in the
	// reverse order of their start: the overdue check, the rollups'
	// maintainer and the outbox (whose attempts in flight finish, within
	// the webhook timeout; a kill leaves them to their lease), then the
	// record of token use, which flushes once more, and the cache of
	// tokens. Every replica runs each; the store gives each change to one.
	var w workers
	defer w.stop()
	w.start(ctx, func(ctx context.Context) { principals.Run(ctx, db, 5*time.Second) })
	w.start(ctx, func(ctx context.Context) { tokens.Run(ctx, 30*time.Second) })
	w.start(ctx, func(ctx context.Context) { ob.Run(ctx, time.Second) })
	w.start(ctx, func(ctx context.Context) { core.MaintainRollups(ctx, c.rollupInterval, c.rollupWorkers) })
	w.start(ctx, func(ctx context.Context) { core.CheckOverdue(ctx, c.alarmCheck) })

	if c.pprofAddr != "" {
		stopProfiling, err := serveProfiles(c.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopProfiling()
	}

	log.Info("listening", "url", listenURL(c, ln))
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", c.shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.shutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		httpServer.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	w.stop()
	log.Info("stopped")
	return nil
}

// workers are background loops, each run in a goroutine until stop.
type workers struct {
	stops []func()
}

// start runs fn in a goroutine with a context that stop cancels. fn runs
// on after ctx ends, until stop: the workers outlive the server's
// shutdown, which ctx starts.
func (w *workers) start(ctx context.Context, fn func(context.Context)) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	w.stops = append(w.stops, func() {
		cancel()
		<-done
	})
}

// stop stops the workers in the reverse order of their start, each ended
// before the next is stopped. A second stop does nothing.
func (w *workers) stop() {
	for i := len(w.stops) - 1; i >= 0; i-- {
		w.stops[i]()
	}
	w.stops = nil
}

// streamCap is how many exports may be open at once with a pool of
// poolSize connections: the setting, or half the pool when it is 0. It
// stays below the pool's size, so that however many exports are reading a
// chunk, ordinary requests find a connection.
func streamCap(setting, poolSize int) (int, error) {
	if setting == 0 {
		setting = poolSize / 2
	}
	if setting < 1 || setting >= poolSize {
		return 0, fmt.Errorf("max streams %d must be at least 1 and below the pool's %d connections; raise DB_MAX_CONNS or lower MAX_STREAMS", setting, poolSize)
	}
	return setting, nil
}

// serveProfiles serves net/http/pprof on addr, apart from the API so that
// it is never exposed with it.
func serveProfiles(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	log.Info("profiling", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { srv.Close() }, nil
}

func migrate(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parseConfig("migrate", args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	pool, err := store.Open(ctx, c.databaseURL, store.PoolConfig{})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, log); err != nil {
		return err
	}
	if err := store.ConfigureStorage(ctx, pool, c.storage, log); err != nil {
		return err
	}
	return store.New(pool).LogStorageMode(ctx, log)
}
