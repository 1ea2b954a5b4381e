package store_test

import (
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

func TestTokenScope_Scoped(t *testing.T) {
	for _, tt := range []struct {
		scope store.TokenScope
		want  bool
	}{
		{store.TokenScope{}, false},
		{store.TokenScope{OrgID: 1}, true},
		{store.TokenScope{OrgID: 1, ProjectID: 2, SensorIDs: []int64{3}}, true},
	} {
		if got := tt.scope.Scoped(); got != tt.want {
			t.Errorf("%+v.Scoped() = %v, want %v", tt.scope, got, tt.want)
		}
	}
}
