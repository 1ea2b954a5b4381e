package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Blueprint is a template of inputs, constants and output formulas.
type Blueprint struct {
	ID          int64               `db:"id"`
	OrgID       int64               `db:"org_id"`
	Name        string              `db:"name"`
	Description string              `db:"description"`
	Inputs      []BlueprintInput    `db:"inputs"`
	Constants   []BlueprintConstant `db:"constants"`
	Outputs     []BlueprintOutput   `db:"outputs"`
	CreatedAt   time.Time           `db:"created_at"`
	UpdatedAt   time.Time           `db:"updated_at"`
}

// BlueprintInput is an input of a blueprint.
type BlueprintInput struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	Unit string `json:"unit"`
}

// BlueprintConstant is a constant of a blueprint, with its default if any.
type BlueprintConstant struct {
	Key     string   `json:"key"`
	Name    string   `json:"name"`
	Unit    string   `json:"unit"`
	Default *float64 `json:"default,omitempty"`
}

// BlueprintOutput is an output of a blueprint and its formula, with the
// decimals a person needs to see of it, if declared.
type BlueprintOutput struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	Formula  string `json:"formula"`
	Decimals *int   `json:"decimals,omitempty"`
}

// Instantiate makes an instance of b, its constants' values overridden by
// values (keys must be b's constants). The instance has no ids yet; the
// store gives them when it is saved. It returns Invalid.
func (b Blueprint) Instantiate(values map[string]float64) (Instance, error) {
	inst := Instance{
		Inputs:    make([]InstanceInput, len(b.Inputs)),
		Outputs:   make([]InstanceOutput, len(b.Outputs)),
		Constants: make([]InstanceConstant, len(b.Constants)),
	}
	for i, in := range b.Inputs {
		inst.Inputs[i] = InstanceInput{Key: in.Key, Name: in.Name, Unit: in.Unit}
	}
	for i, out := range b.Outputs {
		inst.Outputs[i] = InstanceOutput{Key: out.Key, Name: out.Name, Unit: out.Unit, Formula: out.Formula, Decimals: out.Decimals}
	}
	for i, c := range b.Constants {
		inst.Constants[i] = InstanceConstant{Key: c.Key, Name: c.Name, Unit: c.Unit, Default: c.Default}
	}
	return inst, inst.SetConstants(Values(values))
}

const blueprintColumns = `id, org_id, name, description, inputs, constants, outputs, created_at, updated_at`

// ListBlueprints returns up to limit blueprints of orgID with ids above
// after, in id order, and whether more follow.
func (db *DB) ListBlueprints(ctx context.Context, orgID, after int64, limit int) ([]Blueprint, bool, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT `+blueprintColumns+` FROM blueprints
WHERE org_id = $1 AND id > $2 ORDER BY id LIMIT $3`, orgID, after, limit+1)
	return collectPage[Blueprint]("list blueprints", rows, limit)
}

// CreateBlueprint saves b in orgID. The caller has checked its formulas. It
// returns Invalid for an unknown organization, or a name or description the
// blueprints table refuses (a name of 1 to 200 characters, a description of
// at most 2,000), and Conflict when the organization has its
// Limits.Blueprints.
func (db *DB) CreateBlueprint(ctx context.Context, orgID int64, b Blueprint) (Blueprint, error) {
	var created Blueprint
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := makeRoom(ctx, tx, db.limits, blueprintsCap, orgID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO blueprints (org_id, name, description, inputs, constants, outputs)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING `+blueprintColumns, orgID, b.Name, b.Description, nonNil(b.Inputs), nonNil(b.Constants), nonNil(b.Outputs))
		var err error
		created, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Blueprint])
		return err
	})
	return created, dbError("create blueprint", err)
}

// GetBlueprint returns blueprint id of orgID. It returns NotFound.
func (db *DB) GetBlueprint(ctx context.Context, orgID, id int64) (Blueprint, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+blueprintColumns+` FROM blueprints WHERE id = $2 AND org_id = $1`, orgID, id)
	b, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Blueprint])
	return b, notFound("get blueprint", err, "blueprint")
}

// UpdateBlueprint replaces blueprint id of orgID with b. Instances made of
// it keep their copies. It returns NotFound, and Invalid for a name or
// description the blueprints table refuses.
func (db *DB) UpdateBlueprint(ctx context.Context, orgID, id int64, b Blueprint) (Blueprint, error) {
	rows, _ := db.pool.Query(ctx, `
UPDATE blueprints SET name = $3, description = $4, inputs = $5, constants = $6, outputs = $7, updated_at = now()
WHERE id = $2 AND org_id = $1
RETURNING `+blueprintColumns, orgID, id, b.Name, b.Description, nonNil(b.Inputs), nonNil(b.Constants), nonNil(b.Outputs))
	updated, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Blueprint])
	return updated, notFound("update blueprint", err, "blueprint")
}

// DeleteBlueprint deletes blueprint id of orgID; instances made of it stay.
// It returns NotFound.
func (db *DB) DeleteBlueprint(ctx context.Context, orgID, id int64) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM blueprints WHERE id = $2 AND org_id = $1`, orgID, id)
	if err != nil {
		return dbError("delete blueprint", err)
	}
	if tag.RowsAffected() == 0 {
		return apperr.Errorf(apperr.NotFound, "blueprint not found")
	}
	return nil
}

// nonNil keeps an empty list an empty JSON array rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
