package store_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestMembers tests the methods of members.go.
func TestMembers(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"ListMembers":   testListMembers,
		"AddMember":     testAddMember,
		"UpdateMember":  testUpdateMember,
		"RemoveMember":  testRemoveMember,
		"LastOwnerRace": testLastOwnerRace,
	})
}

func testListMembers(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org, other := newOrg(t, db), newOrg(t, db)
		ada := newMember(t, db, org, "ada", store.Owner)
		grace := newMember(t, db, org, "grace", store.Viewer)
		newMember(t, db, other, "linus", store.Owner)
		members, _, err := db.ListMembers(t.Context(), org.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(members), 2; got != want {
			t.Fatalf("len(members)=%d, want %d", got, want)
		}
		for i, want := range []struct {
			user store.User
			role store.Role
		}{{ada, store.Owner}, {grace, store.Viewer}} {
			m := members[i]
			if m.UserID != want.user.ID || m.Email != want.user.Email || m.Name != want.user.Name || m.Role != want.role || m.CreatedAt.IsZero() {
				t.Errorf("members[%d]=%+v, want %s as %s", i, m, want.user.Email, want.role)
			}
		}
	})
	t.Run("Pages", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		var want []int64
		for _, who := range []string{"ada", "grace", "linus"} {
			want = append(want, newMember(t, db, org, who, store.Viewer).ID)
		}
		checkPages(t, want, func(after int64, limit int) ([]int64, bool, error) {
			members, more, err := db.ListMembers(t.Context(), org.ID, after, limit)
			return ids(members, func(m store.Member) int64 { return m.UserID }), more, err
		})
	})
	t.Run("UnknownOrg", func(t *testing.T) {
		t.Parallel()
		members, _, err := db.ListMembers(t.Context(), unknownID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(members), 0; got != want {
			t.Fatalf("len(members)=%d, want %d", got, want)
		}
	})
}

func testAddMember(t *testing.T, db *store.DB) {
	t.Run("NewUser", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		member, err := db.AddMember(t.Context(), org.ID, "new@add.example.com", "New", store.Editor)
		if err != nil {
			t.Fatal(err)
		}
		user, err := db.UserByEmail(t.Context(), "new@add.example.com")
		if err != nil {
			t.Fatal(err)
		}
		want := store.Member{UserID: user.ID, Email: user.Email, Name: "New", Role: store.Editor, CreatedAt: member.CreatedAt}
		if member != want || member.CreatedAt.IsZero() {
			t.Fatalf("AddMember = %+v, want %+v", member, want)
		}
	})
	t.Run("ExistingUser", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newUser(t, db, "ada")
		member, err := db.AddMember(t.Context(), org.ID, strings.ToUpper(user.Email), "another name", store.Viewer)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := member.UserID, user.ID; got != want {
			t.Fatalf("UserID=%d, want %d", got, want)
		}
		if got, want := member.Name, user.Name; got != want {
			t.Fatalf("Name=%q, want the user's %q", got, want)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "ada", store.Viewer)
		_, err := db.AddMember(t.Context(), org.ID, user.Email, "", store.Admin)
		wantCode(t, err, apperr.Conflict)
		if got, want := roleOf(t, db, org, user), store.Viewer; got != want {
			t.Fatalf("role=%q after a refused AddMember, want %q", got, want)
		}
	})
	// A refused member leaves no user behind.
	for name, tt := range map[string]struct {
		orgID func(store.Org) int64
		role  store.Role
	}{
		"ErrInvalid/Role":       {orgOf, "root"},
		"ErrInvalid/UnknownOrg": {unknownOrg, store.Viewer},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			email := strings.ReplaceAll(t.Name(), "/", ".") + "@example.com"
			_, err := db.AddMember(t.Context(), tt.orgID(newOrg(t, db)), email, "", tt.role)
			wantCode(t, err, apperr.Invalid)
			_, err = db.UserByEmail(t.Context(), email)
			wantCode(t, err, apperr.NotFound)
		})
	}
}

