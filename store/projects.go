package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// ProjectState is active or archived. An archived project serves reads and
// refuses every write under it but its restoring and its deletion.
type ProjectState string

// The project states.
const (
	Active   ProjectState = "active"
	Archived ProjectState = "archived"
)

// Project groups sensors.
type Project struct {
	ID          int64        `db:"id"`
	OrgID       int64        `db:"org_id"`
	Name        string       `db:"name"`
	Description string       `db:"description"`
	State       ProjectState `db:"state"`
	CreatedAt   time.Time    `db:"created_at"`
	UpdatedAt   time.Time    `db:"updated_at"`
}

// ProjectPatch holds the fields of an update; nil fields keep their value.
type ProjectPatch struct {
	Name        *string
	Description *string
	State       *ProjectState
}

const projectColumns = `id, org_id, name, description, state, created_at, updated_at`

// ListProjects returns up to limit projects of orgID with ids above after, in
// id order, and whether more follow.
func (db *DB) ListProjects(ctx context.Context, orgID, after int64, limit int) ([]Project, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+projectColumns+` FROM projects
WHERE org_id = $1 AND id > $2 ORDER BY id LIMIT $3`, orgID, after, limit+1)
	return collectPage[Project]("list projects", rows, limit)
}

// CreateProject creates an active project in orgID. It returns Invalid for
// an unknown organization, or a name or description the projects table
// refuses (a name of 1 to 200 characters, a description of at most 2,000),
// and Conflict when the organization has its Limits.Projects.
func (db *DB) CreateProject(ctx context.Context, orgID int64, name, description string) (Project, error) {
	var project Project
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := makeRoom(ctx, tx, db.limits, projectsCap, orgID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO projects (org_id, name, description) VALUES ($1, $2, $3)
RETURNING `+projectColumns, orgID, name, description)
		var err error
		project, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
		return err
	})
	return project, dbError("create project", err)
}

// GetProject returns project projectID of orgID. It returns NotFound.
func (db *DB) GetProject(ctx context.Context, orgID, projectID int64) (Project, error) {
	return getProject(ctx, db.pool, orgID, projectID)
}

func getProject(ctx context.Context, q querier, orgID, projectID int64) (Project, error) {
	rows, _ := q.Query(ctx, `SELECT `+projectColumns+` FROM projects WHERE id = $2 AND org_id = $1`, orgID, projectID)
	project, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
	return project, notFound("get project", err, "project")
}

// UpdateProject applies patch to project projectID of orgID. A patch that
// changes nothing writes nothing, so archiving an archived project leaves it
// as it was. On an archived project only a patch that restores it (state
// active) is applied. It returns NotFound; Invalid for a name, description
// or state the projects table refuses; and Conflict for any other change of
// an archived project.
func (db *DB) UpdateProject(ctx context.Context, orgID, projectID int64, patch ProjectPatch) (Project, error) {
	var project Project
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		// The row lock waits for the writes in flight under the project,
		// which hold a share lock on it (lockWritableProject): none of them
		// lands after the project is archived.
		rows, _ := tx.Query(ctx, `SELECT `+projectColumns+` FROM projects WHERE id = $2 AND org_id = $1 FOR NO KEY UPDATE`, orgID, projectID)
		current, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
		if err != nil {
			return notFound("update project", err, "project")
		}
		next := current
		next.Name, next.Description, next.State = coalesce(patch.Name, current.Name), coalesce(patch.Description, current.Description), coalesce(patch.State, current.State)
		if next == current {
			project = current
			return nil
		}
		if next.State == Archived {
			if err := writable(projectID, current.State); err != nil {
				return err
			}
		}
		rows, _ = tx.Query(ctx, `
UPDATE projects SET name = $2, description = $3, state = $4, updated_at = now()
WHERE id = $1
RETURNING `+projectColumns, projectID, next.Name, next.Description, next.State)
		project, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
		return err
	})
	return project, dbError("update project", err)
}

func coalesce[T any](p *T, otherwise T) T {
	if p == nil {
		return otherwise
	}
	return *p
}

// lockWritableProjectSQL takes a share lock on the project's row. Updates
// of the row conflict with it: an archive waits for the writes in flight,
// and a write that comes during an archive waits for it, then reads the
// project archived.
const lockWritableProjectSQL = `SELECT state FROM projects WHERE id = $2 AND org_id = $1 FOR SHARE`

// lockWritableProject locks project projectID of orgID against archiving
// until tx ends, and checks that it is active. Every write under a project
// calls it first, before locking any sensor, so that locks are always taken
// project first (as DeleteProject's cascade does) and never deadlock. It
// returns NotFound, and Conflict when the project is archived.
func lockWritableProject(ctx context.Context, tx pgx.Tx, orgID, projectID int64) error {
	var state ProjectState
	if err := tx.QueryRow(ctx, lockWritableProjectSQL, orgID, projectID).Scan(&state); err != nil {
		return notFound("lock project", err, "project")
	}
	return writable(projectID, state)
}

// writable returns Conflict when state is archived: the one answer to
// every write under an archived project.
func writable(projectID int64, state ProjectState) error {
	if state == Archived {
		return apperr.Errorf(apperr.Conflict, "project %d is archived, so read-only; restore it first", projectID)
	}
	return nil
}

// DeleteProject deletes project projectID of orgID with its sensors and
// their readings. It returns NotFound.
func (db *DB) DeleteProject(ctx context.Context, orgID, projectID int64) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM projects WHERE id = $2 AND org_id = $1`, orgID, projectID)
	if err != nil {
		return dbError("delete project", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("delete project", pgx.ErrNoRows, "project")
	}
	return nil
}
