package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

const memberColumns = `m.user_id, u.email, u.name, m.role, m.created_at`

// ListMembers returns up to limit members of the organization with user
// ids above after, in user id order, and whether more follow.
func (db *DB) ListMembers(ctx context.Context, orgID, after int64, limit int) ([]Member, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+memberColumns+` FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.org_id = $1 AND m.user_id > $2 ORDER BY m.user_id LIMIT $3`, orgID, after, limit+1)
	return collectPage[Member]("list members", rows, limit)
}

// AddMember makes the user with email a member of orgID, creating the user
// when there is none. It returns Conflict when they are a member already or
// the organization has its Limits.Members (pending invitations included),
// and Invalid for an unknown organization or role, or as EnsureUser does.
func (db *DB) AddMember(ctx context.Context, orgID int64, email, name string, role Role) (Member, error) {
	var member Member
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := makeRoom(ctx, tx, db.limits, membersCap, orgID); err != nil {
			return err
		}
		user, err := ensureUser(ctx, tx, email, name)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
WITH m AS (
    INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
    ON CONFLICT DO NOTHING
    RETURNING user_id, role, created_at)
SELECT `+memberColumns+` FROM m JOIN users u ON u.id = m.user_id`, orgID, user.ID, role)
		member, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Member])
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Errorf(apperr.Conflict, "%s is a member already; change their role instead", user.Email)
		}
		if err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, Kind: AuditMember, Action: "create", After: memberChange{member.UserID, member.Role}})
	})
	return member, dbError("add member", err)
}

// UpdateMember sets the role of member userID of orgID. It returns NotFound,
// Invalid for an unknown role, and Conflict when it would leave the
// organization without an owner.
func (db *DB) UpdateMember(ctx context.Context, orgID, userID int64, role Role) (Member, error) {
	var member Member
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := keepAnOwner(ctx, tx, orgID, userID, role != Owner); err != nil {
			return err
		}
		var before Role
		if err := tx.QueryRow(ctx, `SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2`, orgID, userID).Scan(&before); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
WITH m AS (
    UPDATE memberships SET role = $3 WHERE org_id = $1 AND user_id = $2
    RETURNING user_id, role, created_at)
SELECT `+memberColumns+` FROM m JOIN users u ON u.id = m.user_id`, orgID, userID, role)
		var err error
		if member, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Member]); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, Kind: AuditMember, Action: "update", Before: memberChange{userID, before}, After: memberChange{userID, member.Role}})
	})
	return member, notFound("update member", err, "member")
}

// RemoveMember removes member userID from orgID. It returns NotFound, and
// Conflict for the last owner.
func (db *DB) RemoveMember(ctx context.Context, orgID, userID int64) error {
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := keepAnOwner(ctx, tx, orgID, userID, true); err != nil {
			return err
		}
		var before Role
		err := tx.QueryRow(ctx, `DELETE FROM memberships WHERE org_id = $1 AND user_id = $2 RETURNING role`, orgID, userID).Scan(&before)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, Kind: AuditMember, Action: "delete", Before: memberChange{userID, before}})
	})
	return dbError("remove member", err)
}

// memberChange is a membership as the audit trail records it.
type memberChange struct {
	UserID int64 `json:"user_id"`
	Role   Role  `json:"role"`
}

// keepAnOwner refuses, when losing is true, to take the owner role from the
// org's last owner userID. The member and every owner are locked in one
// statement, in user id order: two owners who demote each other at once
// then take turns, rather than each hold one lock and wait for the other's
// (a deadlock), and the second sees the first's change and is refused.
func keepAnOwner(ctx context.Context, tx pgx.Tx, orgID, userID int64, losing bool) error {
	rows, _ := tx.Query(ctx, `
SELECT user_id, role FROM memberships
WHERE org_id = $1 AND (user_id = $2 OR role = 'owner')
ORDER BY user_id FOR UPDATE`, orgID, userID)
	locked, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[Member])
	if err != nil {
		return err
	}
	owners, role := 0, Role("")
	for _, m := range locked {
		if m.Role == Owner {
			owners++
		}
		if m.UserID == userID {
			role = m.Role
		}
	}
	switch {
	case role == "":
		return apperr.Errorf(apperr.NotFound, "member not found")
	case role == Owner && losing && owners <= 1:
		return apperr.Errorf(apperr.Conflict, "user %d is the organization's last owner; make another member owner first", userID)
	}
	return nil
}