func testUpdateMember(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Viewer)
		member, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Admin)
		if err != nil {
			t.Fatal(err)
		}
		if member.UserID != user.ID || member.Email != user.Email || member.Role != store.Admin {
			t.Fatalf("UpdateMember = %+v, want %s as %s", member, user.Email, store.Admin)
		}
		if got, want := roleOf(t, db, org, user), store.Admin; got != want {
			t.Fatalf("role=%q, want %q", got, want)
		}
	})
	t.Run("OwnerOfTwo", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Owner)
		if _, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Editor); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("LastOwnerStaysOwner", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "owner", store.Owner)
		if _, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Owner); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrConflict/LastOwner", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "owner", store.Owner)
		newMember(t, db, org, "admin", store.Admin)
		_, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Admin)
		wantCode(t, err, apperr.Conflict)
		if got, want := roleOf(t, db, org, user), store.Owner; got != want {
			t.Fatalf("role=%q, want %q", got, want)
		}
	})
	t.Run("ErrInvalid/Role", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Viewer)
		_, err := db.UpdateMember(t.Context(), org.ID, user.ID, "root")
		wantCode(t, err, apperr.Invalid)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newUser(t, db, "ada")
		_, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Viewer)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		org, other := newOrg(t, db), newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Viewer)
		_, err := db.UpdateMember(t.Context(), other.ID, user.ID, store.Admin)
		wantCode(t, err, apperr.NotFound)
		if got, want := roleOf(t, db, org, user), store.Viewer; got != want {
			t.Fatalf("role=%q, want %q", got, want)
		}
	})
}

func testRemoveMember(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Owner)
		if err := db.RemoveMember(t.Context(), org.ID, user.ID); err != nil {
			t.Fatal(err)
		}
		if got, want := roleOf(t, db, org, user), store.Role(""); got != want {
			t.Fatalf("role=%q after RemoveMember, want none", got)
		}
	})
	t.Run("ErrConflict/LastOwner", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "owner", store.Owner)
		wantCode(t, db.RemoveMember(t.Context(), org.ID, user.ID), apperr.Conflict)
		if got, want := roleOf(t, db, org, user), store.Owner; got != want {
			t.Fatalf("role=%q, want %q", got, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newUser(t, db, "ada")
		wantCode(t, db.RemoveMember(t.Context(), org.ID, user.ID), apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		org, other := newOrg(t, db), newOrg(t, db)
		newMember(t, db, org, "owner", store.Owner)
		user := newMember(t, db, org, "ada", store.Viewer)
		wantCode(t, db.RemoveMember(t.Context(), other.ID, user.ID), apperr.NotFound)
		if got, want := roleOf(t, db, org, user), store.Viewer; got != want {
			t.Fatalf("role=%q, want %q", got, want)
		}
	})
}

// testLastOwnerRace has two owners, the only two, demote or remove each
// other at once, again and again: each time one change goes through and
// the other is refused with Conflict, never an internal error (such as a
// deadlock between their locks), and the organization keeps an owner.
func testLastOwnerRace(t *testing.T, db *store.DB) {
	org := newOrg(t, db)
	a := newMember(t, db, org, "a", store.Owner)
	b := newMember(t, db, org, "b", store.Owner)
	changes := map[string]func(user store.User) error{
		"UpdateMember": func(user store.User) error {
			_, err := db.UpdateMember(t.Context(), org.ID, user.ID, store.Admin)
			return err
		},
		"RemoveMember": func(user store.User) error { return db.RemoveMember(t.Context(), org.ID, user.ID) },
	}
	for name, change := range changes {
		for range 10 {
			for _, user := range []store.User{a, b} {
				if err := db.SetMembership(t.Context(), org.ID, user.ID, store.Owner); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, user := range []store.User{a, b} {
				wg.Go(func() { errs[i] = change(user) })
			}
			wg.Wait()
			codes := map[apperr.Code]int{}
			for _, err := range errs {
				if err != nil {
					codes[apperr.CodeOf(err)]++
				}
			}
			if got, want := codes[apperr.Conflict], 1; got != want || len(codes) != 1 {
				t.Fatalf("%s of both owners at once: errors %v, want one conflict", name, errs)
			}
			if ra, rb := roleOf(t, db, org, a), roleOf(t, db, org, b); (ra == store.Owner) == (rb == store.Owner) {
				t.Fatalf("%s of both owners at once: roles %q and %q, want one owner", name, ra, rb)
			}
		}
	}
}

// roleOf returns user's role in org, empty when they are not a member.
func roleOf(t *testing.T, db *store.DB, org store.Org, user store.User) store.Role {
	t.Helper()
	_, memberships, err := db.Me(t.Context(), user.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range memberships {
		if m.OrgID == org.ID {
			return m.Role
		}
	}
	return ""
}
