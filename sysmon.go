package main

import (
	"os"
	"strings"
	"syscall"
)

// sysmonDebug is the GODEBUG setting serve runs under, for a side effect:
// the runtime's scheduler trace every 2^31-1 ms (24.8 days, the longest
// period it takes), which it prints to stderr, one line, only once the
// host has been up that long, and then once per period. While schedtrace
// is set, the runtime's monitor thread (sysmon) does not go into its
// deep sleep whenever every P is idle. Without it,
// the service, idle between requests and for a moment whenever it waits
// on PostgreSQL's socket, put sysmon to sleep several times a page, and
// the first system call after each such moment woke it (a futex call),
// and sysmon then ran in 20 µs sleeps until the service was idle again:
// 11 to 17 nanosleeps, 9 to 20 futex calls and 27 to 53 context switches
// a row-6b page, against 2, 4 and 12 to 15 with it, and the service's
// CPU a page a third lower, on the bench's virtual machine, where a
// system call and a wake-up are dear (docs/performance.md, branch
// page18b). With it, sysmon sleeps up to 10 ms at a time once nothing
// needs it, so an idle service wakes it about 100 times a second.
const sysmonDebug = "schedtrace=2147483647"

// withSysmonDebug returns godebug, a GODEBUG value, with sysmonDebug
// added, or false when godebug sets schedtrace itself: an operator's
// trace stays theirs.
func withSysmonDebug(godebug string) (string, bool) {
	for _, setting := range strings.Split(godebug, ",") {
		if name, _, _ := strings.Cut(setting, "="); strings.TrimSpace(name) == "schedtrace" {
			return godebug, false
		}
	}
	if godebug == "" {
		return sysmonDebug, true
	}
	return godebug + "," + sysmonDebug, true
}

// keepSysmonAwake executes the process again, with the same arguments
// and sysmonDebug added to GODEBUG, when command is serve and GODEBUG
// does not set schedtrace: the runtime reads schedtrace only when the
// process starts, and neither a //go:debug line nor os.Setenv can set it.
// The process keeps its id. When the executable cannot be found or
// executed, serve goes on without the setting.
func keepSysmonAwake(command string) {
	if command != "serve" {
		return
	}
	godebug, ok := withSysmonDebug(os.Getenv("GODEBUG"))
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := []string{"GODEBUG=" + godebug}
	for _, kv := range os.Environ() {
		// The runtime reads the first GODEBUG of the environment: the
		// old one goes.
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env) // returns only when it failed
}
