// Package proccpu reads CPU time from Linux's /proc, for the bench and the
// storage study: the machine's busy time, a process's, and a local
// PostgreSQL cluster's.
package proccpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const ClockTicks = 100

// Stat is a process's parent and CPU times, in clock ticks.
type Stat struct {
	PPID     int
	Self     int64 // utime + stime
	Children int64 // cutime + cstime: reaped children
}

// Read reads a process's Stat from /proc/<pid>/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	// The command name, field 2, is in parentheses and may hold spaces
	// and parentheses: the fields follow the last ')'.
	end := strings.LastIndexByte(string(b), ')')
	if end < 0 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v }
	return Stat{PPID: int(n(4)), Self: n(14) + n(15), Children: n(16) + n(17)}, nil
}

// MachineBusy is the ticks all CPUs spent neither idle nor waiting for I/O.
func MachineBusy() (int64, error) {
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
	// user nice system idle iowait irq softirq steal (guest time is in user's)
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

// Postgres is the ticks of the PostgreSQL cluster whose postmaster is pid:
// the postmaster's own and its reaped children's, and each live child's
// (backends, WAL writer, checkpointer, TimescaleDB's workers). A backend
// that exits between two readings is not lost: the postmaster reaps it,
// and its time moves to the postmaster's children's.
func Postgres(postmaster int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		st, err := Read(pid)
		switch {
		case err != nil:
		case pid == postmaster:
			ticks += st.Self + st.Children
		case st.PPID == postmaster:
			ticks += st.Self
		}
	}
	return ticks, nil
}
