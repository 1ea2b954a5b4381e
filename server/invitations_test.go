package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestInvitations walks an invitation's life through the generated client:
// an owner invites, the invitee (no token) accepts and is signed in with
// their first token, a code works once, and revoked, expired, unknown and
// malformed codes are refused with a clear 4xx; the new member accepts the
// next invitation signed in.
func TestInvitations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := t.Context()
	owner := e.owner(tn)
	anonymous := e.client("")

	invite := func(t *testing.T, email string, role client.Role) *client.InvitationCreated {
		t.Helper()
		res, err := owner.CreateInvitationWithResponse(ctx, tn.orgID, client.InvitationCreate{Email: openapi_types.Email(email), Role: role})
		if err != nil || res.StatusCode() != 201 {
			t.Fatalf("create invitation: %v %s", err, res.Body)
		}
		return res.JSON201
	}
	accept := func(code string) *client.AcceptInvitationResponse {
		t.Helper()
		res, err := anonymous.AcceptInvitationWithResponse(ctx, client.InvitationAccept{Code: code, Name: ptr("Grace")})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	inv := invite(t, "grace@example.com", client.Editor)
	if !strings.HasPrefix(inv.Code, "inv_") || inv.AcceptPath != "/console/accept?code="+inv.Code {
		t.Errorf("code %q, accept_path %q", inv.Code, inv.AcceptPath)
	}
	created, _ := time.Parse(time.RFC3339, string(inv.CreatedAt))
	expires, _ := time.Parse(time.RFC3339, string(inv.ExpiresAt))
	if got, want := expires.Sub(created).Round(time.Hour), 7*24*time.Hour; got != want {
		t.Errorf("expires after %v, want %v", got, want)
	}
	res := accept(inv.Code)
	if res.StatusCode() != 201 {
		t.Fatalf("accept: %d %s, want 201", res.StatusCode(), res.Body)
	}
	if got, want := res.JSON201.Membership, (client.Membership{OrgId: tn.orgID, OrgName: "Acme", Role: client.Editor}); got != want {
		t.Errorf("membership %+v, want %+v", got, want)
	}
	me, err := e.client(res.JSON201.Token.Token).GetMeWithResponse(ctx)
	if err != nil || me.StatusCode() != 200 {
		t.Fatalf("the first token: %v %s", err, me.Body)
	}
	if got, want := me.JSON200.User.Email, "grace@example.com"; got != want {
		t.Errorf("signed in as %q, want %q", got, want)
	}

	// A code works once, and an accepted invitation is not revoked.
	again := accept(inv.Code)
	wantError(t, again.StatusCode(), again.Body, 409, "conflict")
	revoke, err := owner.RevokeInvitationWithResponse(ctx, tn.orgID, inv.Id)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, revoke.StatusCode(), revoke.Body, 409, "conflict")

	// A revoked code is refused; revoking twice is a no-op.
	revoked := invite(t, "heidi@example.com", client.Viewer)
	for range 2 {
		res, err := owner.RevokeInvitationWithResponse(ctx, tn.orgID, revoked.Id)
		if err != nil || res.StatusCode() != 204 {
			t.Fatalf("revoke: %v %s", err, res.Body)
		}
	}
	refused := accept(revoked.Code)
	if got := wantError(t, refused.StatusCode(), refused.Body, 409, "conflict"); !strings.Contains(got.Message, "revoked") {
		t.Errorf("message %q, want it to say revoked", got.Message)
	}

	// An expired code is refused.
	_, expired, err := e.db.CreateInvitation(ctx, tn.orgID, tn.userIDs[store.Owner], "ivan@example.com", store.Viewer, time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	refused = accept(expired)
	if got := wantError(t, refused.StatusCode(), refused.Body, 409, "conflict"); !strings.Contains(got.Message, "expired") {
		t.Errorf("message %q, want it to say expired", got.Message)
	}
	unknown := accept("inv_" + strings.Repeat("A", 43))
	wantError(t, unknown.StatusCode(), unknown.Body, 404, "not_found")
	malformed := accept("inv_short")
	wantError(t, malformed.StatusCode(), malformed.Body, 400, "invalid")

	// An existing member accepts signed in, and keeps the higher of their
	// role and the invitation's.
	viewerInv := invite(t, "grace@example.com", client.Viewer)
	mine, err := e.client(res.JSON201.Token.Token).AcceptMyInvitationWithResponse(ctx, client.InvitationCode{Code: viewerInv.Code})
	if err != nil || mine.StatusCode() != 200 || mine.JSON200.Role != client.Editor {
		t.Errorf("accept as a member: %v %d %s, want 200 keeping editor", err, mine.StatusCode(), mine.Body)
	}

	list, err := owner.ListInvitationsWithResponse(ctx, tn.orgID, &client.ListInvitationsParams{Limit: ptr(2)})
	if err != nil || list.StatusCode() != 200 {
		t.Fatalf("list: %v %s", err, list.Body)
	}
	var states []client.InvitationState
	for p := list.JSON200; ; {
		for _, i := range p.Items {
			states = append(states, i.State)
		}
		if p.NextCursor == nil {
			break
		}
		next, err := owner.ListInvitationsWithResponse(ctx, tn.orgID, &client.ListInvitationsParams{Limit: ptr(2), Cursor: p.NextCursor})
		if err != nil || next.StatusCode() != 200 {
			t.Fatalf("list: %v %s", err, next.Body)
		}
		p = next.JSON200
	}
	want := []client.InvitationState{client.InvitationStateAccepted, client.InvitationStateExpired, client.InvitationStateRevoked, client.InvitationStateAccepted}
	if !slices.Equal(states, want) {
		t.Errorf("states newest first %v, want %v", states, want)
	}
}

