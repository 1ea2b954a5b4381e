package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ProjectState is active or archived. An archived project serves reads and
// refuses new readings.
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
	projects, err := pgx.CollectRows(rows, pgx.RowToStructByName[Project])
	if err != nil {
		return nil, false, dbError("list projects", err)
	}
	projects, more := pageOf(projects, limit)
	return projects, more, nil
}

// CreateProject creates an active project in orgID. It returns Invalid for
// an unknown organization, or a name or description the projects table
// refuses (a name of 1 to 200 characters, a description of at most 2,000).
func (db *DB) CreateProject(ctx context.Context, orgID int64, name, description string) (Project, error) {
	rows, _ := db.pool.Query(ctx, `
INSERT INTO projects (org_id, name, description) VALUES ($1, $2, $3)
RETURNING `+projectColumns, orgID, name, description)
	project, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
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

// UpdateProject applies patch to project projectID of orgID. It returns
// NotFound, and Invalid for a name, description or state the projects
// table refuses.
func (db *DB) UpdateProject(ctx context.Context, orgID, projectID int64, patch ProjectPatch) (Project, error) {
	rows, _ := db.pool.Query(ctx, `
UPDATE projects SET
    name = coalesce($3, name),
    description = coalesce($4, description),
    state = coalesce($5, state),
    updated_at = now()
WHERE id = $2 AND org_id = $1
RETURNING `+projectColumns, orgID, projectID, patch.Name, patch.Description, patch.State)
	project, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Project])
	return project, notFound("update project", err, "project")
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
