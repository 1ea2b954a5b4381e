package store_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestTokens tests the methods of tokens.go and authentication.
func TestTokens(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"CreateToken":  testCreateToken,
		"ListTokens":   testListTokens,
		"ReplaceToken": testReplaceToken,
		"RevokeToken":  testRevokeToken,
		"Authenticate": testAuthenticate,
		"ScopedToken":  testScopedToken,
		"TouchTokens":  testTouchTokens,
	})
}

func testCreateToken(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		expires := time.Now().Add(time.Hour).Truncate(time.Microsecond)
		token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", &expires)
		if err != nil {
			t.Fatal(err)
		}
		if !store.WellFormedToken(secret) {
			t.Fatalf("secret %q is not well formed", secret)
		}
		if got, want := token.Prefix, secret[:len(token.Prefix)]; got != want || len(got) < 8 {
			t.Fatalf("Prefix=%q, want the secret's start %q", got, want)
		}
		if got, want := token.UserID, user.ID; got != want {
			t.Fatalf("UserID=%d, want %d", got, want)
		}
		if got, want := token.Name, "ci"; got != want {
			t.Fatalf("Name=%q, want %q", got, want)
		}
		if token.ExpiresAt == nil || !token.ExpiresAt.Equal(expires) {
			t.Fatalf("ExpiresAt=%v, want %v", token.ExpiresAt, expires)
		}
		if token.LastUsedAt != nil || token.RevokedAt != nil {
			t.Fatalf("new token %+v was used or revoked", token)
		}
		p, err := db.Authenticate(t.Context(), secret, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.TokenID, token.ID; got != want {
			t.Fatalf("Authenticate: TokenID=%d, want %d", got, want)
		}
	})
	t.Run("Unique", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, first, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, second, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		if first == second {
			t.Fatalf("two tokens share the secret %q", first)
		}
	})
	t.Run("ErrInvalid/Name", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, _, err := db.CreateToken(t.Context(), user.ID, "", nil)
		wantCode(t, err, apperr.Invalid)
	})
	t.Run("ErrInvalid/UnknownUser", func(t *testing.T) {
		t.Parallel()
		_, _, err := db.CreateToken(t.Context(), unknownID, "ci", nil)
		wantCode(t, err, apperr.Invalid)
	})
}

func testListTokens(t *testing.T, db *store.DB) {
	ada, grace := newUser(t, db, "ada"), newUser(t, db, "grace")
	var want []int64
	for _, name := range []string{"first", "second", "third"} {
		token, _, err := db.CreateToken(t.Context(), ada.ID, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]int64{token.ID}, want...) // newest first
	}
	if _, _, err := db.CreateToken(t.Context(), grace.ID, "first", nil); err != nil {
		t.Fatal(err)
	}
	tokens, _, err := db.ListTokens(t.Context(), ada.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(tokens, tokenID); !slices.Equal(got, want) {
		t.Fatalf("ListTokens ids=%v, want %v", got, want)
	}
	checkPages(t, want, func(before int64, limit int) ([]int64, bool, error) {
		tokens, more, err := db.ListTokens(t.Context(), ada.ID, before, limit)
		return ids(tokens, tokenID), more, err
	})
}

