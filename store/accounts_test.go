package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestAccounts tests the methods of accounts.go: organizations, users and
// memberships.
func TestAccounts(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"CreateOrg":     testCreateOrg,
		"EnsureUser":    testEnsureUser,
		"UserByEmail":   testUserByEmail,
		"SetMembership": testSetMembership,
		"Me":            testMe,
	})
}

func TestRole(t *testing.T) {
	tests := []struct {
		role, need store.Role
		want       bool
	}{
		{store.Owner, store.Viewer, true},
		{store.Admin, store.Admin, true},
		{store.Editor, store.Admin, false},
		{store.Viewer, store.Editor, false},
		{"", store.Viewer, false},
		{"root", store.Viewer, false},
	}
	for _, tt := range tests {
		if got := tt.role.AtLeast(tt.need); got != tt.want {
			t.Errorf("Role(%q).AtLeast(%q) = %v, want %v", tt.role, tt.need, got, tt.want)
		}
	}
	for _, r := range []store.Role{store.Viewer, store.Editor, store.Admin, store.Owner} {
		if !r.Valid() {
			t.Errorf("Role(%q).Valid() = false, want true", r)
		}
	}
	for _, r := range []store.Role{"", "root", "Owner"} {
		if r.Valid() {
			t.Errorf("Role(%q).Valid() = true, want false", r)
		}
	}
}

func testCreateOrg(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org, err := db.CreateOrg(t.Context(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		if org.ID == 0 || org.CreatedAt.IsZero() {
			t.Fatalf("CreateOrg = %+v, want an id and a creation time", org)
		}
		if got, want := org.Name, "acme"; got != want {
			t.Fatalf("Name=%q, want %q", got, want)
		}
	})
	for name, orgName := range map[string]string{"ErrInvalid/Empty": "", "ErrInvalid/TooLong": strings.Repeat("a", 201)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := db.CreateOrg(t.Context(), orgName)
			wantCode(t, err, apperr.Invalid)
		})
	}
}

func TestDB_Empty(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	empty, err := db.Empty(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !empty {
		t.Fatal("Empty = false on a new database, want true")
	}
	newOrg(t, db)
	if empty, err = db.Empty(t.Context()); err != nil {
		t.Fatal(err)
	}
	if empty {
		t.Fatal("Empty = true with an organization, want false")
	}
}

func testEnsureUser(t *testing.T, db *store.DB) {
	t.Run("Creates", func(t *testing.T) {
		t.Parallel()
		user, err := db.EnsureUser(t.Context(), "Ada@Example.com", "Ada")
		if err != nil {
			t.Fatal(err)
		}
		if user.ID == 0 || user.CreatedAt.IsZero() {
			t.Fatalf("EnsureUser = %+v, want an id and a creation time", user)
		}
		if got, want := user.Email, "Ada@Example.com"; got != want {
			t.Fatalf("Email=%q, want %q", got, want)
		}
	})
	t.Run("Existing", func(t *testing.T) {
		t.Parallel()
		first, err := db.EnsureUser(t.Context(), "grace@example.com", "Grace")
		if err != nil {
			t.Fatal(err)
		}
		again, err := db.EnsureUser(t.Context(), "GRACE@example.com", "someone else")
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatalf("EnsureUser of an existing email = %+v, want %+v", again, first)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		_, err := db.EnsureUser(t.Context(), "a@", "")
		wantCode(t, err, apperr.Invalid)
	})
}

func testUserByEmail(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		got, err := db.UserByEmail(t.Context(), strings.ToUpper(user.Email))
		if err != nil {
			t.Fatal(err)
		}
		if got != user {
			t.Fatalf("UserByEmail = %+v, want %+v", got, user)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.UserByEmail(t.Context(), "nobody@example.com")
		wantCode(t, err, apperr.NotFound)
	})
}

func testSetMembership(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "ada", store.Viewer)
		if err := db.SetMembership(t.Context(), org.ID, user.ID, store.Admin); err != nil {
			t.Fatal(err)
		}
		_, memberships, err := db.Me(t.Context(), user.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := memberships, []store.Membership{{OrgID: org.ID, OrgName: org.Name, Role: store.Admin}}; !slices.Equal(got, want) {
			t.Fatalf("memberships=%+v, want %+v", got, want)
		}
	})
	t.Run("ErrInvalid/Role", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newUser(t, db, "ada")
		wantCode(t, db.SetMembership(t.Context(), org.ID, user.ID, "root"), apperr.Invalid)
	})
	t.Run("ErrInvalid/UnknownOrg", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		wantCode(t, db.SetMembership(t.Context(), unknownID, user.ID, store.Viewer), apperr.Invalid)
	})
	t.Run("ErrInvalid/UnknownUser", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		wantCode(t, db.SetMembership(t.Context(), org.ID, unknownID, store.Viewer), apperr.Invalid)
	})
}

func testMe(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		first, second := newOrg(t, db), newOrg(t, db)
		user := newMember(t, db, second, "ada", store.Editor)
		if err := db.SetMembership(t.Context(), first.ID, user.ID, store.Owner); err != nil {
			t.Fatal(err)
		}
		got, memberships, err := db.Me(t.Context(), user.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got != user {
			t.Fatalf("user=%+v, want %+v", got, user)
		}
		want := []store.Membership{
			{OrgID: first.ID, OrgName: first.Name, Role: store.Owner},
			{OrgID: second.ID, OrgName: second.Name, Role: store.Editor},
		}
		if !slices.Equal(memberships, want) {
			t.Fatalf("memberships=%+v, want %+v", memberships, want)
		}
	})
	t.Run("NoMemberships", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, memberships, err := db.Me(t.Context(), user.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(memberships), 0; got != want {
			t.Fatalf("len(memberships)=%d, want %d", got, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, _, err := db.Me(t.Context(), unknownID)
		wantCode(t, err, apperr.NotFound)
	})
}
