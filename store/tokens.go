package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"math/big"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Token is an API token without its secret.
type Token struct {
	ID         int64      `db:"id"`
	UserID     int64      `db:"user_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	ExpiresAt  *time.Time `db:"expires_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	TokenScope
}

// TokenScope narrows what a token may do. The zero scope is the whole of
// its user's rights. OrgID limits the token to one organization, ProjectID
// to one of its projects, SensorIDs to some of that project's sensors; Role
// is a ceiling on the user's role there. A Device token may only post
// readings (its ceiling is editor). Each field needs the one before it.
type TokenScope struct {
	OrgID     int64   `db:"scope_org_id"`
	ProjectID int64   `db:"scope_project_id"`
	SensorIDs []int64 `db:"scope_sensor_ids"`
	Role      Role    `db:"scope_role"`
	Device    bool    `db:"device"`
}

// Scoped tells whether the scope narrows anything.
func (s TokenScope) Scoped() bool { return s.OrgID != 0 }

// A token is "rdg_" and 32 random bytes in base62, always 43 characters.
const (
	tokenScheme    = "rdg_"
	tokenBodyLen   = 43
	tokenPrefixLen = len(tokenScheme) + 6
)

var tokenPattern = regexp.MustCompile(`^rdg_[0-9A-Za-z]{43}$`)

// WellFormedToken tells whether s has the shape of a token, so that garbage
// is refused without a database round trip.
func WellFormedToken(s string) bool { return tokenPattern.MatchString(s) }

func newTokenSecret() (secret, prefix string) {
	secret = newSecret(tokenScheme)
	return secret, secret[:tokenPrefixLen]
}

// newSecret is scheme and 32 random bytes in 43 base62 characters.
func newSecret(scheme string) string {
	var random [32]byte
	rand.Read(random[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
	body := new(big.Int).SetBytes(random[:]).Text(62)
	return scheme + strings.Repeat("0", tokenBodyLen-len(body)) + body
}

func tokenHash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

const tokenColumns = `id, user_id, name, prefix, created_at, last_used_at, expires_at, revoked_at,
coalesce(scope_org_id, 0) AS scope_org_id, coalesce(scope_project_id, 0) AS scope_project_id,
scope_sensor_ids, coalesce(scope_role::text, '') AS scope_role, device`

// ListTokens returns up to limit tokens of the user, newest first, with ids
// below before (0 for the newest), and whether more follow.
func (db *DB) ListTokens(ctx context.Context, userID, before int64, limit int) ([]Token, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+tokenColumns+` FROM api_tokens
WHERE user_id = $1 AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, userID, before, limit+1)
	return collectPage[Token]("list tokens", rows, limit)
}

// CreateToken issues a token for userID and returns it with its secret,
// which is not stored and cannot be shown again. expiresAt may be nil. It
// returns Invalid for an unknown user or a name that is empty or longer than
// 100 characters.
func (db *DB) CreateToken(ctx context.Context, userID int64, name string, expiresAt *time.Time) (Token, string, error) {
	return db.CreateScopedToken(ctx, userID, name, expiresAt, TokenScope{})
}

const scopeMemberSQL = `
SELECT m.role::text,
       EXISTS (SELECT 1 FROM projects WHERE id = $3 AND org_id = $2),
       (SELECT array_agg(x) FROM unnest($4::bigint[]) x
        WHERE NOT EXISTS (SELECT 1 FROM sensors WHERE id = x AND project_id = $3))
FROM memberships m WHERE m.user_id = $1 AND m.org_id = $2
FOR SHARE OF m`

// CreateScopedToken is CreateToken for a token narrowed to scope (see
// TokenScope). A device scope gets the editor ceiling. Besides CreateToken's
// errors it returns NotFound when userID is not a member of the scope's
// organization or the project or a sensor is not there, Forbidden for a
// ceiling above the user's role, and Invalid for a scope field without the
// one it needs, and Conflict when the user has Limits.Tokens live tokens.
// It keeps, of the user's revoked and expired tokens, the newest
// Limits.Tokens, and deletes the others.
func (db *DB) CreateScopedToken(ctx context.Context, userID int64, name string, expiresAt *time.Time, scope TokenScope) (Token, string, error) {
	if scope.Device {
		if scope.Role != "" && scope.Role != Editor {
			return Token{}, "", apperr.Errorf(apperr.Invalid, "a device token's role is editor; leave role out")
		}
		scope.Role = Editor
	}
	switch {
	case !scope.Scoped() && (scope.ProjectID != 0 || len(scope.SensorIDs) > 0 || scope.Role != ""):
		return Token{}, "", apperr.Errorf(apperr.Invalid, "a token's scope needs its org_id")
	case scope.ProjectID == 0 && (len(scope.SensorIDs) > 0 || scope.Device):
		return Token{}, "", apperr.Errorf(apperr.Invalid, "sensor_ids and device tokens need a project_id")
	case scope.Role != "" && !scope.Role.Valid():
		return Token{}, "", apperr.Errorf(apperr.Invalid, "unknown role %q", scope.Role)
	}
	secret, prefix := newTokenSecret()
	var token Token
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if scope.Scoped() {
			if err := checkScope(ctx, tx, userID, scope); err != nil {
				return err
			}
		}
		if err := makeRoom(ctx, tx, db.limits, tokensCap, userID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO api_tokens (user_id, name, secret_hash, prefix, expires_at,
                        scope_org_id, scope_project_id, scope_sensor_ids, scope_role, device)
VALUES ($1, $2, $3, $4, $5, nullif($6, 0), nullif($7, 0), $8, nullif($9, '')::member_role, $10)
RETURNING `+tokenColumns, userID, name, tokenHash(secret), prefix, expiresAt,
			scope.OrgID, scope.ProjectID, nilIfEmpty(scope.SensorIDs), string(scope.Role), scope.Device)
		var err error
		if token, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Token]); err != nil {
			return err
		}
		return auditUser(ctx, tx, userID, "create", tokenChange{token.ID, userID, token.Name, token.Prefix})
	})
	if err != nil {
		return Token{}, "", dbError("create token", err)
	}
	return token, secret, nil
}