func testReplaceToken(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		ada, grace := newUser(t, db, "ada"), newUser(t, db, "grace")
		_, replaced, err := db.CreateToken(t.Context(), ada.ID, "demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := db.CreateToken(t.Context(), ada.ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		gracesDemo, _, err := db.CreateToken(t.Context(), grace.ID, "demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		token, secret, err := db.ReplaceToken(t.Context(), ada.ID, "demo")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := token.Name, "demo"; got != want {
			t.Fatalf("Name=%q, want %q", got, want)
		}
		if _, err := db.Authenticate(t.Context(), secret, 0); err != nil {
			t.Fatalf("Authenticate with the new secret: %v", err)
		}
		_, err = db.Authenticate(t.Context(), replaced, 0)
		wantCode(t, err, apperr.Unauthorized)

		tokens, _, err := db.ListTokens(t.Context(), ada.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(tokens, tokenID), []int64{token.ID, other.ID}; !slices.Equal(got, want) {
			t.Fatalf("ada's tokens=%v, want %v", got, want)
		}
		tokens, _, err = db.ListTokens(t.Context(), grace.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(tokens, tokenID), []int64{gracesDemo.ID}; !slices.Equal(got, want) {
			t.Fatalf("grace's tokens=%v, want %v", got, want)
		}
	})
	t.Run("None", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		if _, _, err := db.ReplaceToken(t.Context(), user.ID, "demo"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrInvalid/Name", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, _, err := db.ReplaceToken(t.Context(), user.ID, "")
		wantCode(t, err, apperr.Invalid)
	})
	t.Run("ErrInvalid/UnknownUser", func(t *testing.T) {
		t.Parallel()
		_, _, err := db.ReplaceToken(t.Context(), unknownID, "demo")
		wantCode(t, err, apperr.Invalid)
	})
}

func testRevokeToken(t *testing.T, db *store.DB) {
	// newToken creates a token for a new user and returns it with its
	// secret.
	newToken := func(t *testing.T) (store.Token, string) {
		t.Helper()
		token, secret, err := db.CreateToken(t.Context(), newUser(t, db, "ada").ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		return token, secret
	}
	// revokedAt returns when the token was revoked, or nil.
	revokedAt := func(t *testing.T, token store.Token) *time.Time {
		t.Helper()
		tokens, _, err := db.ListTokens(t.Context(), token.UserID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return tokens[0].RevokedAt
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		token, secret := newToken(t)
		if err := db.RevokeToken(t.Context(), token.UserID, token.ID); err != nil {
			t.Fatal(err)
		}
		first := revokedAt(t, token)
		if first == nil {
			t.Fatal("RevokedAt=nil after RevokeToken")
		}
		_, err := db.Authenticate(t.Context(), secret, 0)
		wantCode(t, err, apperr.Unauthorized)

		if err := db.RevokeToken(t.Context(), token.UserID, token.ID); err != nil {
			t.Fatalf("revoke again: %v", err)
		}
		if again := revokedAt(t, token); again == nil || !again.Equal(*first) {
			t.Fatalf("RevokedAt=%v after revoking again, want %v", again, *first)
		}
	})
	t.Run("AnyUser", func(t *testing.T) {
		t.Parallel()
		token, _ := newToken(t)
		if err := db.RevokeToken(t.Context(), 0, token.ID); err != nil {
			t.Fatal(err)
		}
		if revokedAt(t, token) == nil {
			t.Fatal("RevokedAt=nil after RevokeToken")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		wantCode(t, db.RevokeToken(t.Context(), 0, unknownID), apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherUsers", func(t *testing.T) {
		t.Parallel()
		token, _ := newToken(t)
		other := newUser(t, db, "grace")
		wantCode(t, db.RevokeToken(t.Context(), other.ID, token.ID), apperr.NotFound)
		if revokedAt(t, token) != nil {
			t.Fatal("another user revoked the token")
		}
	})
}

func testAuthenticate(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "ada", store.Editor)
		token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", ptr(time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := db.Authenticate(t.Context(), secret, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := store.Principal{UserID: user.ID, TokenID: token.ID, TokenPrefix: token.Prefix, Role: store.Editor}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("Authenticate = %+v, want %+v", p, want)
		}
	})
	// A token of a user who is not a member of the organization asked about
	// (or of none, 0) authenticates, without a role there.
	for _, tt := range []struct {
		name     string
		otherOrg bool
	}{{"NotAMember", true}, {"NoOrg", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			org := newOrg(t, db)
			user := newMember(t, db, org, "ada", store.Owner)
			_, secret, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
			if err != nil {
				t.Fatal(err)
			}
			var orgID int64
			if tt.otherOrg {
				orgID = newOrg(t, db).ID
			}
			p, err := db.Authenticate(t.Context(), secret, orgID)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.UserID, user.ID; got != want {
				t.Fatalf("UserID=%d, want %d", got, want)
			}
			if got, want := p.Role, store.Role(""); got != want {
				t.Fatalf("Role=%q, want %q", got, want)
			}
		})
	}
	t.Run("ErrUnauthorized/Unknown", func(t *testing.T) {
		t.Parallel()
		_, err := db.Authenticate(t.Context(), "rdg_"+strings.Repeat("0", 43), 0)
		wantCode(t, err, apperr.Unauthorized)
	})
	t.Run("ErrUnauthorized/Revoked", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeToken(t.Context(), user.ID, token.ID); err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, 0)
		wantCode(t, err, apperr.Unauthorized)
	})
	t.Run("ErrUnauthorized/Expired", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, secret, err := db.CreateToken(t.Context(), user.ID, "ci", ptr(time.Now().Add(-time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, 0)
		wantCode(t, err, apperr.Unauthorized)
	})
}

