package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Invitation is an owner's offer of a role in an organization to an email
// address, without its code.
type Invitation struct {
	ID         int64      `db:"id" json:"id"`
	OrgID      int64      `db:"org_id" json:"org_id"`
	Email      string     `db:"email" json:"email"`
	Role       Role       `db:"role" json:"role"`
	State      string     `db:"state" json:"state"` // pending, accepted, revoked or expired
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt  time.Time  `db:"expires_at" json:"expires_at"`
	AcceptedAt *time.Time `db:"accepted_at" json:"accepted_at,omitempty"`
	RevokedAt  *time.Time `db:"revoked_at" json:"revoked_at,omitempty"`
}

// Accepted is what accepting an invitation gives: the member, where, and
// their first token with its secret.
type Accepted struct {
	User       User
	Membership Membership
	Token      Token
	Secret     string
}

// An invitation code is "inv_" and 32 random bytes in base62: 256 bits, so
// guessing one is hopeless however many tries a client makes.
const invitationScheme = "inv_"

const invitationColumns = `id, org_id, email, role, created_at, expires_at, accepted_at, revoked_at,
CASE WHEN accepted_at IS NOT NULL THEN 'accepted' WHEN revoked_at IS NOT NULL THEN 'revoked'
     WHEN expires_at <= now() THEN 'expired' ELSE 'pending' END AS state`

