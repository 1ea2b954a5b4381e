package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
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
	stat, err := procStat(backend)
	if err != nil {
		return 0, errors.New("PostgreSQL runs elsewhere")
	}
	cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(stat.ppid), "cmdline"))
	if !strings.Contains(string(cmd), "postgres") {
		return 0, errors.New("PostgreSQL runs elsewhere")
	}
	return stat.ppid, nil
}

// setPeer makes the meter count pid, a peer, as the service, or no peer
// when 0. Only phases that measure nothing start or stop a peer, so that no
// measured phase sees the count change.
func (m *cpuMeter) setPeer(pid int) {
	if m != nil {
		m.peer = pid
	}
}

// sample reads the meter. A backend that exits between two samples is not
// lost: the postmaster reaps it, and its CPU moves to the postmaster's
// children's time, which is counted too.
func (m *cpuMeter) sample() cpuSample {
	s := cpuSample{at: time.Now()}
	if m == nil {
		return s
	}
	busy, err := machineBusy()
	if err != nil {
		return s
	}
	s.busy = busy
	if st, err := procStat(m.bench); err == nil {
		s.bench = st.self
	}
	if st, err := procStat(m.service); err == nil {
		s.service = st.self
	}
	if st, err := procStat(m.peer); m.peer != 0 && err == nil {
		s.service += st.self
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		st, err := procStat(pid)
		switch {
		case err != nil:
		case pid == m.postmaster:
			s.postgres += st.self + st.children
		case st.ppid == m.postmaster:
			s.postgres += st.self
		}
	}
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
	cores := func(ticks int64) float64 { return float64(ticks) / clockTicks / secs }
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
		capacity += to.at.Sub(from.at).Seconds() * clockTicks * float64(runtime.NumCPU())
		others += float64((to.busy - from.busy) - (to.ours - from.ours))
	}
	if capacity == 0 {
		return -1
	}
	return max(0, others/capacity)
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// machineBusy is the ticks all CPUs spent neither idle nor waiting for I/O.
func machineBusy() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy int64
	// user nice system idle iowait irq softirq steal
	for i, f := range fields[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += n
	}
	return busy, nil
}

type pidStat struct {
	ppid     int
	self     int64 // utime + stime
	children int64 // cutime + cstime: reaped children
}

// procStat reads a process's parent and CPU times from /proc/<pid>/stat.
func procStat(pid int) (pidStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return pidStat{}, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 15 {
		return pidStat{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v }
	return pidStat{ppid: int(n(4)), self: n(14) + n(15), children: n(16) + n(17)}, nil
}
