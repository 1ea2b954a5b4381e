// Package authcache keeps who the tokens seen lately speak for, so that a
// request with such a token costs no round trip to the database to
// authenticate it: a page of readings then costs one round trip in all.
//
// What a token speaks for is security itself, so the cache forgets
// everything as soon as anything it was computed from may have changed:
//
//   - PostgreSQL notifies every replica of every change of a token or a
//     membership, at commit, whatever made it (migration 00061's triggers,
//     on store.AuthChannel), and each replica forgets all it keeps when
//     told (Run);
//   - the replica that made a change through the API forgets before it
//     answers (Forget), so that its own next request sees the change;
//   - an answer read from the database while a change was being notified
//     is not kept (a generation counter), and nothing is kept while the
//     notifications cannot be heard (before Run listens, and from a lost
//     connection until it listens again);
//   - an entry lives at most MaxAge, and never past its token's expiry.
//
// A request authenticated just before a change is committed goes on with
// what it was allowed, with or without the cache; on another replica the
// cache adds the time the notification takes to arrive, milliseconds.
package authcache

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"sync"
	"time"

	"github.com/sensorreadings/readings/store"
)

// MaxAge bounds how long an entry is kept, in case notifications stop
// arriving while their connection looks alive.
const MaxAge = 10 * time.Second

// MaxEntries bounds the memory: past it, the cache starts over. Only
// tokens that authenticate are kept.
const MaxEntries = 10_000

// Source authenticates tokens: the database.
type Source interface {
	AuthenticateExpiring(ctx context.Context, secret string, orgID int64) (store.Principal, time.Duration, error)
}

// Listener calls listening once it hears the notifications of changes on
// channel, then notified for each, until ctx is done or it fails.
type Listener interface {
	Listen(ctx context.Context, channel string, listening, notified func()) error
}

// Cache is a server.Authenticator that keeps what its Source answered.
type Cache struct {
	src Source
	log *slog.Logger
	now func() time.Time

	mu         sync.Mutex
	entries    map[key]entry
	generation uint64 // counts the times everything was forgotten
	hearing    bool   // the notifications are heard: entries may be kept
}

type key struct {
	hash  [sha256.Size]byte // not the secret itself
	orgID int64
}

type entry struct {
	p     store.Principal
	until time.Time
}

// New returns a cache of src that keeps nothing until Run listens.
func New(src Source, log *slog.Logger) *Cache {
	return &Cache{src: src, log: log, now: time.Now, entries: map[key]entry{}}
}

// Kept returns who secret speaks for in orgID when the cache keeps it,
// without asking the Source: a caller that bounds the Source's answer by
// a deadline need not set one for a token it finds here.
func (c *Cache) Kept(secret string, orgID int64) (store.Principal, bool) {
	e, ok, _, _ := c.lookup(key{sha256.Sum256([]byte(secret)), orgID}, c.now())
	return e.p, ok
}

// lookup returns k's entry, whether it is kept and still young at now,
// and the generation and hearing it was read under.
func (c *Cache) lookup(k key, now time.Time) (e entry, ok bool, generation uint64, hearing bool) {
	c.mu.Lock()
	e, ok = c.entries[k]
	generation, hearing = c.generation, c.hearing
	c.mu.Unlock()
	return e, ok && now.Before(e.until), generation, hearing
}

// Authenticate returns who secret speaks for in orgID, as the Source
// answers, from what it answered lately when it may. It returns the
// Source's errors, which are not kept.
func (c *Cache) Authenticate(ctx context.Context, secret string, orgID int64) (store.Principal, error) {
	k := key{sha256.Sum256([]byte(secret)), orgID}
	now := c.now()
	e, ok, generation, hearing := c.lookup(k, now)
	if ok {
		return e.p, nil
	}
	p, life, err := c.src.AuthenticateExpiring(ctx, secret, orgID)
	if err != nil || !hearing {
		return p, err
	}
	until := now.Add(min(MaxAge, life))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation != generation || !c.hearing {
		return p, nil // a change was notified meanwhile: p may predate it
	}
	if len(c.entries) >= MaxEntries {
		clear(c.entries)
	}
	c.entries[k] = entry{p, until}
	return p, nil
}

// Forget forgets everything kept, and anything being read meanwhile.
func (c *Cache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget()
}

func (c *Cache) forget() {
	clear(c.entries)
	c.generation++
}

// Hearing tells whether the notifications are heard, so that entries are
// kept.
func (c *Cache) Hearing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hearing
}

// hear sets whether the notifications are heard, forgetting everything
// either way: what was kept while they were not may be stale.
func (c *Cache) hear(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget()
	c.hearing = on
}

// Run listens to the notifications of changes with l until ctx is done,
// keeping entries only while it hears them; when the connection fails it
// listens again after retry.
func (c *Cache) Run(ctx context.Context, l Listener, retry time.Duration) {
	for {
		err := l.Listen(ctx, store.AuthChannel, func() { c.hear(true) }, c.Forget)
		c.hear(false)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("tokens are authenticated by the database at every request until the notifications of changes are heard again", "err", err, "retry", retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}
