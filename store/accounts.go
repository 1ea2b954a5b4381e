package store

import (
	"context"
	"errors"
	"math"
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

// LEAST skips NULLs, so a token without a ceiling keeps the member's role;
// the CASE keeps a non-member's role NULL whatever the ceiling.
const authenticateSQL = `
SELECT t.id, t.user_id, t.prefix,
       CASE WHEN m.role IS NOT NULL AND coalesce(t.scope_org_id = $2, true)
            THEN least(m.role, t.scope_role)::text END AS role,
       coalesce(t.scope_org_id, 0), coalesce(t.scope_project_id, 0), t.scope_sensor_ids,
       coalesce(t.scope_role::text, ''), t.device,
       t.revoked_at IS NOT NULL AS revoked,
       coalesce(t.expires_at <= now(), false) AS expired,
       extract(epoch FROM t.expires_at - now())::float8 AS life
FROM api_tokens t
LEFT JOIN memberships m ON m.user_id = t.user_id AND m.org_id = $2
WHERE t.secret_hash = $1`

// Authenticate returns who secret speaks for, with their effective role in
// orgID (0 for no organization) and the token's scope. It returns
// Unauthorized for an unknown, revoked or expired token.
func (db *DB) Authenticate(ctx context.Context, secret string, orgID int64) (Principal, error) {
	p, _, err := db.AuthenticateExpiring(ctx, secret, orgID)
	return p, err
}

// NeverExpires is the life of a token without an expiry.
const NeverExpires = time.Duration(math.MaxInt64)

// AuthenticateExpiring is Authenticate, and how long the token has before
// it expires, by the database's clock (NeverExpires without an expiry).
func (db *DB) AuthenticateExpiring(ctx context.Context, secret string, orgID int64) (Principal, time.Duration, error) {
	var (
		p                Principal
		role             *string
		revoked, expired bool
		life             *float64 // seconds
	)
	err := db.pool.QueryRow(ctx, authenticateSQL, tokenHash(secret), orgID).
		Scan(&p.TokenID, &p.UserID, &p.TokenPrefix, &role,
			&p.Scope.OrgID, &p.Scope.ProjectID, &p.Scope.SensorIDs, &p.Scope.Role, &p.Scope.Device,
			&revoked, &expired, &life)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Principal{}, 0, apperr.Errorf(apperr.Unauthorized, "the token is not valid")
	case err != nil:
		return Principal{}, 0, dbError("authenticate", err)
	case revoked:
		return Principal{}, 0, apperr.Errorf(apperr.Unauthorized, "the token %s… has been revoked", p.TokenPrefix)
	case expired:
		return Principal{}, 0, apperr.Errorf(apperr.Unauthorized, "the token %s… has expired", p.TokenPrefix)
	}
	if role != nil {
		p.Role = Role(*role)
	}
	if life == nil || *life >= NeverExpires.Seconds() {
		return p, NeverExpires, nil
	}
	return p, time.Duration(*life * float64(time.Second)), nil
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

// Empty tells whether the database holds no organization yet.
func (db *DB) Empty(ctx context.Context) (bool, error) {
	var exists bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM organizations)`).Scan(&exists)
	return !exists, dbError("empty", err)
}
