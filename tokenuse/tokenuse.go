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

// Flush writes when the tokens used since the last flush were used.
func (r *Recorder) Flush(ctx context.Context) error {
	ids := r.take()
	if len(ids) == 0 {
		return nil
	}
	return r.st.TouchTokens(ctx, ids, time.Now())
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
