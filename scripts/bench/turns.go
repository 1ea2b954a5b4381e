package main

import (
	"context"
	"errors"
	"time"

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
	// and the rest of PostgreSQL's, which serves it.
	rawCPU, servedCPU cpuSpent
}

// rawDB is a store on a pool of one connection, for the raw calls of a
// phase in turns, and the pid of that connection's backend, whose CPU is
// the raw calls' share of PostgreSQL's.
func (e *env) rawDB(ctx context.Context) (db *store.DB, backend int, closeDB func(), err error) {
	pool, err := store.Open(ctx, e.dbURL, store.PoolConfig{MaxConns: 1})
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
	profiled := e.profile(ctx, profile, readProfileTime)
	stop, before := e.clock(), e.meter.sample()
	backendBefore, backendErr := procStat(backend)
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
	backendAfter, afterErr := procStat(backend)
	stop()
	after := e.meter.sample()
	if err := profiled(); err != nil {
		return t, err
	}
	var all cpuSpent
	all.add([]cpuSample{before, after})
	if all.known && errors.Join(backendErr, afterErr) == nil {
		rawTicks := backendAfter.self - backendBefore.self
		t.rawCPU = cpuSpent{postgres: rawTicks, known: true}
		t.servedCPU = cpuSpent{service: all.service, postgres: all.postgres - rawTicks, known: true}
	}
	return t, nil
}