func testTouchTokens(t *testing.T, db *store.DB) {
	user := newUser(t, db, "ada")
	touched, _, err := db.CreateToken(t.Context(), user.ID, "touched", nil)
	if err != nil {
		t.Fatal(err)
	}
	untouched, _, err := db.CreateToken(t.Context(), user.ID, "untouched", nil)
	if err != nil {
		t.Fatal(err)
	}
	// lastUsed returns when each token was last used, by id.
	lastUsed := func() map[int64]*time.Time {
		t.Helper()
		tokens, _, err := db.ListTokens(t.Context(), user.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[int64]*time.Time)
		for _, token := range tokens {
			m[token.ID] = token.LastUsedAt
		}
		return m
	}
	later := time.Now().Truncate(time.Microsecond)
	if err := db.TouchTokens(t.Context(), []int64{touched.ID, unknownID}, later); err != nil {
		t.Fatal(err)
	}
	// A batch that arrives late does not move the time back.
	if err := db.TouchTokens(t.Context(), []int64{touched.ID}, later.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchTokens(t.Context(), nil, later); err != nil {
		t.Fatal(err)
	}
	used := lastUsed()
	if got := used[touched.ID]; got == nil || !got.Equal(later) {
		t.Fatalf("LastUsedAt=%v, want %v", got, later)
	}
	if got := used[untouched.ID]; got != nil {
		t.Fatalf("LastUsedAt of the untouched token=%v, want nil", got)
	}
}

func tokenID(token store.Token) int64 { return token.ID }

func testScopedToken(t *testing.T, db *store.DB) {
	org := newOrg(t, db)
	editor := newMember(t, db, org, "ed", store.Editor)
	project := newProject(t, db, org)
	sensor := newSensor(t, db, project, nil)
	elsewhere := newSensor(t, db, newProject(t, db, org), nil)
	// The effective role is the lower of the member's and the ceiling's,
	// and follows the member's role.
	t.Run("CeilingFollowsTheMember", func(t *testing.T) {
		user := newMember(t, db, org, "ann", store.Admin)
		_, secret, err := db.CreateScopedToken(t.Context(), user.ID, "ci", nil, store.TokenScope{OrgID: org.ID, Role: store.Editor})
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct{ member, want store.Role }{{store.Admin, store.Editor}, {store.Viewer, store.Viewer}} {
			if err := db.SetMembership(t.Context(), org.ID, user.ID, step.member); err != nil {
				t.Fatal(err)
			}
			p, err := db.Authenticate(t.Context(), secret, org.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Role; got != step.want {
				t.Errorf("member %s, ceiling editor: Role=%q, want %q", step.member, got, step.want)
			}
		}
		// Another organization the user is a member of is out of scope.
		other := newOrg(t, db)
		if err := db.SetMembership(t.Context(), other.ID, user.ID, store.Owner); err != nil {
			t.Fatal(err)
		}
		p, err := db.Authenticate(t.Context(), secret, other.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Role; got != "" {
			t.Errorf("another organization: Role=%q, want none", got)
		}
	})
	t.Run("Device", func(t *testing.T) {
		scope := store.TokenScope{OrgID: org.ID, ProjectID: project.ID, SensorIDs: []int64{sensor.SensorID}, Device: true}
		token, secret, err := db.CreateScopedToken(t.Context(), editor.ID, "logger", nil, scope)
		if err != nil {
			t.Fatal(err)
		}
		scope.Role = store.Editor
		if !reflect.DeepEqual(token.TokenScope, scope) {
			t.Errorf("TokenScope=%+v, want %+v", token.TokenScope, scope)
		}
		p, err := db.Authenticate(t.Context(), secret, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Scope, scope) || p.Role != store.Editor {
			t.Errorf("Authenticate = %+v, want scope %+v and role editor", p, scope)
		}
		tokens, _, err := db.ListTokens(t.Context(), editor.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tokens[0].TokenScope, scope) {
			t.Errorf("ListTokens: TokenScope=%+v, want %+v", tokens[0].TokenScope, scope)
		}
	})
	for _, tt := range []struct {
		name  string
		scope store.TokenScope
		want  apperr.Code
	}{
		{"ErrForbidden/AboveTheMember", store.TokenScope{OrgID: org.ID, Role: store.Admin}, apperr.Forbidden},
		{"ErrNotFound/NotAMember", store.TokenScope{OrgID: newOrg(t, db).ID}, apperr.NotFound},
		{"ErrNotFound/UnknownOrg", store.TokenScope{OrgID: unknownID}, apperr.NotFound},
		{"ErrNotFound/ProjectOfAnotherOrg", store.TokenScope{OrgID: org.ID, ProjectID: newProject(t, db, newOrg(t, db)).ID}, apperr.NotFound},
		{"ErrNotFound/SensorOfAnotherProject", store.TokenScope{OrgID: org.ID, ProjectID: project.ID, SensorIDs: []int64{elsewhere.SensorID}}, apperr.NotFound},
		{"ErrInvalid/ProjectWithoutOrg", store.TokenScope{ProjectID: project.ID}, apperr.Invalid},
		{"ErrInvalid/SensorsWithoutProject", store.TokenScope{OrgID: org.ID, SensorIDs: []int64{sensor.SensorID}}, apperr.Invalid},
		{"ErrInvalid/DeviceWithoutProject", store.TokenScope{OrgID: org.ID, Device: true}, apperr.Invalid},
		{"ErrInvalid/DeviceAsViewer", store.TokenScope{OrgID: org.ID, ProjectID: project.ID, Device: true, Role: store.Viewer}, apperr.Invalid},
		{"ErrInvalid/UnknownRole", store.TokenScope{OrgID: org.ID, Role: "root"}, apperr.Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := db.CreateScopedToken(t.Context(), editor.ID, "ci", nil, tt.scope)
			wantCode(t, err, tt.want)
		})
	}
	// A token limited to a project goes with it.
	t.Run("ProjectDeleted", func(t *testing.T) {
		doomed := newProject(t, db, org)
		_, secret, err := db.CreateScopedToken(t.Context(), editor.ID, "ci", nil, store.TokenScope{OrgID: org.ID, ProjectID: doomed.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteProject(t.Context(), org.ID, doomed.ID); err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, org.ID)
		wantCode(t, err, apperr.Unauthorized)
	})
}

func TestWellFormedToken(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"rdg_" + strings.Repeat("aZ9", 14) + "x", true},
		{"rdg_" + strings.Repeat("a", 42), false},
		{"rdg_" + strings.Repeat("a", 44), false},
		{"rdx_" + strings.Repeat("a", 43), false},
		{"rdg_" + strings.Repeat("a", 42) + "-", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := store.WellFormedToken(tt.s); got != tt.want {
			t.Errorf("WellFormedToken(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