// CreateInvitation invites email to orgID with role until expiresAt, on
// behalf of invitedBy, and returns the invitation with its code, which is
// not stored and cannot be shown again. It keeps, of the organization's
// accepted, revoked and expired invitations, the newest Limits.Invitations,
// and deletes the others. It returns Invalid for an unknown organization or
// role, or an email the users table would refuse; and Conflict when the
// organization has its Limits.Invitations pending, or its Limits.Members
// with them.
func (db *DB) CreateInvitation(ctx context.Context, orgID, invitedBy int64, email string, role Role, expiresAt time.Time) (Invitation, string, error) {
	code := newSecret(invitationScheme)
	var inv Invitation
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		// The locks in this order only: AddMember takes the second alone.
		if err := makeRoom(ctx, tx, db.limits, invitationsCap, orgID); err != nil {
			return err
		}
		if err := makeRoom(ctx, tx, db.limits, membersCap, orgID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO invitations (org_id, email, role, code_hash, invited_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING `+invitationColumns, orgID, email, role, tokenHash(code), invitedBy, expiresAt)
		var err error
		if inv, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Invitation]); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, Kind: AuditInvitation, Action: "create", After: inv})
	})
	if err != nil {
		return Invitation{}, "", dbError("create invitation", err)
	}
	return inv, code, nil
}

// ListInvitations returns up to limit invitations of orgID, whatever their
// state, newest first, with ids below before (0 for the newest), and
// whether more follow.
func (db *DB) ListInvitations(ctx context.Context, orgID, before int64, limit int) ([]Invitation, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+invitationColumns+` FROM invitations
WHERE org_id = $1 AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, orgID, before, limit+1)
	return collectPage[Invitation]("list invitations", rows, limit)
}

// RevokeInvitation revokes invitation id of orgID, so that its code is
// refused. Revoking a revoked one changes nothing. It returns NotFound, and
// Conflict for an accepted invitation (remove the member instead).
func (db *DB) RevokeInvitation(ctx context.Context, orgID, id int64) error {
	var revoked bool
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
UPDATE invitations SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 AND org_id = $2 AND accepted_at IS NULL`, id, orgID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		revoked = true
		return audit(ctx, tx, Change{OrgID: orgID, Kind: AuditInvitation, Action: "revoke", Before: map[string]int64{"id": id}})
	})
	if err != nil || revoked {
		return dbError("revoke invitation", err)
	}
	// Only an accepted invitation of the organization is left to find.
	var accepted bool
	err = db.pool.QueryRow(ctx, `SELECT true FROM invitations WHERE id = $1 AND org_id = $2`, id, orgID).Scan(&accepted)
	if err == nil {
		return apperr.Errorf(apperr.Conflict, "invitation %d has been accepted; remove the member instead", id)
	}
	return notFound("revoke invitation", err, "invitation")
}

// AcceptInvitation exchanges an invitation's code for a new account: the
// invited email's user, created with name, their membership, and their
// first token, named "first token". A code works once. An invitation for an
// email that has an account already is accepted by that user, signed in
// (AcceptInvitationAs): whoever holds only the code is given nothing for
// an existing account. It returns NotFound for an unknown code, Conflict
// for one accepted, revoked or expired, or for an email that has an
// account, and Invalid for a name the users table refuses.
func (db *DB) AcceptInvitation(ctx context.Context, code, name string) (Accepted, error) {
	var out Accepted
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		inv, err := lockPendingInvitation(ctx, tx, code)
		if err != nil {
			return err
		}
		// The unique index on lower(email) settles a race with another
		// request creating the same user: the loser inserts nothing.
		rows, _ := tx.Query(ctx, `
INSERT INTO users (email, name) VALUES ($1, $2) ON CONFLICT DO NOTHING
RETURNING id, email, name, created_at`, inv.Email, name)
		out.User, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Errorf(apperr.Conflict,
				"this invitation is for an email that has an account: its user accepts it signed in, with POST /api/v1/me/invitations/accept")
		}
		if err != nil {
			return err
		}
		if out.Membership, err = acceptInvitation(ctx, tx, inv, out.User.ID); err != nil {
			return err
		}
		var prefix string
		out.Secret, prefix = newTokenSecret()
		rows, _ = tx.Query(ctx, `
INSERT INTO api_tokens (user_id, name, secret_hash, prefix) VALUES ($1, 'first token', $2, $3)
RETURNING `+tokenColumns, out.User.ID, tokenHash(out.Secret), prefix)
		if out.Token, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Token]); err != nil {
			return err
		}
		// After the membership, so that the organization's trail has it.
		return auditUser(WithActor(ctx, out.User.ID), tx, out.User.ID, "create",
			tokenChange{out.Token.ID, out.User.ID, out.Token.Name, out.Token.Prefix})
	})
	return out, dbError("accept invitation", err)
}

// AcceptInvitationAs accepts an invitation's code for userID, whose email
// it must be addressed to, and returns their membership; it mints no token.
// A user who is a member already keeps the higher of their role and the
// invitation's. It returns NotFound for an unknown code, Conflict for one
// accepted, revoked or expired, and Forbidden for an invitation addressed
// to another email.
func (db *DB) AcceptInvitationAs(ctx context.Context, code string, userID int64) (Membership, error) {
	var out Membership
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		inv, err := lockPendingInvitation(ctx, tx, code)
		if err != nil {
			return err
		}
		var addressee bool
		if err := tx.QueryRow(ctx, `SELECT lower(email) = lower($2) FROM users WHERE id = $1`, userID, inv.Email).Scan(&addressee); err != nil {
			return err
		}
		if !addressee {
			return apperr.Errorf(apperr.Forbidden, "this invitation is addressed to another email address; its addressee accepts it")
		}
		out, err = acceptInvitation(ctx, tx, inv, userID)
		return err
	})
	return out, dbError("accept invitation", err)
}

// lockPendingInvitation finds the invitation of code and locks it, so that a
// code works once. It returns NotFound for an unknown code, and Conflict for
// one accepted, revoked or expired.
func lockPendingInvitation(ctx context.Context, tx pgx.Tx, code string) (Invitation, error) {
	rows, _ := tx.Query(ctx, `SELECT `+invitationColumns+` FROM invitations WHERE code_hash = $1 FOR UPDATE`, tokenHash(code))
	inv, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Invitation])
	if errors.Is(err, pgx.ErrNoRows) {
		return Invitation{}, apperr.Errorf(apperr.NotFound, "invitation not found: check the code")
	}
	if err != nil {
		return Invitation{}, err
	}
	if inv.State != "pending" {
		return Invitation{}, apperr.Errorf(apperr.Conflict, "the invitation has been %s; ask the organization's owner for a new one", inv.State)
	}
	return inv, nil
}

// acceptInvitation makes userID a member as inv offers, keeping a higher
// role they have, and marks inv accepted by them.
func acceptInvitation(ctx context.Context, tx pgx.Tx, inv Invitation, userID int64) (Membership, error) {
	var m Membership
	err := tx.QueryRow(ctx, `
WITH m AS (
    INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
    ON CONFLICT (org_id, user_id) DO UPDATE SET role = greatest(memberships.role, EXCLUDED.role)
    RETURNING org_id, role)
SELECT m.org_id, o.name, m.role FROM m JOIN organizations o ON o.id = m.org_id`, inv.OrgID, userID, inv.Role).
		Scan(&m.OrgID, &m.OrgName, &m.Role)
	if err != nil {
		return Membership{}, err
	}
	if _, err = tx.Exec(ctx, `UPDATE invitations SET accepted_at = now(), accepted_by = $2 WHERE id = $1`, inv.ID, userID); err != nil {
		return m, err
	}
	return m, audit(WithActor(ctx, userID), tx, Change{OrgID: inv.OrgID, Kind: AuditInvitation, Action: "accept",
		After: map[string]any{"id": inv.ID, "user_id": userID, "role": m.Role}})
}
