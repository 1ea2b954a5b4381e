package store_test

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestInvitations tests the methods of invitations.go.
func TestInvitations(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"Accept":           testAcceptInvitation,
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
	t.Run("MemberKeepsTheHigherRole", func(t *testing.T) {
		org := newOrg(t, db)
		admin := newMember(t, db, org, "ann", store.Admin)
		_, code := invite(t, db, org, admin.Email, store.Viewer, time.Hour)
		a, err := db.AcceptInvitation(t.Context(), code, "")
		if err != nil {
			t.Fatal(err)
		}
		if a.User.ID != admin.ID || a.Membership.Role != store.Admin {
			t.Errorf("Accepted = %+v, want user %d keeping admin", a, admin.ID)
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
