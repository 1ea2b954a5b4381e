package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestInvitations tests the methods of invitations.go.
func TestInvitations(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"Accept":           testAcceptInvitation,
		"AcceptAs":         testAcceptInvitationAs,
		"RevokeInvitation": testRevokeInvitation,
		"ListInvitations":  testListInvitations,
	})
}

func invite(t *testing.T, db *store.DB, org store.Org, email string, role store.Role, ttl time.Duration) (store.Invitation, string) {
	t.Helper()
	inv, code, err := db.CreateInvitation(t.Context(), org.ID, newMember(t, db, org, "owner", store.Owner).ID, email, role, time.Now().Add(ttl))
	if err != nil {
		t.Fatal(err)
	}
	return inv, code
}

func testAcceptInvitation(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		org := newOrg(t, db)
		inv, code := invite(t, db, org, "Grace@Example.com", store.Editor, time.Hour)
		if inv.State != "pending" {
			t.Errorf("State=%q, want pending", inv.State)
		}
		a, err := db.AcceptInvitation(t.Context(), code, "Grace")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.Membership, (store.Membership{OrgID: org.ID, OrgName: org.Name, Role: store.Editor}); got != want {
			t.Errorf("Membership=%+v, want %+v", got, want)
		}
		p, err := db.Authenticate(t.Context(), a.Secret, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.UserID != a.User.ID || p.Role != store.Editor {
			t.Errorf("Authenticate = %+v, want user %d as editor", p, a.User.ID)
		}
		_, err = db.AcceptInvitation(t.Context(), code, "Grace")
		wantCode(t, err, apperr.Conflict)
	})
	t.Run("ErrConflict/ExistingAccount", func(t *testing.T) {
		org := newOrg(t, db)
		user := newUser(t, db, "ursula")
		inv, code := invite(t, db, org, user.Email, store.Owner, time.Hour)
		_, err := db.AcceptInvitation(t.Context(), code, "")
		wantCode(t, err, apperr.Conflict)
		if tokens, _, err := db.ListTokens(t.Context(), user.ID, 0, 10); err != nil || len(tokens) != 0 {
			t.Errorf("ListTokens = %+v, %v; want none minted", tokens, err)
		}
		_, memberships, err := db.Me(t.Context(), user.ID)
		if err != nil || len(memberships) != 0 {
			t.Errorf("Me = %+v, %v; want no membership", memberships, err)
		}
		invs, _, err := db.ListInvitations(t.Context(), org.ID, 0, 10)
		if err != nil || len(invs) != 1 || invs[0].ID != inv.ID || invs[0].State != "pending" {
			t.Errorf("ListInvitations = %+v, %v; want it pending", invs, err)
		}
	})
	t.Run("ErrConflict/Expired", func(t *testing.T) {
		_, code := invite(t, db, newOrg(t, db), "late@example.com", store.Viewer, -time.Second)
		_, err := db.AcceptInvitation(t.Context(), code, "")
		wantCode(t, err, apperr.Conflict)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := db.AcceptInvitation(t.Context(), "inv_nothing", "")
		wantCode(t, err, apperr.NotFound)
	})
}

func testAcceptInvitationAs(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		org := newOrg(t, db)
		user := newUser(t, db, "vera")
		_, code := invite(t, db, org, strings.ToUpper(user.Email), store.Editor, time.Hour)
		m, err := db.AcceptInvitationAs(t.Context(), code, user.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := (store.Membership{OrgID: org.ID, OrgName: org.Name, Role: store.Editor}); m != want {
			t.Errorf("Membership=%+v, want %+v", m, want)
		}
		_, err = db.AcceptInvitationAs(t.Context(), code, user.ID)
		wantCode(t, err, apperr.Conflict)
	})
	t.Run("MemberKeepsTheHigherRole", func(t *testing.T) {
		org := newOrg(t, db)
		admin := newMember(t, db, org, "ann", store.Admin)
		_, code := invite(t, db, org, admin.Email, store.Viewer, time.Hour)
		m, err := db.AcceptInvitationAs(t.Context(), code, admin.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Role != store.Admin {
			t.Errorf("Role=%q, want admin kept", m.Role)
		}
	})
	t.Run("ErrForbidden/AnotherEmail", func(t *testing.T) {
		org := newOrg(t, db)
		_, code := invite(t, db, org, "wanda@example.com", store.Viewer, time.Hour)
		other := newUser(t, db, "xavier")
		_, err := db.AcceptInvitationAs(t.Context(), code, other.ID)
		wantCode(t, err, apperr.Forbidden)
		if _, err := db.AcceptInvitation(t.Context(), code, "Wanda"); err != nil {
			t.Errorf("the addressee after the refusal: %v", err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := db.AcceptInvitationAs(t.Context(), "inv_nothing", newUser(t, db, "yves").ID)
		wantCode(t, err, apperr.NotFound)
	})
}

func testRevokeInvitation(t *testing.T, db *store.DB) {
	org := newOrg(t, db)
	inv, code := invite(t, db, org, "heidi@example.com", store.Viewer, time.Hour)
	t.Run("ErrNotFound/OtherOrg", func(t *testing.T) {
		wantCode(t, db.RevokeInvitation(t.Context(), newOrg(t, db).ID, inv.ID), apperr.NotFound)
	})
	for range 2 {
		if err := db.RevokeInvitation(t.Context(), org.ID, inv.ID); err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.AcceptInvitation(t.Context(), code, "")
	wantCode(t, err, apperr.Conflict)
	t.Run("ErrConflict/Accepted", func(t *testing.T) {
		accepted, code := invite(t, db, org, "ivan@example.com", store.Viewer, time.Hour)
		if _, err := db.AcceptInvitation(t.Context(), code, ""); err != nil {
			t.Fatal(err)
		}
		wantCode(t, db.RevokeInvitation(t.Context(), org.ID, accepted.ID), apperr.Conflict)
	})
}

func testListInvitations(t *testing.T, db *store.DB) {
	org := newOrg(t, db)
	var want []int64
	for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		inv, _ := invite(t, db, org, email, store.Viewer, time.Hour)
		want = append([]int64{inv.ID}, want...) // newest first
	}
	invite(t, db, newOrg(t, db), "other@example.com", store.Viewer, time.Hour)
	checkPages(t, want, func(before int64, limit int) ([]int64, bool, error) {
		invs, more, err := db.ListInvitations(t.Context(), org.ID, before, limit)
		return ids(invs, func(i store.Invitation) int64 { return i.ID }), more, err
	})
}
