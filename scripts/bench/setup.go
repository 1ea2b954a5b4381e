package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
)

// env is everything a run sets up: the database, the service and the data.
type env struct {
	cfg    config
	log    *slog.Logger
	stderr io.Writer
	root   string // the module's directory

	loadBefore string // the load average before set-up

	serverURL string // the PostgreSQL server
	dbURL     string // the bench database on it
	pool      *pgxpool.Pool
	svc       *service
	data      *dataset
	blueprint blueprintSensor // the sensor of rows 6b and 9
	linked    blueprintSensor // row 6b's sensor again, with x2 linked: row 12
	// row 12's again, linked to a source as dense as itself
	linkedDense blueprintSensor

	spans  []span   // the service's POSTs, in the order they are sent
	bodies [][]byte // and their bodies, encoded once for rows 3 and 4
	lines  [][]byte // and as line protocol, for the peers

	stopPeer func(context.Context) error // stops the peer that runs

	meter *cpuMeter   // nil when CPU use cannot be told apart
	timed []cpuSample // (start, end) of each timed part of the current phase

	// cleanups undo set-up, last first.
	cleanups []func(context.Context) error
}

// setUp creates the bench database, starts the service on it and creates
// the organization, project and sensors. On failure it undoes what it did.
func setUp(ctx context.Context, cfg config, log *slog.Logger, stderr io.Writer) (_ *env, err error) {
	e := &env{cfg: cfg, log: log, stderr: stderr, loadBefore: loadAverage()}
	defer func() {
		if err != nil {
			e.tearDown()
		}
	}()
	if e.root, err = moduleRoot(ctx); err != nil {
		return nil, err
	}
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	if err := e.openPool(ctx); err != nil {
		return nil, err
	}
	if err := e.startService(ctx); err != nil {
		return nil, err
	}
	if err := e.holdCompressionPolicy(ctx); err != nil {
		return nil, err
	}
	if err := e.createSensors(ctx); err != nil {
		return nil, err
	}
	log.Info("generating data", "readings", cfg.readings, "sensors", cfg.sensors)
	e.data = newDataset(rand.New(rand.NewPCG(cfg.seed, 1)), e.svc.sensors, cfg.perSensor())
	return e, nil
}

// holdCompressionPolicy keeps TimescaleDB's compression policy, which the
// service has just set, from running during the run. Its first run comes
// seconds after the service starts, its next hours later: in a full run
// the first finds no readings, but a run of a few phases COPYs readings
// by then, and the policy compressed whichever of their chunks were
// complete (3 and 4 of 13e's 18 in two runs of its phase alone, which
// then read some chunks compressed and the rest not). Held, every run
// reads the state a full run reads. No phase relies on the policy.
func (e *env) holdCompressionPolicy(ctx context.Context) error {
	var timescale bool
	if err := e.pool.QueryRow(ctx, `SELECT to_regclass('timescaledb_information.jobs') IS NOT NULL`).Scan(&timescale); err != nil || !timescale {
		return err
	}
	_, err := e.pool.Exec(ctx, `SELECT alter_job(job_id, scheduled => false) FROM timescaledb_information.jobs
WHERE proc_name = 'policy_compression' AND hypertable_name = 'readings'`)
	if err != nil {
		return fmt.Errorf("hold the compression policy: %w", err)
	}
	return nil
}

// tearDown stops the service, closes the pool and drops the database, with
// a context of its own: it runs after Ctrl-C or a timeout too.
func (e *env) tearDown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		if err := e.cleanups[i](ctx); err != nil {
			e.log.Error("clean up", "err", err)
		}
	}
	e.cleanups = nil
}

func (e *env) onTearDown(fn func(context.Context) error) {
	e.cleanups = append(e.cleanups, fn)
}

// moduleRoot is the directory of go.mod, so that the bench runs from any
// directory of the checkout.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the module: run the bench from the checkout")
	}
	return filepath.Dir(gomod), nil
}

// createDatabase creates bench_<random> on the server and drops it at tear
// down, so that runs never see each other's rows or the developer's.
func (e *env) createDatabase(ctx context.Context) error {
	e.serverURL = e.cfg.serverURL
	if e.serverURL == "" {
		e.log.Info("starting the private PostgreSQL", "script", "scripts/devdb.sh start")
		cmd := exec.CommandContext(ctx, filepath.Join(e.root, "scripts", "devdb.sh"), "start")
		cmd.Stderr = e.stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("scripts/devdb.sh start: %w", err)
		}
		e.serverURL = strings.TrimSpace(string(out))
	}
	suffix := make([]byte, 6)
	if _, err := crand.Read(suffix); err != nil {
		return fmt.Errorf("database name: %w", err)
	}
	name := "bench_" + hex.EncodeToString(suffix)
	u, err := url.Parse(e.serverURL)
	if err != nil {
		return fmt.Errorf("server url: %w", err)
	}
	u.Path = "/" + name
	e.dbURL = u.String()

	if err := e.onServer(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	e.log.Info("created database", "name", name)
	e.onTearDown(func(ctx context.Context) error {
		// FORCE: a connection left by a failed phase must not keep it.
		if err := e.onServer(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		e.log.Info("dropped database", "name", name)
		return nil
	})
	return nil
}

// onServer runs one statement on the server's own database: CREATE and DROP
// DATABASE cannot run inside the database they name.
func (e *env) onServer(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// openPool migrates the bench database with the service's own migrations
// and keeps a pool for the raw measurements, which use one connection of
// it, or one per client in row 1c.
func (e *env) openPool(ctx context.Context) error {
	pool, err := store.Open(ctx, e.benchURL(), store.PoolConfig{MaxConns: int32(max(4, e.cfg.clients))})
	if err != nil {
		return err
	}
	e.pool = pool
	e.onTearDown(func(context.Context) error { pool.Close(); return nil })
	migrateCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return store.Migrate(migrateCtx, pool, quiet)
}

// benchApplication is the application_name of the bench's own
// connections, which tells the service's backends from them.
const benchApplication = "readings-bench"

// benchURL is the bench database's URL for the bench's own connections.
func (e *env) benchURL() string {
	u, err := url.Parse(e.dbURL)
	if err != nil {
		return e.dbURL // createDatabase built it; Open will say what is wrong
	}
	q := u.Query()
	q.Set("application_name", benchApplication)
	u.RawQuery = q.Encode()
	return u.String()
}

// run runs a command of the module's toolchain or binary, its stderr shown,
// and returns its stdout.
func (e *env) run(ctx context.Context, timeout time.Duration, environ []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.root
	cmd.Env = environ
	cmd.Stderr = e.stderr
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}
