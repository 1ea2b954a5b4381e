// Command loadgen drives the Sensor Readings Service for scripts/load.sh and
// the chaos scripts, and checks afterwards that nothing acknowledged was lost.
//
//	loadgen load   -base URL -tokens-file F -org N -proj N -sensors 1,2,3 [...]
//	loadgen probe  -base URL -tokens-file F -org N -proj N -sensors 1 -database-url URL [...]
//	loadgen verify -database-url URL ACKLOG...
//	loadgen stress -base URL -tokens-file F -admin-token-file F -org N -proj N -database-url URL [...]
//
// load offers requests at a fixed rate (an open model: a slow answer does
// not slow the offered rate) and reports throughput, latency and statuses.
// probe watches PostgreSQL and the service side by side during the database
// chaos and reports how soon the service recovers. verify counts, with SQL,
// the readings of every batch the ack logs name. stress writes, overwrites,
// deletes, edits and reads while the compression job runs, and checks that
// every acknowledged write reads back (scripts/chaos-stress.sh).
//
// Every batch is recoverable from the stored data: see batch.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGINT and SIGTERM end a run early but normally: the scripts stop a
	// load that way, and the report still comes out.
	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(stop, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) && !errors.As(err, new(reported)) {
			fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		}
		os.Exit(1)
	}
}

// reported is a failure the command has already written in its report,
// which main need not repeat.
type reported struct{ error }

// run runs one command. stop is done when the run should wind down: the
// commands finish what is in flight and report rather than abort.
func run(stop context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: loadgen load|probe|verify|stress [flags]")
	}
	command, args := args[0], args[1:]
	switch command {
	case "load":
		return runLoad(stop, args, getenv, stdout, stderr)
	case "probe":
		return runProbe(stop, args, getenv, stdout, stderr)
	case "verify":
		return runVerify(stop, args, getenv, stdout, stderr)
	case "stress":
		return runStress(stop, args, getenv, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q: use load, probe, verify or stress", command)
}
