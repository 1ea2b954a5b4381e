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

// Role is a member's permission level. Each role includes the ones before it.
type Role string

// The roles, lowest first.
const (
	Viewer Role = "viewer"
	Editor Role = "editor"
	Admin  Role = "admin"
	Owner  Role = "owner"
)

var roleRank = map[Role]int{Viewer: 1, Editor: 2, Admin: 3, Owner: 4}

// Valid tells whether r is one of the roles.
func (r Role) Valid() bool { return roleRank[r] > 0 }

// AtLeast tells whether r includes need. The empty role includes nothing.
func (r Role) AtLeast(need Role) bool { return roleRank[r] > 0 && roleRank[r] >= roleRank[need] }

// Org is an organization.
type Org struct {
	ID        int64     `db:"id"`
	Name      string    `db:"name"`
	CreatedAt time.Time `db:"created_at"`
}

// User is a person or a machine that holds tokens.
type User struct {
	ID        int64     `db:"id"`
	Email     string    `db:"email"`
	Name      string    `db:"name"`
	CreatedAt time.Time `db:"created_at"`
}

// Membership is a user's role in an organization.
type Membership struct {
	OrgID   int64  `db:"org_id"`
	OrgName string `db:"org_name"`
	Role    Role   `db:"role"`
}

// Member is a user as a member of one organization.
type Member struct {
	UserID    int64     `db:"user_id"`
	Email     string    `db:"email"`
	Name      string    `db:"name"`
	Role      Role      `db:"role"`
	CreatedAt time.Time `db:"created_at"`
}

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

// Principal is who a request's token speaks for.
type Principal struct {
	UserID      int64
	TokenID     int64
	TokenPrefix string
	// Role is the effective role in the organization asked about: the lower
	// of the member's role and the token's ceiling; empty when the user is
	// not a member or the token is limited to another organization.
	Role  Role
	Scope TokenScope
}

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

// LEAST skips NULLs, so a token without a ceiling keeps the member's role;
// the CASE keeps a non-member's role NULL whatever the ceiling.
const authenticateSQL = `
SELECT t.id, t.user_id, t.prefix,
       CASE WHEN m.role IS NOT NULL AND coalesce(t.scope_org_id = $2, true)
            THEN least(m.role, t.scope_role)::text END AS role,
       coalesce(t.scope_org_id, 0), coalesce(t.scope_project_id, 0), t.scope_sensor_ids,
       coalesce(t.scope_role::text, ''), t.device,
       t.revoked_at IS NOT NULL AS revoked,
       coalesce(t.expires_at <= now(), false) AS expired
FROM api_tokens t
LEFT JOIN memberships m ON m.user_id = t.user_id AND m.org_id = $2
WHERE t.secret_hash = $1`

// Authenticate returns who secret speaks for, with their effective role in
// orgID (0 for no organization) and the token's scope. It returns
// Unauthorized for an unknown, revoked or expired token.
func (db *DB) Authenticate(ctx context.Context, secret string, orgID int64) (Principal, error) {
	var (
		p                Principal
		role             *string
		revoked, expired bool
	)
	err := db.pool.QueryRow(ctx, authenticateSQL, tokenHash(secret), orgID).
		Scan(&p.TokenID, &p.UserID, &p.TokenPrefix, &role,
			&p.Scope.OrgID, &p.Scope.ProjectID, &p.Scope.SensorIDs, &p.Scope.Role, &p.Scope.Device,
			&revoked, &expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "the token is not valid")
	case err != nil:
		return Principal{}, dbError("authenticate", err)
	case revoked:
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "the token %s… has been revoked", p.TokenPrefix)
	case expired:
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "the token %s… has expired", p.TokenPrefix)
	}
	if role != nil {
		p.Role = Role(*role)
	}
	return p, nil
}

const touchTokensSQL = `
UPDATE api_tokens SET last_used_at = $2
WHERE id = ANY($1) AND (last_used_at IS NULL OR last_used_at < $2)`

// TouchTokens records that the tokens were used at. The server calls it in
// batches, so that a request costs no write.
func (db *DB) TouchTokens(ctx context.Context, ids []int64, at time.Time) error {
	_, err := db.pool.Exec(ctx, touchTokensSQL, ids, at)
	return dbError("touch tokens", err)
}