// TestInvitationForAnExistingAccount: an invitation never hands over an
// account. Org A's owner invites the email of org B's owner; the code alone
// gets nothing (no token, no membership, the invitation still pending),
// another user's token gets nothing either, and B's owner, signed in with
// their own token, joins A without a new token.
func TestInvitationForAnExistingAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.newTenant("Alpha"), e.newTenant("Bravo")
	ctx := t.Context()
	victim := e.client(b.tokens[store.Owner])
	me, err := victim.GetMeWithResponse(ctx)
	if err != nil || me.StatusCode() != 200 {
		t.Fatalf("me: %v %s", err, me.Body)
	}
	created, err := e.owner(a).CreateInvitationWithResponse(ctx, a.orgID, client.InvitationCreate{Email: openapi_types.Email(me.JSON200.User.Email), Role: client.Owner})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create invitation: %v %s", err, created.Body)
	}
	code := created.JSON201.Code
	tokensOf := func() int {
		t.Helper()
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE user_id = $1`, me.JSON200.User.Id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tokens := tokensOf()
	unchanged := func(t *testing.T) {
		t.Helper()
		if got := tokensOf(); got != tokens {
			t.Errorf("the user has %d tokens, want %d: one was minted", got, tokens)
		}
		m, err := victim.GetMeWithResponse(ctx)
		if err != nil || m.StatusCode() != 200 || len(m.JSON200.Memberships) != 1 || m.JSON200.Memberships[0].OrgId != b.orgID {
			t.Errorf("the user's memberships: %v %s, want Bravo's only", err, m.Body)
		}
		list, err := e.owner(a).ListInvitationsWithResponse(ctx, a.orgID, nil)
		if err != nil || list.StatusCode() != 200 || len(list.JSON200.Items) != 1 || list.JSON200.Items[0].State != client.InvitationStatePending {
			t.Errorf("the invitation: %v %s, want it pending", err, list.Body)
		}
	}

	t.Run("TheCodeAlone", func(t *testing.T) {
		res, err := e.client("").AcceptInvitationWithResponse(ctx, client.InvitationAccept{Code: code, Name: ptr("Mallory")})
		if err != nil {
			t.Fatal(err)
		}
		if got := wantError(t, res.StatusCode(), res.Body, 409, "conflict"); !strings.Contains(got.Message, "signed in") {
			t.Errorf("message %q, want it to say how the user accepts", got.Message)
		}
		if strings.Contains(string(res.Body), "rdg_") {
			t.Errorf("the refusal carries a token: %s", res.Body)
		}
		unchanged(t)
	})
	t.Run("AnotherUsersToken", func(t *testing.T) {
		res, err := e.client(a.tokens[store.Viewer]).AcceptMyInvitationWithResponse(ctx, client.InvitationCode{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 403, "forbidden")
		unchanged(t)
	})
	t.Run("TheUsersScopedToken", func(t *testing.T) {
		_, scoped, err := e.db.CreateScopedToken(ctx, me.JSON200.User.Id, "scoped", nil, store.TokenScope{OrgID: b.orgID, Role: store.Owner})
		if err != nil {
			t.Fatal(err)
		}
		tokens++
		res, err := e.client(scoped).AcceptMyInvitationWithResponse(ctx, client.InvitationCode{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 403, "forbidden")
		unchanged(t)
	})
	t.Run("TheUserSignedIn", func(t *testing.T) {
		res, err := victim.AcceptMyInvitationWithResponse(ctx, client.InvitationCode{Code: code})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("accept signed in: %v %s", err, res.Body)
		}
		if got, want := *res.JSON200, (client.Membership{OrgId: a.orgID, OrgName: "Alpha", Role: client.Owner}); got != want {
			t.Errorf("membership %+v, want %+v", got, want)
		}
		if got := tokensOf(); got != tokens {
			t.Errorf("the user has %d tokens, want %d: accepting signed in mints none", got, tokens)
		}
		projects, err := victim.ListProjectsWithResponse(ctx, a.orgID, nil)
		if err != nil || projects.StatusCode() != 200 {
			t.Errorf("the user's own token in Alpha: %v %s, want 200", err, projects.Body)
		}
		again, err := victim.AcceptMyInvitationWithResponse(ctx, client.InvitationCode{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, again.StatusCode(), again.Body, 409, "conflict")
	})
}
