package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The kinds of request a load sends.
const (
	kindWrite  = "write"  // POST a batch
	kindRead   = "read"   // GET limit=1000
	kindLatest = "latest" // GET order=desc&limit=1
)

// The classes of transport error: a request that got no HTTP status.
const (
	errRefused = "refused" // nothing listening: the service is down
	errReset   = "reset"   // the connection died mid-request: the service was killed
	errTimeout = "timeout" // no answer within the client's timeout: a hang
	errOther   = "other"
)

// classifyError says which class a transport error is of. Only refused and
// reset are what killing the service looks like from outside; a timeout is
// a hang, whatever else is going on.
func classifyError(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errRefused
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return errTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errReset
	}
	return errOther
}

// kindStats is what one kind of request saw.
type kindStats struct {
	latencies []time.Duration // of requests that got a status
	statuses  map[int]int
	errors    map[string]int // transport errors by class
	written   int64          // readings in acknowledged batches
	// samples holds the first answer of each status outside 2xx and the
	// first error of each class, so that a report can quote what went wrong.
	samples map[string]string
}

// sample keeps the first example of key.
func (ks *kindStats) sample(key, text string) {
	if _, ok := ks.samples[key]; !ok {
		ks.samples[key] = text
	}
}

// stats is what a worker saw, by kind. Each worker keeps its own, merged
// at the end, so recording takes no lock.
type stats map[string]*kindStats

func (s stats) kind(k string) *kindStats {
	ks := s[k]
	if ks == nil {
		ks = &kindStats{statuses: map[int]int{}, errors: map[string]int{}, samples: map[string]string{}}
		s[k] = ks
	}
	return ks
}

func (s stats) merge(o stats) {
	for k, src := range o {
		dst := s.kind(k)
		dst.latencies = append(dst.latencies, src.latencies...)
		for code, n := range src.statuses {
			dst.statuses[code] += n
		}
		for class, n := range src.errors {
			dst.errors[class] += n
		}
		dst.written += src.written
		for key, text := range src.samples {
			dst.sample(key, text)
		}
	}
}

// verdict is what a run's responses say about the service, under a policy.
type verdict struct {
	badStatuses map[int]int    // statuses the policy does not accept
	badErrors   map[string]int // transport errors the policy does not accept
}

// policy says which answers are acceptable. 2xx and 429 (the per-token rate
// limit) always are; 503 (the database is unavailable) only where an outage
// is expected; refused and reset connections only while the service is
// being killed.
type policy struct {
	allow503        bool
	allowConnErrors bool
}

func (p policy) judge(s stats) verdict {
	v := verdict{badStatuses: map[int]int{}, badErrors: map[string]int{}}
	for _, ks := range s {
		for code, n := range ks.statuses {
			if !(code >= 200 && code < 300 || code == 429 || code == 503 && p.allow503) {
				v.badStatuses[code] += n
			}
		}
		for class, n := range ks.errors {
			if !(p.allowConnErrors && (class == errRefused || class == errReset)) {
				v.badErrors[class] += n
			}
		}
	}
	return v
}

func (v verdict) ok() bool { return len(v.badStatuses) == 0 && len(v.badErrors) == 0 }

func (v verdict) String() string {
	var parts []string
	if n := sum(v.badStatuses); n > 0 {
		parts = append(parts, fmt.Sprintf("%d responses with an unacceptable status (%s)", n, counts(v.badStatuses)))
	}
	if n := sum(v.badErrors); n > 0 {
		parts = append(parts, fmt.Sprintf("%d unacceptable transport errors (%s)", n, counts(v.badErrors)))
	}
	if len(parts) == 0 {
		return "no unacceptable response"
	}
	return strings.Join(parts, "; ")
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// counts formats a map as "k=v k=v", keys in order; "none" when empty.
func counts[K int | string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%v=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// percentile is the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// writeTable writes one line per kind of a load: count, latency
// percentiles and statuses.
func writeTable(w io.Writer, s stats) {
	writeKinds(w, s, []string{kindWrite, kindRead, kindLatest})
}

// writeKinds writes writeTable's line for each of kinds that s has.
func writeKinds(w io.Writer, s stats, kinds []string) {
	fmt.Fprintf(w, "  %-9s %8s %9s %9s %9s %9s  %s\n", "kind", "count", "p50", "p90", "p99", "max", "statuses / transport errors")
	for _, k := range kinds {
		ks := s[k]
		if ks == nil {
			continue
		}
		lat := slices.Sorted(slices.Values(ks.latencies))
		line := counts(ks.statuses)
		if len(ks.errors) > 0 {
			line += " / " + counts(ks.errors)
		}
		fmt.Fprintf(w, "  %-9s %8d %9s %9s %9s %9s  %s\n", k, sum(ks.statuses)+sum(ks.errors),
			ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99)), ms(percentile(lat, 100)), line)
	}
}

// ms formats a duration in milliseconds with a sensible precision.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 10:
		return fmt.Sprintf("%.2fms", f)
	case f < 100:
		return fmt.Sprintf("%.1fms", f)
	}
	return fmt.Sprintf("%.0fms", f)
}