// CreateOrg creates an organization. It returns Invalid for a name that is
// empty or longer than 200 characters.
func (db *DB) CreateOrg(ctx context.Context, name string) (Org, error) {
	rows, _ := db.pool.Query(ctx, `INSERT INTO organizations (name) VALUES ($1) RETURNING id, name, created_at`, name)
	org, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Org])
	return org, dbError("create organization", err)
}

const ensureUserSQL = `
WITH existing AS (SELECT id, email, name, created_at FROM users WHERE lower(email) = lower($1)),
inserted AS (
    INSERT INTO users (email, name) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM existing)
    ON CONFLICT DO NOTHING
    RETURNING id, email, name, created_at)
SELECT id, email, name, created_at FROM existing UNION ALL SELECT id, email, name, created_at FROM inserted`

// EnsureUser returns the user with email, creating them with name when there
// is none. Emails compare case-insensitively. It returns Invalid for an
// email or name the users table refuses (an email of 3 to 254 characters,
// a name of at most 200), and Conflict when another request is creating
// the same user still.
func (db *DB) EnsureUser(ctx context.Context, email, name string) (User, error) {
	return ensureUser(ctx, db.pool, email, name)
}

func ensureUser(ctx context.Context, q querier, email, name string) (User, error) {
	// Two requests adding the same new email race on the unique index; the
	// loser's insert does nothing and the retry finds the winner's row.
	for range 2 {
		rows, _ := q.Query(ctx, ensureUserSQL, email, name)
		user, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
		if !errors.Is(err, pgx.ErrNoRows) {
			return user, dbError("ensure user", err)
		}
	}
	return User{}, apperr.Errorf(apperr.Conflict, "user %q is being created by another request; retry", email)
}

// UserByEmail returns the user with email. It returns NotFound.
func (db *DB) UserByEmail(ctx context.Context, email string) (User, error) {
	rows, _ := db.pool.Query(ctx, `SELECT id, email, name, created_at FROM users WHERE lower(email) = lower($1)`, email)
	user, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	return user, notFound("user by email", err, "user")
}

// SetMembership makes userID a member of orgID with role, or changes their
// role. It does not guard the last owner; the admin CLI uses it. It returns
// Invalid for an unknown organization, user or role.
func (db *DB) SetMembership(ctx context.Context, orgID, userID int64, role Role) error {
	_, err := db.pool.Exec(ctx, `
INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`, orgID, userID, role)
	return dbError("set membership", err)
}

// Me returns the user and their memberships. It returns NotFound.
func (db *DB) Me(ctx context.Context, userID int64) (User, []Membership, error) {
	rows, _ := db.pool.Query(ctx, `SELECT id, email, name, created_at FROM users WHERE id = $1`, userID)
	user, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, nil, notFound("me", err, "user")
	}
	rows, _ = db.pool.Query(ctx, `
SELECT m.org_id, o.name AS org_name, m.role
FROM memberships m JOIN organizations o ON o.id = m.org_id
WHERE m.user_id = $1 ORDER BY m.org_id`, userID)
	memberships, err := pgx.CollectRows(rows, pgx.RowToStructByName[Membership])
	return user, memberships, dbError("memberships", err)
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
// one it needs.
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
		rows, _ := tx.Query(ctx, `
INSERT INTO api_tokens (user_id, name, secret_hash, prefix, expires_at,
                        scope_org_id, scope_project_id, scope_sensor_ids, scope_role, device)
VALUES ($1, $2, $3, $4, $5, nullif($6, 0), nullif($7, 0), $8, nullif($9, '')::member_role, $10)
RETURNING `+tokenColumns, userID, name, tokenHash(secret), prefix, expiresAt,
			scope.OrgID, scope.ProjectID, nilIfEmpty(scope.SensorIDs), string(scope.Role), scope.Device)
		var err error
		token, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Token])
		return err
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
	tag, err := db.pool.Exec(ctx, `
UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 AND ($2 = 0 OR user_id = $2)`, tokenID, userID)
	if err != nil {
		return dbError("revoke token", err)
	}
	if tag.RowsAffected() == 0 {
		return apperr.Errorf(apperr.NotFound, "token not found")
	}
	return nil
}

// Empty tells whether the database holds no organization yet.
func (db *DB) Empty(ctx context.Context) (bool, error) {
	var exists bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM organizations)`).Scan(&exists)
	return !exists, dbError("empty", err)
}
