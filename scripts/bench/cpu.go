package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/scripts/proccpu"
)

// cpuMeter tells how much of the machine's CPU went to processes other than
// the run's own (the bench, the service, the PostgreSQL cluster) while a
// phase ran. On a shared machine that share is why two runs differ, and the
// report says how large it was (Linux). Kernel threads that write back the
// run's own dirty pages count as others: a few percent on a quiet machine.
type cpuMeter struct {
	bench, service int // their pids
	peer           int // a peer's pid while one runs, counted as the service
	postmaster     int // whose children, live and reaped, count too; 0 when PostgreSQL is not local
}

// cpuSample is a reading of the meter.
type cpuSample struct {
	at       time.Time
	busy     int64 // ticks every CPU spent not idle
	ours     int64 // ticks of the run's processes: the three below
	bench    int64
	service  int64
	postgres int64
	valid    bool
}

// newCPUMeter finds the local PostgreSQL server; without one, PostgreSQL's
// CPU cannot be told apart and the meter is off.
func (e *env) newCPUMeter(ctx context.Context) *cpuMeter {
	postmaster, err := e.localPostmaster(ctx)
	if err != nil {
		e.log.Warn("cannot tell other processes' CPU use", "err", err)
		return nil
	}
	return &cpuMeter{bench: os.Getpid(), service: e.svc.cmd.Process.Pid, postmaster: postmaster}
}

// localPostmaster is the pid of the PostgreSQL server on this machine: the
// parent of a backend of the pool, when /proc says it is postgres. A
// server elsewhere (-pg) has none, and the pid could be any local process.
func (e *env) localPostmaster(ctx context.Context) (int, error) {
	var backend int
	if err := e.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	stat, err := proccpu.Read(backend)
	if err != nil {
		return 0, errors.New("PostgreSQL runs elsewhere")
	}
	cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(stat.PPID), "cmdline"))
	if !strings.Contains(string(cmd), "postgres") {
		return 0, errors.New("PostgreSQL runs elsewhere")
	}
	return stat.PPID, nil
}

// setPeer makes the meter count pid, a peer, as the service, or no peer
// when 0. Only phases that measure nothing start or stop a peer, so that no
// measured phase sees the count change.
func (m *cpuMeter) setPeer(pid int) {
	if m != nil {
		m.peer = pid
	}
}

// sample reads the meter.
func (m *cpuMeter) sample() cpuSample {
	s := cpuSample{at: time.Now()}
	if m == nil {
		return s
	}
	busy, err := proccpu.MachineBusy()
	if err != nil {
		return s
	}
	s.busy = busy
	if st, err := proccpu.Read(m.bench); err == nil {
		s.bench = st.Self
	}
	if st, err := proccpu.Read(m.service); err == nil {
		s.service = st.Self
	}
	if st, err := proccpu.Read(m.peer); m.peer != 0 && err == nil {
		s.service += st.Self
	}
	postgres, err := proccpu.Postgres(m.postmaster)
	if err != nil {
		return s
	}
	s.postgres = postgres
	s.ours = s.bench + s.service + s.postgres
	s.valid = true
	return s
}

// phaseCPU is where the CPU went during a phase, in cores: 1 is one core
// busy for the whole phase.
type phaseCPU struct {
	phase                               string
	seconds                             float64
	bench, service, postgres, elsewhere float64
}

// cpuOf is the CPU use over pairs of samples, (start, end) of each timed
// part of a phase, or false when unknown.
func cpuOf(phase string, samples []cpuSample) (phaseCPU, bool) {
	var secs float64
	var bench, service, postgres, others int64
	for i := 0; i+1 < len(samples); i += 2 {
		from, to := samples[i], samples[i+1]
		if !from.valid || !to.valid {
			return phaseCPU{}, false
		}
		secs += to.at.Sub(from.at).Seconds()
		bench += to.bench - from.bench
		service += to.service - from.service
		postgres += to.postgres - from.postgres
		others += (to.busy - from.busy) - (to.ours - from.ours)
	}
	if secs <= 0 {
		return phaseCPU{}, false
	}
	cores := func(ticks int64) float64 { return float64(ticks) / proccpu.ClockTicks / secs }
	return phaseCPU{
		phase:     phase,
		seconds:   secs,
		bench:     cores(bench),
		service:   cores(service),
		postgres:  cores(postgres),
		elsewhere: max(0, cores(others)),
	}, true
}

// othersShare is the share of the machine's CPU, 0 to 1, that other
// processes took between two samples, or -1 when it is unknown.
func othersShare(from, to cpuSample) float64 {
	return othersShareOf([]cpuSample{from, to})
}

// othersShareOf is othersShare over pairs of samples, (before, after) of
// each phase, weighted by the phases' lengths.
func othersShareOf(samples []cpuSample) float64 {
	var others, capacity float64
	for i := 0; i+1 < len(samples); i += 2 {
		from, to := samples[i], samples[i+1]
		if !from.valid || !to.valid {
			return -1
		}
		capacity += to.at.Sub(from.at).Seconds() * proccpu.ClockTicks * float64(runtime.NumCPU())
		others += float64((to.busy - from.busy) - (to.ours - from.ours))
	}
	if capacity == 0 {
		return -1
	}
	return max(0, others/capacity)
}
