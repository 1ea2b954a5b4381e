package authcache

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// source answers with p and life, counting the calls; during, if set,
// runs during each call, as a change notified meanwhile would.
type source struct {
	p      store.Principal
	life   time.Duration
	err    error
	calls  int
	during func()
}

func (s *source) AuthenticateExpiring(context.Context, string, int64) (store.Principal, time.Duration, error) {
	s.calls++
	if s.during != nil {
		s.during()
	}
	return s.p, s.life, s.err
}

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newCache(src Source) (*Cache, *clock) {
	c := New(src, slog.New(slog.DiscardHandler))
	clk := &clock{time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	c.now = clk.now
	return c, clk
}

// TestAuthenticate: what the source answered is kept while the
// notifications are heard, for MaxAge at most and never past the token's
// expiry, and forgotten by Forget, by a change notified during the read
// that answered it, and by the notifications' loss; errors are not kept.
func TestAuthenticate(t *testing.T) {
	const secret = "rdg_secret"
	tests := []struct {
		name      string
		life      time.Duration
		err       error
		deaf      bool                 // the notifications are not heard
		between   func(*Cache, *clock) // between the two calls
		during    func(*Cache)         // during the first read
		wantCalls int                  // of the source, for two calls
	}{
		{name: "Kept", life: store.NeverExpires, wantCalls: 1},
		{name: "NotHeard", life: store.NeverExpires, deaf: true, wantCalls: 2},
		{name: "Forgotten", life: store.NeverExpires, between: func(c *Cache, _ *clock) { c.Forget() }, wantCalls: 2},
		{name: "HearingLost", life: store.NeverExpires, between: func(c *Cache, _ *clock) { c.hear(false) }, wantCalls: 2},
		{name: "HeardAgain", life: store.NeverExpires, between: func(c *Cache, _ *clock) { c.hear(false); c.hear(true) }, wantCalls: 2},
		{name: "ChangedDuringTheRead", life: store.NeverExpires, during: (*Cache).Forget, wantCalls: 2},
		{name: "WithinMaxAge", life: store.NeverExpires, between: func(_ *Cache, c *clock) { c.t = c.t.Add(MaxAge - time.Millisecond) }, wantCalls: 1},
		{name: "MaxAge", life: store.NeverExpires, between: func(_ *Cache, c *clock) { c.t = c.t.Add(MaxAge) }, wantCalls: 2},
		{name: "Expired", life: time.Second, between: func(_ *Cache, c *clock) { c.t = c.t.Add(time.Second) }, wantCalls: 2},
		{name: "Error", err: apperr.Errorf(apperr.Unauthorized, "the token is not valid"), wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{p: store.Principal{UserID: 7, Role: store.Editor}, life: tt.life, err: tt.err}
			c, clk := newCache(src)
			if !tt.deaf {
				c.hear(true)
			}
			if tt.during != nil {
				src.during = func() { tt.during(c); src.during = nil }
			}
			for i := range 2 {
				p, err := c.Authenticate(t.Context(), secret, 1)
				if !errors.Is(err, tt.err) || err == nil && (p.UserID != src.p.UserID || p.Role != src.p.Role) {
					t.Fatalf("call %d: Authenticate = %+v, %v; want %+v, %v", i, p, err, src.p, tt.err)
				}
				if i == 0 && tt.between != nil {
					tt.between(c, clk)
				}
			}
			if src.calls != tt.wantCalls {
				t.Errorf("the source answered %d calls, want %d", src.calls, tt.wantCalls)
			}
		})
	}
	t.Run("ByOrganization", func(t *testing.T) {
		src := &source{life: store.NeverExpires}
		c, _ := newCache(src)
		c.hear(true)
		for _, org := range []int64{1, 2, 1, 2, 0} {
			if _, err := c.Authenticate(t.Context(), secret, org); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := src.calls, 3; got != want {
			t.Errorf("the source answered %d calls for organizations 1, 2, 1, 2 and none; want %d", got, want)
		}
	})
}

// TestRun: on the database, a token's principal is kept once the
// notifications are heard, and a revocation, a role changed and a
// membership removed, made by another writer than this cache's user,
// reach it.
func TestRun(t *testing.T) {
	db := store.New(storetest.NewPool(t))
	ctx := t.Context()
	c := New(db, slog.New(slog.DiscardHandler))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx, db, 10*time.Millisecond) }()
	t.Cleanup(func() { stop(); <-done })
	waitFor(t, "the notifications heard", c.Hearing)

	org, err := db.CreateOrg(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	user, err := db.EnsureUser(ctx, "ada@example.com", "ada")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetMembership(ctx, org.ID, user.ID, store.Admin); err != nil {
		t.Fatal(err)
	}
	token, secret, err := db.CreateToken(ctx, user.ID, "ci", nil)
	if err != nil {
		t.Fatal(err)
	}
	role := func() store.Role {
		p, err := c.Authenticate(ctx, secret, org.ID)
		if err != nil {
			return "refused"
		}
		return p.Role
	}
	if got := role(); got != store.Admin {
		t.Fatalf("role %q, want admin", got)
	}
	if err := db.SetMembership(ctx, org.ID, user.ID, store.Viewer); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the demotion seen", func() bool { return role() == store.Viewer })
	if err := db.RemoveMember(ctx, org.ID, user.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removal seen", func() bool { return role() == "" })
	if err := db.RevokeToken(ctx, user.ID, token.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revocation seen", func() bool { return role() == "refused" })
}

// waitFor waits until ok, for a few seconds at most.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKept: Kept answers what Authenticate would answer from the cache,
// and nothing where Authenticate would ask the source.
func TestKept(t *testing.T) {
	const secret = "rdg_secret"
	src := &source{p: store.Principal{UserID: 7, Role: store.Editor}, life: store.NeverExpires}
	c, clk := newCache(src)
	c.hear(true)
	if _, ok := c.Kept(secret, 1); ok {
		t.Fatal("Kept before any Authenticate: ok, want nothing kept")
	}
	if _, err := c.Authenticate(t.Context(), secret, 1); err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Kept(secret, 1); !ok || p.UserID != 7 || p.Role != store.Editor {
		t.Errorf("Kept after Authenticate = %+v, %t; want %+v, true", p, ok, src.p)
	}
	for _, tt := range []struct {
		name   string
		secret string
		orgID  int64
		before func()
	}{
		{name: "OtherOrganization", secret: secret, orgID: 2},
		{name: "OtherSecret", secret: "rdg_other", orgID: 1},
		{name: "MaxAge", secret: secret, orgID: 1, before: func() { clk.t = clk.t.Add(MaxAge) }},
		{name: "Forgotten", secret: secret, orgID: 1, before: c.Forget},
	} {
		if tt.before != nil {
			tt.before()
		}
		if p, ok := c.Kept(tt.secret, tt.orgID); ok {
			t.Errorf("%s: Kept = %+v, true; want nothing kept", tt.name, p)
		}
	}
	if src.calls != 1 {
		t.Errorf("the source answered %d calls, want 1: Kept never asks it", src.calls)
	}
}
