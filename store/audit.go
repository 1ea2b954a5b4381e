package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// The kinds of change the audit trail records.
const (
	AuditFormulas     = "formulas"
	AuditConstants    = "constants"
	AuditCalibrations = "calibrations"
	AuditBaselines    = "baselines"
	AuditLinks        = "links"
	AuditBlueprint    = "blueprint" // a sensor's instance of one
	AuditRule         = "rule"
	AuditLevel        = "level"
	AuditFlag         = "flag"
	AuditChecks       = "checks"
	AuditOverwrite    = "overwrite"
	AuditDelete       = "delete"
	AuditMember       = "member"
	AuditToken        = "token"
	AuditInvitation   = "invitation"
	AuditWebhook      = "webhook"
)

// AuditKinds are every kind, as the spec lists them.
var AuditKinds = []string{AuditFormulas, AuditConstants, AuditCalibrations, AuditBaselines, AuditLinks, AuditBlueprint,
	AuditRule, AuditLevel, AuditFlag, AuditChecks, AuditOverwrite, AuditDelete, AuditMember, AuditToken, AuditInvitation, AuditWebhook}

// instanceKinds are the kinds whose entries carry a sensor's whole
// instance before and after.
var instanceKinds = []string{AuditFormulas, AuditConstants, AuditCalibrations, AuditBaselines, AuditLinks, AuditBlueprint}

// AuditEntry is one change: who made it (Actor, nil for the service or a
// user since deleted), when, of what, and what it was before and after.
type AuditEntry struct {
	ID        int64           `db:"id"`
	OrgID     int64           `db:"org_id"`
	ProjectID *int64          `db:"project_id"`
	SensorID  *int64          `db:"sensor_id"`
	Kind      string          `db:"kind"`
	Action    string          `db:"action"`
	Actor     *int64          `db:"actor"`
	At        time.Time       `db:"at"`
	Before    json.RawMessage `db:"before"`
	After     json.RawMessage `db:"after"`
}

type actorKey struct{}

// WithActor is ctx naming the user whose request it serves, for the audit
// trail of the changes made under it.
func WithActor(ctx context.Context, userID int64) context.Context {
	return context.WithValue(ctx, actorKey{}, userID)
}

// ActorOf is the user WithActor named, nil for none.
func ActorOf(ctx context.Context) *int64 {
	if id, ok := ctx.Value(actorKey{}).(int64); ok && id != 0 {
		return &id
	}
	return nil
}

// Change is a change to record: Before and After are marshalled to JSON,
// nil for nothing.
type Change struct {
	OrgID         int64
	ProjectID     int64 // 0: the organization's
	SensorID      int64 // 0: none
	Kind, Action  string
	Before, After any
}

const auditSQL = `
INSERT INTO audit_entries (org_id, project_id, sensor_id, kind, action, actor, before, after)
VALUES ($1, nullif($2, 0), nullif($3, 0), $4, $5, $6, $7, $8)`

// Audit records the change, made by the user ctx names (WithActor).
func (tx *Tx) Audit(ctx context.Context, c Change) error {
	return audit(ctx, tx.tx, c)
}

// AuditAtCommit records the change as Audit does, but with the
// transaction's COMMIT (a write's overwrite of stored readings): no round
// trip of its own. Its errors are the commit's, but for a change that
// cannot be marshalled.
func (tx *Tx) AuditAtCommit(ctx context.Context, c Change) error {
	before, after, err := c.json()
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(auditSQL, c.OrgID, c.ProjectID, c.SensorID, c.Kind, c.Action, ActorOf(ctx), before, after)
	tx.tx.atCommit(b)
	return nil
}

func audit(ctx context.Context, q querier, c Change) error {
	before, after, err := c.json()
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, auditSQL, c.OrgID, c.ProjectID, c.SensorID, c.Kind, c.Action, ActorOf(ctx), before, after)
	return dbError("audit", err)
}

