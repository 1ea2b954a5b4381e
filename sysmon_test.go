package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var sysmonDebugTests = []struct {
	godebug string
	want    string
	added   bool
}{
	{"", sysmonDebug, true},
	{"http2client=0", "http2client=0," + sysmonDebug, true},
	{"schedtraceX=1", "schedtraceX=1," + sysmonDebug, true},
	{"schedtrace=1000", "schedtrace=1000", false},
	{"http2client=0, schedtrace=0", "http2client=0, schedtrace=0", false},
}

func TestWithSysmonDebug(t *testing.T) {
	for _, tt := range sysmonDebugTests {
		if got, added := withSysmonDebug(tt.godebug); got != tt.want || added != tt.added {
			t.Errorf("withSysmonDebug(%q) = %q, %v, want %q, %v", tt.godebug, got, added, tt.want, tt.added)
		}
	}
}

// TestSysmonHelper is the process TestServeKeepsSysmonAwake runs: it
// prints its GODEBUG and enters main, which serve's re-execution runs
// again; serve then fails on the test's flags.
func TestSysmonHelper(t *testing.T) {
	if os.Getenv("READINGS_SYSMON_HELPER") != "1" {
		t.Skip("run by TestServeKeepsSysmonAwake")
	}
	fmt.Printf("GODEBUG=%s\n", os.Getenv("GODEBUG"))
	main()
}

// TestServeKeepsSysmonAwake runs main as serve (the test binary's
// arguments are flags) and checks that it executes itself once more, with
// sysmonDebug in GODEBUG and the rest of GODEBUG kept, unless GODEBUG sets
// schedtrace.
func TestServeKeepsSysmonAwake(t *testing.T) {
	for _, c := range []struct {
		godebug string
		want    []string // the GODEBUG each run of the process printed
	}{
		{"", []string{"", sysmonDebug}},
		{"http2client=0", []string{"http2client=0", "http2client=0," + sysmonDebug}},
		{"schedtrace=0", []string{"schedtrace=0"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSysmonHelper$")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "GODEBUG=")
		}), "READINGS_SYSMON_HELPER=1", "GODEBUG="+c.godebug)
		out, _ := cmd.Output() // serve fails on -test.run
		var got []string
		for line := range strings.Lines(string(out)) {
			if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "GODEBUG="); ok {
				got = append(got, v)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("GODEBUG=%q: the runs printed GODEBUG %q, want %q", c.godebug, got, c.want)
		}
	}
}
