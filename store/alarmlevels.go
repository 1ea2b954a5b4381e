package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// AlarmLevel is one of a project's alarm levels; a higher rank is more
// severe.
type AlarmLevel struct {
	ID        int64  `db:"id" json:"id"`
	ProjectID int64  `db:"project_id" json:"project_id"`
	Name      string `db:"name" json:"name"`
	Rank      int    `db:"rank" json:"rank"`
	Colour    string `db:"colour" json:"colour"`
}

// AlarmLevelPatch holds the changes of a level; nil fields change nothing.
type AlarmLevelPatch struct {
	Name   *string
	Rank   *int
	Colour *string
}

const alarmLevelColumns = `id, project_id, name, rank, colour`

// ListAlarmLevels returns up to limit levels of the project with ranks
// above after, by rank (unique in a project), and whether more follow. It
// returns NotFound for a project not in orgID.
func (db *DB) ListAlarmLevels(ctx context.Context, orgID, projectID int64, after, limit int) ([]AlarmLevel, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmLevelColumns+` FROM alarm_levels
WHERE project_id = $1 AND rank > $2 ORDER BY rank LIMIT $3`, projectID, after, limit+1)
	return collectPage[AlarmLevel]("list alarm levels", rows, limit)
}

// CreateAlarmLevel adds a level to the project. It returns NotFound;
// Invalid for a name, rank or colour the table refuses; Conflict for a
// name or rank the project has already, an archived project, or one with
// its Limits.AlarmLevels.
func (db *DB) CreateAlarmLevel(ctx context.Context, orgID, projectID int64, l AlarmLevel) (AlarmLevel, error) {
	var level AlarmLevel
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		if err := makeRoom(ctx, tx, db.limits, alarmLevelsCap, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO alarm_levels (project_id, name, rank, colour) VALUES ($1, $2, $3, $4) RETURNING `+alarmLevelColumns,
			projectID, l.Name, l.Rank, l.Colour)
		var err error
		if level, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel]); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, ProjectID: projectID, Kind: AuditLevel, Action: "create", After: level})
	})
	return level, dbError("create alarm level", err)
}

// UpdateAlarmLevel applies patch to the level. A rank orders the levels
// of the rules in force, so it changes only while no rule uses the level.
// It returns NotFound; Invalid as CreateAlarmLevel; Conflict for a name or
// rank taken, a rank change of a level in use, or an archived project.
func (db *DB) UpdateAlarmLevel(ctx context.Context, orgID, projectID, levelID int64, patch AlarmLevelPatch) (AlarmLevel, error) {
	var level AlarmLevel
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+alarmLevelColumns+` FROM alarm_levels WHERE id = $1 AND project_id = $2 FOR UPDATE`, levelID, projectID)
		current, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel])
		if err != nil {
			return notFound("update alarm level", err, "alarm level")
		}
		if patch.Rank != nil && *patch.Rank != current.Rank {
			if err := levelUnused(ctx, tx, levelID, "change the rank of"); err != nil {
				return err
			}
		}
		rows, _ = tx.Query(ctx, `
UPDATE alarm_levels SET name = $2, rank = $3, colour = $4 WHERE id = $1 RETURNING `+alarmLevelColumns,
			levelID, coalesce(patch.Name, current.Name), coalesce(patch.Rank, current.Rank), coalesce(patch.Colour, current.Colour))
		if level, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel]); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, ProjectID: projectID, Kind: AuditLevel, Action: "update", Before: current, After: level})
	})
	return level, dbError("update alarm level", err)
}

// DeleteAlarmLevel deletes the level. It returns NotFound, and Conflict
// while rules or current alarms use it or when the project is archived.
func (db *DB) DeleteAlarmLevel(ctx context.Context, orgID, projectID, levelID int64) error {
	return dbError("delete alarm level", pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM alarm_levels WHERE id = $1 AND project_id = $2 FOR UPDATE`, levelID, projectID).Scan(&id)
		if err != nil {
			return notFound("delete alarm level", err, "alarm level")
		}
		if err := levelUnused(ctx, tx, levelID, "delete"); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM alarm_levels WHERE id = $1`, levelID); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, ProjectID: projectID, Kind: AuditLevel, Action: "delete", Before: map[string]int64{"id": levelID}})
	}))
}

// levelUnused returns Conflict when rules or alarms use the level, whose
// row the caller has locked: rules are written under a share lock of it.
func levelUnused(ctx context.Context, tx pgx.Tx, levelID int64, what string) error {
	var rules int
	err := tx.QueryRow(ctx, `
SELECT (SELECT count(*) FROM alarm_rules WHERE level_id = $1) + (SELECT count(*) FROM alarm_overdue WHERE level_id = $1)
     + (SELECT count(*) FROM alarms WHERE level_id = $1)`, levelID).Scan(&rules)
	if err != nil {
		return err
	}
	if rules > 0 {
		return &apperr.Error{
			Code:    apperr.Conflict,
			Message: fmt.Sprintf("cannot %s alarm level %d: %d rules or alarms use it; move or delete them first", what, levelID, rules),
			Details: map[string]any{"level_id": levelID},
		}
	}
	return nil
}
