package server

import (
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sensorreadings/readings/apperr"
)

// rateLimits keeps a token bucket per API token. Buckets are keyed by the
// token's hash, so that a client over its limit is refused before the
// database is asked who it is; a bucket left idle long enough to be full
// again is forgotten.
type rateLimits struct {
	perSecond rate.Limit
	burst     int

	mu      sync.Mutex
	buckets map[[sha256.Size]byte]*bucket
	swept   time.Time
}

type bucket struct {
	limiter *rate.Limiter
	seen    time.Time
}

func newRateLimits(perSecond float64, burst int) *rateLimits {
	return &rateLimits{perSecond: rate.Limit(perSecond), burst: burst, buckets: map[[sha256.Size]byte]*bucket{}}
}

// allow takes one request from the token's bucket, sets the RateLimit
// headers, and returns RateLimited with Retry-After when the bucket is
// empty. A zero rate means no limit.
func (l *rateLimits) allow(h http.Header, token string) error {
	if l.perSecond <= 0 {
		return nil
	}
	now := time.Now()
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{limiter: rate.NewLimiter(l.perSecond, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	l.sweep(now)
	allowed := b.limiter.AllowN(now, 1)
	remaining := b.limiter.TokensAt(now)
	l.mu.Unlock()

	h.Set("RateLimit-Limit", strconv.Itoa(l.burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(0, int(remaining))))
	if allowed {
		return nil
	}
	wait := int(math.Ceil((1 - remaining) / float64(l.perSecond)))
	h.Set("Retry-After", strconv.Itoa(max(1, wait)))
	return apperr.Errorf(apperr.RateLimited, "this token is over its limit of %v requests a second (bursts of %d); retry after %d s",
		float64(l.perSecond), l.burst, max(1, wait))
}

// sweep forgets buckets idle long enough to have refilled, at most once a
// minute, so that the map holds the tokens in use, not every token ever seen.
func (l *rateLimits) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	full := time.Duration(float64(l.burst)/float64(l.perSecond)*float64(time.Second)) + time.Second
	for key, b := range l.buckets {
		if now.Sub(b.seen) > full {
			delete(l.buckets, key)
		}
	}
}
