package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorreadings/readings/authcache"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

// TestKeptPrincipalsForgottenByWrites: with the tokens' principals kept
// between requests (authcache, as main wires it), a write through the API
// that changes what a token speaks for holds for the next request at once,
// before any notification from PostgreSQL: here none ever arrives.
func TestKeptPrincipalsForgottenByWrites(t *testing.T) {
	t.Parallel()
	var kept *authcache.Cache
	e := newEnvWith(t, defaultConfig(), faults{deps: func(d *server.Deps, db *store.DB) {
		kept = authcache.New(db, slog.New(slog.DiscardHandler))
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); kept.Run(ctx, deafListener{}, time.Second) }()
		t.Cleanup(func() { stop(); <-done })
		d.Authenticator = kept
	}})
	for !kept.Hearing() {
		time.Sleep(time.Millisecond)
	}
	tn := e.newTenant("Acme")
	ctx := t.Context()
	owner := e.owner(tn)
	get := func(role store.Role) int {
		t.Helper()
		res, _ := e.do(tn.tokens[role], http.MethodGet, readingsPath(tn), "", nil)
		return res.StatusCode
	}
	post := func(role store.Role) int {
		t.Helper()
		res, _ := e.do(tn.tokens[role], http.MethodPost, readingsPath(tn), "application/json",
			strings.NewReader(`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`))
		return res.StatusCode
	}
	for _, role := range []store.Role{store.Viewer, store.Editor, store.Admin} {
		if got := get(role); got != http.StatusOK {
			t.Fatalf("GET readings as %s: %d, want 200", role, got)
		}
	}
	if got := post(store.Editor); got != http.StatusOK {
		t.Fatalf("POST readings as editor: %d, want 200", got)
	}

	t.Run("Demoted", func(t *testing.T) {
		res, err := owner.UpdateMemberWithResponse(ctx, tn.orgID, tn.userIDs[store.Editor], client.MemberUpdate{Role: client.Viewer})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("demote the editor: %v %s", err, res.Body)
		}
		if got := post(store.Editor); got != http.StatusForbidden {
			t.Errorf("POST readings by the demoted editor: %d, want 403", got)
		}
	})
	t.Run("Removed", func(t *testing.T) {
		res, err := owner.RemoveMemberWithResponse(ctx, tn.orgID, tn.userIDs[store.Admin])
		if err != nil || res.StatusCode() >= 300 {
			t.Fatalf("remove the admin: %v %s", err, res.Body)
		}
		if got := get(store.Admin); got != http.StatusNotFound {
			t.Errorf("GET readings by the removed admin: %d, want 404", got)
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		viewer := e.client(tn.tokens[store.Viewer])
		me, err := viewer.GetMeWithResponse(ctx)
		if err != nil || me.JSON200 == nil {
			t.Fatalf("GET /me: %v %s", err, me.Body)
		}
		res, err := viewer.RevokeTokenWithResponse(ctx, me.JSON200.TokenId)
		if err != nil || res.StatusCode() >= 300 {
			t.Fatalf("revoke the viewer's token: %v %s", err, res.Body)
		}
		if got := get(store.Viewer); got != http.StatusUnauthorized {
			t.Errorf("GET readings with the revoked token: %d, want 401", got)
		}
	})
}

// deafListener listens and never hears a notification.
type deafListener struct{}

func (deafListener) Listen(ctx context.Context, _ string, listening, _ func()) error {
	listening()
	<-ctx.Done()
	return ctx.Err()
}

// keptAuthenticator answers every token from what it keeps, as authcache
// does for a token seen lately, and counts the calls that would reach the
// database.
type keptAuthenticator struct {
	db    *store.DB
	asked atomic.Int64
}

func (k *keptAuthenticator) Kept(secret string, orgID int64) (store.Principal, bool) {
	p, err := k.db.Authenticate(context.Background(), secret, orgID)
	return p, err == nil
}

func (k *keptAuthenticator) Authenticate(ctx context.Context, secret string, orgID int64) (store.Principal, error) {
	k.asked.Add(1)
	return k.db.Authenticate(ctx, secret, orgID)
}

func (k *keptAuthenticator) Forget() {}

// TestKeptPrincipalAnsweredAtOnce: a token whose principal the
// Authenticator keeps is answered from it, without a call that would set
// the database deadline for nothing; a token it does not keep is asked
// for as before.
func TestKeptPrincipalAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	var kept *keptAuthenticator
	e := newEnvWith(t, defaultConfig(), faults{deps: func(d *server.Deps, db *store.DB) {
		kept = &keptAuthenticator{db: db}
		d.Authenticator = kept
	}})
	tn := e.newTenant("Acme")
	latest := fmt.Sprintf("/api/v1/org/%d/proj/%d/latest", tn.orgID, tn.projectID)
	if res, _ := e.do(tn.tokens[store.Viewer], http.MethodGet, latest, "", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("GET latest as viewer: %d, want 200", res.StatusCode)
	}
	if got := kept.asked.Load(); got != 0 {
		t.Errorf("the Authenticator was asked %d times for a kept token, want 0", got)
	}
	if res, _ := e.do("rdg_"+strings.Repeat("0", 43), http.MethodGet, latest, "", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET latest with an unknown token: %d, want 401", res.StatusCode)
	}
}