func (c Change) json() (before, after []byte, err error) {
	if c.Before != nil {
		if before, err = json.Marshal(c.Before); err != nil {
			return nil, nil, err
		}
	}
	if c.After != nil {
		if after, err = json.Marshal(c.After); err != nil {
			return nil, nil, err
		}
	}
	if string(before) == "null" {
		before = nil
	}
	if string(after) == "null" {
		after = nil
	}
	return before, after, nil
}

// AuditQuery selects entries of the trail: an organization's, or one of
// its projects' when ProjectID is set, of one sensor when SensorID is set.
type AuditQuery struct {
	OrgID     int64
	ProjectID int64 // 0: every project's and the organization's own
	SensorID  int64 // 0: any
	Kinds     []string
	From, To  time.Time // inclusive
	After     int64     // the last id of the page before; entries come newest first
	Limit     int
}

// ListAudit returns up to q.Limit entries, newest first, and whether more
// follow. It returns NotFound for a project, or a sensor, not in q's
// organization (or project).
func (db *DB) ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, bool, error) {
	if q.ProjectID != 0 {
		var ok bool
		err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM projects WHERE id = $2 AND org_id = $1)
  AND ($3 = 0 OR EXISTS (SELECT FROM sensors WHERE id = $3 AND project_id = $2))`, q.OrgID, q.ProjectID, q.SensorID).Scan(&ok)
		if err != nil {
			return nil, false, dbError("list audit", err)
		}
		if !ok {
			return nil, false, notFound("list audit", pgx.ErrNoRows, "project or sensor")
		}
	}
	after := q.After
	if after == 0 {
		after = 1<<63 - 1
	}
	rows, _ := db.pool.Query(ctx, `
SELECT id, org_id, project_id, sensor_id, kind, action, actor, at, before, after FROM audit_entries
WHERE org_id = $1 AND ($2 = 0 OR project_id = $2) AND ($3 = 0 OR sensor_id = $3)
  AND (coalesce(cardinality($4::text[]), 0) = 0 OR kind = ANY($4)) AND at BETWEEN $5 AND $6 AND id < $7
ORDER BY id DESC LIMIT $8`, q.OrgID, q.ProjectID, q.SensorID, q.Kinds, q.From, q.To, after, q.Limit+1)
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByName[AuditEntry])
	if err != nil {
		return nil, false, dbError("list audit", err)
	}
	more := len(entries) > q.Limit
	return entries[:min(len(entries), q.Limit)], more, nil
}

// InstanceAt returns the sensor's instance as it was at the instant at,
// from the trail: the one its last change before then left, or, when it
// changed only after, the one its first change found; ok is false when the
// trail has no change of it, and the instance is the current one.
func (db *DB) InstanceAt(ctx context.Context, sensorID int64, at time.Time) (inst *Instance, ok bool, err error) {
	insts, err := db.InstancesAt(ctx, []int64{sensorID}, at)
	inst, ok = insts[sensorID]
	return inst, ok, err
}

// InstancesAt is InstanceAt of several sensors in one statement: their
// instances at at, by sensor, of those the trail has changed.
func (db *DB) InstancesAt(ctx context.Context, sensorIDs []int64, at time.Time) (map[int64]*Instance, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT s.id, c.j FROM unnest($1::bigint[]) s(id) CROSS JOIN LATERAL (
    SELECT j FROM (
        (SELECT after AS j, 0 AS o FROM audit_entries WHERE sensor_id = s.id AND kind = ANY($3) AND at <= $2 ORDER BY at DESC, id DESC LIMIT 1)
        UNION ALL
        (SELECT before, 1 FROM audit_entries WHERE sensor_id = s.id AND kind = ANY($3) AND at > $2 ORDER BY at, id LIMIT 1)
    ) c ORDER BY o LIMIT 1) c`, sensorIDs, at, instanceKinds)
	insts := map[int64]*Instance{}
	var (
		id  int64
		raw []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &raw}, func() error {
		if len(raw) == 0 || string(raw) == "null" {
			insts[id] = nil
			return nil
		}
		var i Instance
		if err := json.Unmarshal(raw, &i); err != nil {
			return err
		}
		insts[id] = &i
		return nil
	})
	if err != nil {
		return nil, readError("instances at", err)
	}
	return insts, nil
}
