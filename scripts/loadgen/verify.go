package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// batchKey names a batch where it should be: its sensor and its tag.
type batchKey struct{ sensor, tag int64 }

// presence is what the database holds of one batch.
type presence struct {
	rows     int   // rows that carry the batch's tag on its sensor
	exact    int   // of those, rows at the instant their tag and index name
	maxIndex int64 // the highest index among them
}

// countTaggedSQL counts, per sensor and tag, the rows a load wrote, and how
// many of them sit exactly where batch.go puts them. extract(epoch) is
// numeric, so the comparison is exact to the microsecond.
const countTaggedSQL = `
SELECT sensor_id, vals[1]::bigint AS tag, count(*),
       count(*) FILTER (WHERE (extract(epoch FROM datetime) * 1000000)::bigint - $1
                              = vals[1]::bigint * 1000000 + vals[2]::bigint),
       max(vals[2])::bigint
FROM readings
WHERE input_ids[1] = 1 AND input_ids[2] = 2
GROUP BY 1, 2`

// verifyResult is what verify found.
type verifyResult struct {
	sent, acked    int
	lost           int // acknowledged but not fully present
	partial        int // some but not all readings present, acknowledged or not
	unackedPresent int // not acknowledged, yet fully present: the answer was lost, not the data
	unackedAbsent  int
	stray          int // stored rows no sent batch accounts for
	// With a target time (verify -until): the batches sent after it, and
	// how many of them are stored, all or in part, which none may be.
	sentAfter, presentAfter int
}

func (r verifyResult) ok() bool {
	return r.lost == 0 && r.partial == 0 && r.stray == 0 && r.presentAfter == 0
}

func runVerify(stop context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseURL := fs.String("database-url", getenv("DATABASE_URL"), "the PostgreSQL `url` the service wrote to (DATABASE_URL)")
	timeout := fs.Duration("timeout", 2*time.Minute, "the longest the check may take")
	untilFlag := fs.String("until", "", "a restore's target `time` (RFC 3339): the batches acknowledged by then must be stored, those sent after it must not")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *databaseURL == "" || fs.NArg() == 0 {
		return errors.New("usage: loadgen verify -database-url URL [-until TIME] ACKLOG...")
	}
	var until time.Time
	if *untilFlag != "" {
		t, err := time.Parse(time.RFC3339Nano, *untilFlag)
		if err != nil {
			return fmt.Errorf("-until: %w", err)
		}
		until = t
	}
	batches, err := readAckLogs(fs.Args())
	if err != nil {
		return err
	}
	if !until.IsZero() && slices.ContainsFunc(batches, func(b sentBatch) bool { return b.sentAt.IsZero() }) {
		return errors.New("-until needs ack logs with times, which this load generator writes")
	}
	ctx, cancel := context.WithTimeout(stop, *timeout)
	defer cancel()
	found, err := countTagged(ctx, *databaseURL)
	if err != nil {
		return err
	}
	r := classify(batches, found, until)
	fmt.Fprintf(stdout, "verify: %d batches sent, %d acknowledged; of the %d unacknowledged, %d fully present and %d absent; %d stored rows no batch accounts for\n",
		r.sent, r.acked, r.sent-r.acked, r.unackedPresent, r.unackedAbsent, r.stray)
	if !until.IsZero() {
		fmt.Fprintf(stdout, "verify: target %s: the %d acknowledged by then counted above; %d batches sent after it, %d of them stored\n",
			until.Format(time.RFC3339Nano), r.acked, r.sentAfter, r.presentAfter)
	}
	// The summary comes last, so that scripts can quote the last line.
	var failed error
	if !r.ok() {
		failed = reported{fmt.Errorf("lost=%d partial=%d stray rows=%d stored after the target=%d", r.lost, r.partial, r.stray, r.presentAfter)}
		fmt.Fprintf(stdout, "verify: FAILED: %v\n", failed)
	}
	fmt.Fprintf(stdout, "batches acknowledged=%d lost=%d partial=%d\n", r.acked, r.lost, r.partial)
	return failed
}

// countTagged reads, in one query, what the database holds of every batch.
func countTagged(ctx context.Context, databaseURL string) (map[batchKey]presence, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, countTaggedSQL, tagEpoch().UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("verify: count readings: %w", err)
	}
	found := map[batchKey]presence{}
	var k batchKey
	var p presence
	_, err = pgx.ForEachRow(rows, []any{&k.sensor, &k.tag, &p.rows, &p.exact, &p.maxIndex}, func() error {
		found[k] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify: count readings: %w", err)
	}
	return found, nil
}

// classify compares what was sent with what is stored. With a target
// time until (not zero), as after a restore to that point in time, a batch
// counts as acknowledged only when its answer came by then (its commit
// came earlier still), and a batch sent after it must be absent (its
// commit came later still); a batch in flight at until may be either, but
// whole.
func classify(batches []sentBatch, found map[batchKey]presence, until time.Time) verifyResult {
	r := verifyResult{sent: len(batches)}
	used := map[batchKey]bool{}
	for _, b := range batches {
		k := batchKey{b.sensor, b.tag}
		p := found[k]
		used[k] = true
		present := p.exact
		// Rows off their instant, or past the batch's end, are not the
		// batch's: a bug in the load or the service, never a pass.
		r.stray += p.rows - p.exact
		if p.maxIndex >= int64(b.readings) {
			r.stray++
			present = min(present, b.readings-1)
		}
		if !until.IsZero() {
			b.acked = b.acked && !b.ackedAt.After(until)
			if b.sentAt.After(until) {
				r.sentAfter++
				if p.rows > 0 {
					r.presentAfter++
				}
			}
		}
		if b.acked {
			r.acked++
			if present != b.readings {
				r.lost++
			}
		} else if present == b.readings {
			r.unackedPresent++
		} else if present == 0 {
			r.unackedAbsent++
		}
		if present > 0 && present < b.readings {
			r.partial++
		}
	}
	for k, p := range found {
		if !used[k] {
			r.stray += p.rows
		}
	}
	return r
}
