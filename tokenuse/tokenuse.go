// Package tokenuse records when tokens are used, a batch at a time: the
// server notes each token it authenticates, and a worker that main runs
// writes the tokens noted since the last flush, so that last_used_at costs
// one UPDATE per interval instead of a write per request.
package tokenuse

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Store writes when tokens were used.
type Store interface {
	TouchTokens(ctx context.Context, ids []int64, at time.Time) error
}

// Recorder collects the tokens used since the last flush.
type Recorder struct {
	st   Store
	log  *slog.Logger
	mu   sync.Mutex
	used map[int64]struct{}

	// flushMu guards unwritten: the last use of each token a failed flush
	// could not write, kept with its time for the next flush, so that an
	// outage of the database neither loses a use nor post-dates it.
	flushMu   sync.Mutex
	unwritten map[int64]time.Time
}

// New returns a recorder that writes to st.
func New(st Store, log *slog.Logger) *Recorder {
	return &Recorder{st: st, log: log}
}

// Record notes that token tokenID was used now. It is safe for concurrent
// use.
func (r *Recorder) Record(tokenID int64) {
	r.mu.Lock()
	if r.used == nil {
		r.used = make(map[int64]struct{})
	}
	r.used[tokenID] = struct{}{}
	r.mu.Unlock()
}

// take returns the tokens noted since the last take, and forgets them.
func (r *Recorder) take() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.used))
	for id := range r.used {
		ids = append(ids, id)
	}
	r.used = nil
	return ids
}

// Flush writes when the tokens used since the last flush were used, and
// what an earlier flush failed to write. What it fails to write it keeps
// for the next one.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	now := time.Now()
	for _, id := range r.take() {
		if r.unwritten == nil {
			r.unwritten = make(map[int64]time.Time)
		}
		r.unwritten[id] = now
	}
	byTime := make(map[time.Time][]int64)
	for id, at := range r.unwritten {
		byTime[at] = append(byTime[at], id)
	}
	for at, ids := range byTime {
		if err := r.st.TouchTokens(ctx, ids, at); err != nil {
			return err
		}
		for _, id := range ids {
			delete(r.unwritten, id)
		}
	}
	return nil
}

// Run flushes every interval until ctx ends, then once more, so that a
// clean shutdown loses none.
func (r *Recorder) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Flush(flushCtx); err != nil {
				r.log.Warn("record token use", "err", err)
			}
			return
		}
		if err := r.Flush(ctx); err != nil {
			r.log.Warn("record token use", "err", err)
		}
	}
}
