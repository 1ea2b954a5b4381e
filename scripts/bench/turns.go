package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/scripts/proccpu"
	"github.com/sensorreadings/readings/store"
)

// Rows 5, 6, 6b, 10 and 10b compare a request through the service with
// the store's own call that answers it, the raw figure. Measured in
// separate phases minutes apart, the raw baseline moved 30–40 % between
// quiet runs of the same code, so each service row times its request and
// the raw call in turns, request by request, under the same state of the
// machine.

// turns are the times of the rounds of a phase that runs a raw call and
// the service's request in turns, and the CPU each side spent.
type turns struct {
	raw, served []time.Duration
	// rawCPU is the raw call's: the backend of its connection (its
	// service is 0, the bench is its client); servedCPU is the service's
	// and its connections' backends'. PostgreSQL's own processes
	// (autovacuum, checkpointer, TimescaleDB's jobs) count for neither:
	// over a phase of several seconds they added hundreds of µs to every
	// request.
	rawCPU, servedCPU cpuSpent
}

// rawDB is a store on a pool of one connection, for the raw calls of a
// phase in turns, and the pid of that connection's backend, whose CPU is
// the raw calls' share of PostgreSQL's.
func (e *env) rawDB(ctx context.Context) (db *store.DB, backend int, closeDB func(), err error) {
	pool, err := store.Open(ctx, e.benchURL(), store.PoolConfig{MaxConns: 1})
	if err != nil {
		return nil, 0, nil, err
	}
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		pool.Close()
		return nil, 0, nil, err
	}
	return store.New(pool), backend, pool.Close, nil
}

// inTurns runs n rounds of raw(db, i) and served(i), each timed apart,
// on the same picks, one at a time: raw first in even rounds, served
// first in odd ones, so that neither always runs on what the other just
// brought into the caches. The service's CPU profile, when -profile asks,
// covers the rounds as profile.
func (e *env) inTurns(ctx context.Context, profile string, n int,
	raw func(ctx context.Context, db *store.DB, i int) error, served func(ctx context.Context, i int) error) (turns, error) {
	db, backend, closeDB, err := e.rawDB(ctx)
	if err != nil {
		return turns{}, err
	}
	defer closeDB()
	t := turns{raw: make([]time.Duration, 0, n), served: make([]time.Duration, 0, n)}
	timed := func(times *[]time.Duration, call func() error) error {
		start := time.Now()
		if err := call(); err != nil {
			return err
		}
		*times = append(*times, time.Since(start))
		return nil
	}
	servedBefore, servedErr := e.serviceBackends(ctx)
	profiled := e.profile(ctx, profile, readProfileTime)
	stop, before := e.clock(), e.meter.sample()
	backendBefore, backendErr := proccpu.Read(backend)
	for i := range n {
		rawTurn := func() error { return timed(&t.raw, func() error { return raw(ctx, db, i) }) }
		servedTurn := func() error { return timed(&t.served, func() error { return served(ctx, i) }) }
		first, second := rawTurn, servedTurn
		if i%2 == 1 {
			first, second = servedTurn, rawTurn
		}
		if err := first(); err != nil {
			return t, err
		}
		if err := second(); err != nil {
			return t, err
		}
	}
	backendAfter, afterErr := proccpu.Read(backend)
	stop()
	after := e.meter.sample()
	servedAfter, servedAfterErr := e.serviceBackends(ctx)
	if err := profiled(); err != nil {
		return t, err
	}
	var all cpuSpent
	all.add([]cpuSample{before, after})
	if all.known && errors.Join(backendErr, afterErr, servedErr, servedAfterErr) == nil {
		t.rawCPU = cpuSpent{postgres: backendAfter.Self - backendBefore.Self, known: true}
		// A backend the service's pool opened meanwhile counts from its
		// start; one it closed meanwhile is lost, which its pool's idle
		// time (minutes) makes rare in a phase of seconds.
		var served int64
		for pid, ticks := range servedAfter {
			served += ticks - servedBefore[pid]
		}
		t.servedCPU = cpuSpent{service: all.service, postgres: served, known: true}
	}
	return t, nil
}

// serviceBackends is the CPU ticks so far of each backend of the bench
// database that is not the bench's own (benchApplication): the
// service's connections.
func (e *env) serviceBackends(ctx context.Context) (map[int]int64, error) {
	rows, _ := e.pool.Query(ctx, `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend' AND application_name <> $1`, benchApplication)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	ticks := make(map[int]int64, len(pids))
	for _, pid := range pids {
		if st, err := proccpu.Read(int(pid)); err == nil {
			ticks[int(pid)] = st.Self
		}
	}
	return ticks, nil
}

// withGoClient is the figure of a service row's turns with Go's
// http.Client, said after the row's measurement: the same requests and
// raw calls, in turns of their own.
func withGoClient(t turns) string {
	rawP50, _ := percentiles(t.raw)
	p50, _ := percentiles(t.served)
	return fmt.Sprintf("; by Go's http.Client, in turns of their own: p50 %s against the raw call's %s, %.2f ×%s",
		duration(p50), duration(rawP50), float64(p50)/float64(rawP50), t.servedCPU.microsPerRequest(len(t.served)))
}
