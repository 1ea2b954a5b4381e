package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)

	created, err := owner.CreateTokenWithResponse(ctx, client.TokenCreate{Name: "datalogger", ExpiresInDays: ptr(30)})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create token: %v %s", err, created.Body)
	}
	secret := created.JSON201.Token
	if !strings.HasPrefix(secret, "rdg_") || len(secret) != 47 {
		t.Errorf("token %q is not rdg_ and 43 characters", secret)
	}
	if !strings.HasPrefix(secret, created.JSON201.Prefix) {
		t.Errorf("prefix %q does not start the secret", created.JSON201.Prefix)
	}
	if d := time.Until(at(t, *created.JSON201.ExpiresAt)); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("expires in %v, want 30 days", d)
	}

	t.Run("OnlyTheHashIsStored", func(t *testing.T) {
		sum := sha256.Sum256([]byte(secret))
		var hashed, plain int
		err := e.pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE secret_hash = $1),
       count(*) FILTER (WHERE position($2 IN concat_ws(',', name, prefix, encode(secret_hash, 'escape'))) > 0)
FROM api_tokens`, sum[:], secret).Scan(&hashed, &plain)
		if err != nil {
			t.Fatal(err)
		}
		if hashed != 1 || plain != 0 {
			t.Errorf("%d rows hold the SHA-256 and %d the secret; want 1 and 0", hashed, plain)
		}
	})

	logger := e.client(secret)
	me, err := logger.GetMeWithResponse(ctx)
	if err != nil || me.StatusCode() != 200 || me.JSON200.User.Id != tn.userIDs[store.Owner] {
		t.Fatalf("GET /me with the new token: %v %s", err, me.Body)
	}
	if me.JSON200.TokenId != created.JSON201.Id {
		t.Errorf("/me says token %d, want the one making the request, %d", me.JSON200.TokenId, created.JSON201.Id)
	}

	t.Run("ListShowsNoSecret", func(t *testing.T) {
		// A page of one, then the next: the new token first, then the
		// fixture's, and no cursor after it.
		var ids []int64
		params := &client.ListTokensParams{Limit: ptr(1)}
		for range 3 {
			res, err := owner.ListTokensWithResponse(ctx, params)
			if err != nil || res.StatusCode() != 200 {
				t.Fatalf("list tokens: %v %s", err, res.Body)
			}
			if bytes.Contains(res.Body, []byte(secret)) {
				t.Error("the token list shows a secret")
			}
			for _, tok := range res.JSON200.Items {
				ids = append(ids, tok.Id)
			}
			if params.Cursor = res.JSON200.NextCursor; params.Cursor == nil {
				break
			}
		}
		if len(ids) != 2 || ids[0] != created.JSON201.Id {
			t.Errorf("token ids %v, want the new one (%d) first and the fixture's", ids, created.JSON201.Id)
		}
	})

	t.Run("LastUsedIsBatched", func(t *testing.T) {
		var lastUsed *time.Time
		query := `SELECT last_used_at FROM api_tokens WHERE id = $1`
		if err := e.pool.QueryRow(ctx, query, created.JSON201.Id).Scan(&lastUsed); err != nil {
			t.Fatal(err)
		}
		if lastUsed != nil {
			t.Errorf("last_used_at = %v before a flush; a request must not write it", lastUsed)
		}
		if err := e.tokens.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.pool.QueryRow(ctx, query, created.JSON201.Id).Scan(&lastUsed); err != nil {
			t.Fatal(err)
		}
		if lastUsed == nil || time.Since(*lastUsed) > time.Minute {
			t.Errorf("last_used_at = %v after a flush, want about now", lastUsed)
		}
	})

	t.Run("RevocationTakesEffectAtOnce", func(t *testing.T) {
		revoke, err := owner.RevokeTokenWithResponse(ctx, created.JSON201.Id)
		if err != nil || revoke.StatusCode() != 204 {
			t.Fatalf("revoke: %v %s", err, revoke.Body)
		}
		res, err := logger.GetMeWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := wantError(t, res.StatusCode(), res.Body, 401, "unauthorized")
		if !strings.Contains(got.Message, "revoked") {
			t.Errorf("message %q should say the token is revoked", got.Message)
		}
		if again, _ := owner.RevokeTokenWithResponse(ctx, created.JSON201.Id); again.StatusCode() != 204 {
			t.Errorf("revoking twice: %d, want 204", again.StatusCode())
		}
	})

	t.Run("ExpiryTakesEffectAtOnce", func(t *testing.T) {
		tok, secret, err := e.db.CreateToken(ctx, tn.userIDs[store.Viewer], "short", ptr(time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		c := e.client(secret)
		if res, _ := c.GetMeWithResponse(ctx); res.StatusCode() != 200 {
			t.Fatalf("before expiry: %d", res.StatusCode())
		}
		if _, err := e.pool.Exec(ctx, `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, tok.ID); err != nil {
			t.Fatal(err)
		}
		res, _ := c.GetMeWithResponse(ctx)
		got := wantError(t, res.StatusCode(), res.Body, 401, "unauthorized")
		if !strings.Contains(got.Message, "expired") {
			t.Errorf("message %q should say the token has expired", got.Message)
		}
	})

	t.Run("AnotherUsersToken", func(t *testing.T) {
		viewerTokens, _, err := e.db.ListTokens(ctx, tn.userIDs[store.Viewer], 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := owner.RevokeTokenWithResponse(ctx, viewerTokens[0].ID)
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})
}

func TestTokensNeverLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	lookalike := "rdg_" + strings.Repeat("Z", 43)
	for _, header := range []string{"Bearer " + tn.tokens[store.Owner], "Bearer " + lookalike, "Bearer garbage-token-value", "Basic dXNlcjpwYXNz"} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/org/%d/projects", e.url, tn.orgID), nil)
		req.Header.Set("Authorization", header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		secret := strings.TrimPrefix(strings.TrimPrefix(header, "Bearer "), "Basic ")
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("the response to %q shows the token: %s", header, body)
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatalf("no access log captured; the check below would prove nothing:\n%s", logs)
	}
	for _, secret := range []string{tn.tokens[store.Owner], lookalike, "garbage-token-value", "dXNlcjpwYXNz"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs contain the token %s…", secret[:8])
		}
	}
}
