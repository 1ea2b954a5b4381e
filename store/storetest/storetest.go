// Package storetest gives tests a fresh, migrated PostgreSQL database of
// their own, on a real server: TEST_DATABASE_URL when it is set; else a
// container when a Docker engine answers; else the private cluster of
// scripts/devdb.sh, which it starts. There is no mock and no skip: without a
// database the test fails and says why.
//
// TEST_STORAGE names the storage mode the tests run on, timescaledb or
// postgresql; `make test` runs the suite once on each that the machine
// offers. Unset, it is timescaledb where the extension is installed, else
// postgresql. With TEST_DATABASE_URL it names what that server is expected
// to give, and TestStorageMode checks it.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/sensorreadings/readings/scripts/proccpu"
	"github.com/sensorreadings/readings/store"
)

// The images tests run against where Docker is available: the database the
// docker-compose file deploys (TestComposeFile checks it builds on this
// one), TimescaleDB 2.28 on PostgreSQL 15 as .ci/run's private clusters
// are, and plain PostgreSQL of the same version.
const (
	TimescaleImage  = "timescale/timescaledb:2.28.3-pg15"
	PostgreSQLImage = "postgres:15"
)

var server = sync.OnceValues(findServer)

// Storage is the storage mode the tests are to run on, as TEST_STORAGE
// names it: store.TimescaleDB, store.PostgreSQL, or "" where the machine
// decides (TimescaleDB where it is installed).
func Storage() store.StorageMode {
	return store.StorageMode(os.Getenv("TEST_STORAGE"))
}

// NewDatabase creates an empty database, migrated to the latest version,
// and returns its URL. It is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dbURL := NewEmptyDatabase(t)
	pool, err := store.Open(context.Background(), dbURL, store.PoolConfig{MaxConns: 2})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	defer pool.Close()
	if err := store.Migrate(context.Background(), pool, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("migrate test database: %v", err)
	}
	return dbURL
}

// NewEmptyDatabase creates a database with no schema, for tests of the
// migrations themselves, and returns its URL. It is dropped when the test
// ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	serverURL, err := server()
	if err != nil {
		t.Fatalf("no PostgreSQL for tests: %v", err)
	}
	ctx := context.Background()
	name := "test_" + randomHex(8)
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	// A test database is thrown away: its commits need not wait for the
	// disk, which makes fixtures of many small transactions several times
	// faster. Crash safety is proven by scripts/chaos-*.sh, not here.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		t.Fatalf("configure test database: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(serverURL, name); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})

	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("test server url: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewPool returns a pool on a fresh, migrated database, closed when the
// test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(context.Background(), NewDatabase(t), store.PoolConfig{})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewDurablePool is NewPool with commits that wait for the disk, as the
// service's do (synchronous_commit on), for benchmarks of writes: a test
// database's commits do not wait (NewEmptyDatabase).
func NewDurablePool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u, err := url.Parse(NewDatabase(t))
	if err != nil {
		t.Fatalf("test database url: %v", err)
	}
	q := u.Query()
	q.Set("synchronous_commit", "on")
	u.RawQuery = q.Encode()
	pool, err := store.Open(context.Background(), u.String(), store.PoolConfig{})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close)
	var setting string
	if err := pool.QueryRow(context.Background(), "SHOW synchronous_commit").Scan(&setting); err != nil || setting != "on" {
		t.Fatalf("synchronous_commit = %q, %v; want on", setting, err)
	}
	return pool
}

// ServerCPU is the CPU time that the PostgreSQL server behind pool has
// spent so far: its postmaster and every process it started (backends, WAL
// writer, checkpointer, background workers), those it has reaped
// included. A benchmark reports its growth per unit of work beside its own
// process's CPU: the figure that holds on a machine that others share. The
// server must run on this machine, as the private cluster does, and serve
// nothing else meanwhile.
func ServerCPU(t testing.TB, pool *pgxpool.Pool) time.Duration {
	t.Helper()
	var backend int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatalf("backend pid: %v", err)
	}
	self, err := proccpu.Read(backend)
	if err != nil {
		t.Fatalf("PostgreSQL's CPU: the server is not a local process: %v", err)
	}
	ticks, err := proccpu.Postgres(self.PPID)
	if err != nil {
		t.Fatalf("PostgreSQL's CPU: %v", err)
	}
	return time.Duration(ticks) * time.Second / proccpu.ClockTicks
}

// dropDatabase drops a test database and ends whatever is connected to it.
// On TimescaleDB that includes the extension's scheduler, a background
// worker the launcher may be starting just as the database goes: FORCE can
// then meet a worker that is not yet ready to be signalled, so the drop is
// tried again for a few seconds before it counts as a failure.
func dropDatabase(serverURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for {
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func findServer() (string, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u, nil
	}
	ctx := context.Background()
	if dockerAnswers(ctx) {
		return startContainer(ctx)
	}
	return startDevCluster(ctx)
}

// dockerAnswers tells, within seconds, whether a Docker engine runs. A
// docker client without an engine makes testcontainers panic or wait, so
// both are bounded here.
func dockerAnswers(ctx context.Context) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	defer provider.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return provider.Health(ctx) == nil
}

// startContainer runs the database of the storage mode for this test
// process; testcontainers' reaper removes it when the process ends.
func startContainer(ctx context.Context) (string, error) {
	image := TimescaleImage
	if Storage() == store.PostgreSQL {
		image = PostgreSQLImage
	}
	c, err := tcpostgres.Run(ctx, image,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", image, err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// startDevCluster starts the private cluster of scripts/devdb.sh, or finds
// it running, and returns its URL.
func startDevCluster(ctx context.Context) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // may install PostgreSQL
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "devdb.sh"), "start")
	cmd.Env = append(os.Environ(), "DEVDB_STORAGE="+string(Storage()))
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/devdb.sh start: %w: %s", err, stderr.String())
	}
	return string(bytes.TrimSpace(stdout.Bytes())), nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