// checkScope refuses a scope that reaches beyond what userID may do now.
// The membership is locked so that a demotion cannot slip in between.
func checkScope(ctx context.Context, tx pgx.Tx, userID int64, scope TokenScope) error {
	var (
		role          Role
		projectExists bool
		missing       []int64
	)
	err := tx.QueryRow(ctx, scopeMemberSQL, userID, scope.OrgID, scope.ProjectID, nilIfEmpty(scope.SensorIDs)).
		Scan(&role, &projectExists, &missing)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return apperr.Errorf(apperr.NotFound, "organization not found")
	case err != nil:
		return err
	case scope.ProjectID != 0 && !projectExists:
		return apperr.Errorf(apperr.NotFound, "project not found")
	case len(missing) > 0:
		return apperr.Errorf(apperr.NotFound, "sensor %d not found in project %d", missing[0], scope.ProjectID)
	case scope.Role != "" && !role.AtLeast(scope.Role):
		return apperr.Errorf(apperr.Forbidden, "your role in organization %d is %s; a token of yours cannot be %s", scope.OrgID, role, scope.Role)
	}
	return nil
}

func nilIfEmpty(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// ReplaceToken issues a token named name for userID in place of every
// token of that user with that name, so that a token re-issued at every
// start (make run's demo token) does not pile up. It returns the token with
// its secret; Invalid as CreateToken does.
func (db *DB) ReplaceToken(ctx context.Context, userID int64, name string) (Token, string, error) {
	var (
		token  Token
		secret string
	)
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM api_tokens WHERE user_id = $1 AND name = $2`, userID, name); err != nil {
			return err
		}
		var prefix string
		secret, prefix = newTokenSecret()
		rows, _ := tx.Query(ctx, `
INSERT INTO api_tokens (user_id, name, secret_hash, prefix) VALUES ($1, $2, $3, $4)
RETURNING `+tokenColumns, userID, name, tokenHash(secret), prefix)
		var err error
		token, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Token])
		return err
	})
	if err != nil {
		return Token{}, "", dbError("replace token", err)
	}
	return token, secret, nil
}

// RevokeToken revokes the token tokenID of userID (any user's when userID is
// 0, for the admin CLI). Revoking a revoked token changes nothing. It
// returns NotFound.
func (db *DB) RevokeToken(ctx context.Context, userID, tokenID int64) error {
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var t tokenChange
		err := tx.QueryRow(ctx, `
UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 AND ($2 = 0 OR user_id = $2)
RETURNING id, user_id, name, prefix`, tokenID, userID).Scan(&t.ID, &t.UserID, &t.Name, &t.Prefix)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Errorf(apperr.NotFound, "token not found")
		}
		if err != nil {
			return err
		}
		return auditUser(ctx, tx, t.UserID, "revoke", t)
	})
	return dbError("revoke token", err)
}

// tokenChange is a token as the audit trail records it: never its secret.
type tokenChange struct {
	ID     int64  `json:"id"`
	UserID int64  `json:"user_id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
}

// auditUser records a change of a user's token in the trail of every
// organization the user is a member of: each owner sees what reaches it.
func auditUser(ctx context.Context, tx pgx.Tx, userID int64, action string, t tokenChange) error {
	_, after, err := Change{After: t}.json()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
INSERT INTO audit_entries (org_id, kind, action, actor, after)
SELECT org_id, $2, $3, $4, $5 FROM memberships WHERE user_id = $1`, userID, AuditToken, action, ActorOf(ctx), after)
	return err
}
