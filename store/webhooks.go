package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Webhook receives every alarm event of its project as a signed POST.
type Webhook struct {
	ID        int64     `db:"id"`
	ProjectID int64     `db:"project_id"`
	URL       string    `db:"url"`
	Secret    string    `db:"secret"`
	CreatedAt time.Time `db:"created_at"`
}

// Delivery is one event's delivery to one webhook, and how it went.
type Delivery struct {
	ID          int64      `db:"id"`
	WebhookID   int64      `db:"webhook_id"`
	EventID     int64      `db:"event_id"`
	Status      string     `db:"status"` // pending, delivered or failed
	Attempts    int        `db:"attempts"`
	NextAt      time.Time  `db:"next_at"`
	LastStatus  *int       `db:"last_status"`
	LastError   string     `db:"last_error"`
	DeliveredAt *time.Time `db:"delivered_at"`
	CreatedAt   time.Time  `db:"created_at"`
}

// Claim is a delivery a worker has taken, with what sending it needs.
type Claim struct {
	Delivery
	OrgID       int64
	URL, Secret string
	Event       AlarmEvent
}

const webhookColumns = `id, project_id, url, secret, created_at`

// ListWebhooks returns up to limit webhooks of the project with ids above
// after, in id order, and whether more follow. It returns NotFound for a
// project not in orgID.
func (db *DB) ListWebhooks(ctx context.Context, orgID, projectID, after int64, limit int) ([]Webhook, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks
WHERE project_id = $1 AND id > $2 ORDER BY id LIMIT $3`, projectID, after, limit+1)
	return collectPage[Webhook]("list webhooks", rows, limit)
}

// GetWebhook returns the webhook. It returns NotFound.
func (db *DB) GetWebhook(ctx context.Context, orgID, projectID, webhookID int64) (Webhook, error) {
	rows, _ := db.pool.Query(ctx, `
SELECT w.id, w.project_id, w.url, w.secret, w.created_at FROM webhooks w JOIN projects p ON p.id = w.project_id
WHERE w.id = $1 AND w.project_id = $2 AND p.org_id = $3`, webhookID, projectID, orgID)
	hook, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Webhook])
	return hook, notFound("get webhook", err, "webhook")
}

// CreateWebhook adds a webhook to the project; events from then on are
// delivered to it. It returns NotFound; Invalid for a URL or secret the
// table refuses; and Conflict when the project is archived or has its
// Limits.Webhooks.
func (db *DB) CreateWebhook(ctx context.Context, orgID, projectID int64, url, secret string) (Webhook, error) {
	var hook Webhook
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		if err := makeRoom(ctx, tx, db.limits, webhooksCap, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO webhooks (project_id, url, secret) VALUES ($1, $2, $3) RETURNING `+webhookColumns, projectID, url, secret)
		var err error
		if hook, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Webhook]); err != nil {
			return err
		}
		return audit(ctx, tx, Change{OrgID: orgID, ProjectID: projectID, Kind: AuditWebhook, Action: "create", After: map[string]any{"id": hook.ID, "url": hook.URL}})
	})
	return hook, dbError("create webhook", err)
}

// DeleteWebhook deletes the webhook and its deliveries. It returns
// NotFound, and Conflict when the project is archived.
func (db *DB) DeleteWebhook(ctx context.Context, orgID, projectID, webhookID int64) error {
	return dbError("delete webhook", pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		var url string
		err := tx.QueryRow(ctx, `DELETE FROM webhooks WHERE id = $1 AND project_id = $2 RETURNING url`, webhookID, projectID).Scan(&url)
		if err != nil {
			return notFound("delete webhook", err, "webhook")
		}
		return audit(ctx, tx, Change{OrgID: orgID, ProjectID: projectID, Kind: AuditWebhook, Action: "delete", Before: map[string]any{"id": webhookID, "url": url}})
	}))
}

const deliveryColumns = `d.id, d.webhook_id, d.event_id, d.status, d.attempts, d.next_at, d.last_status, d.last_error, d.delivered_at, d.created_at`

// ListDeliveries returns up to limit deliveries of the webhook, newest
// first, with ids below before (0: from the newest), and whether more
// follow. It returns NotFound.
func (db *DB) ListDeliveries(ctx context.Context, orgID, projectID, webhookID, before int64, limit int) ([]Delivery, bool, error) {
	if _, err := db.GetWebhook(ctx, orgID, projectID, webhookID); err != nil {
		return nil, false, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
WHERE d.webhook_id = $1 AND ($2 = 0 OR d.id < $2) ORDER BY d.id DESC LIMIT $3`, webhookID, before, limit+1)
	return collectPage[Delivery]("list deliveries", rows, limit)
}

// ClaimQuery bounds what ClaimDeliveries takes.
type ClaimQuery struct {
	// Max is how many deliveries the worker can send now.
	Max int
	// PerWebhook bounds the deliveries of one webhook in flight on every
	// replica together.
	PerWebhook int
	// PerOrg bounds the deliveries of one organization that this worker
	// has in flight; InFlight counts those it has, by organization.
	PerOrg   int
	InFlight map[int64]int
	// Lease is how long the claimed deliveries are the worker's.
	Lease time.Duration
}

// ClaimDeliveries takes due deliveries, at most q.Max, for q.Lease: until it
// ends no worker of any replica takes them again, and if the claimer dies
// they are due again when it ends, so that every event is delivered at
// least once. Each claim counts an attempt, which FinishDelivery names.
//
// Webhooks take turns, the least recently served first, one delivery each
// a round, oldest first, so that a webhook's backlog delays no other; a
// webhook has at most q.PerWebhook deliveries leased, counted under its
// row's lock, and an organization gets at most q.PerOrg of this worker's.
func (db *DB) ClaimDeliveries(ctx context.Context, q ClaimQuery) ([]Claim, error) {
	full := []int64{} // a NULL array would match nothing
	for org, n := range q.InFlight {
		if n >= q.PerOrg {
			full = append(full, org)
		}
	}
	var claims []Claim
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, lockDueWebhooksSQL, full, q.Max, q.PerWebhook)
		hooks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dueWebhook])
		if err != nil || len(hooks) == 0 {
			return err
		}
		ids, counts := shareClaims(hooks, q)
		if len(ids) == 0 {
			return nil
		}
		// A statement of its own, so that it sees what claims committed
		// before the locks above were taken.
		rows, _ = tx.Query(ctx, claimDeliveriesSQL, ids, counts, q.PerWebhook, q.Lease)
		claims, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claim, error) {
			var c Claim
			d, e := &c.Delivery, &c.Event
			err := row.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.Status, &d.Attempts, &d.NextAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt,
				&c.OrgID, &c.URL, &c.Secret,
				&e.ID, &e.ProjectID, &e.SensorID, &e.TargetKey, &e.Kind, &e.LevelID, &e.LevelName, &e.Value, &e.ReadingAt, &e.UserID, &e.Note, &e.Coalesced, &e.CreatedAt)
			return c, err
		})
		return err
	})
	return claims, dbError("claim deliveries", err)
}

// dueWebhook is a webhook with due deliveries, locked for a claim: its
// organization, and how many more of its deliveries it may have in
// flight, at most.
type dueWebhook struct {
	ID, OrgID int64
	Free      int
}

// lockDueWebhooksSQL locks up to $2 webhooks with due deliveries, of
// organizations other than $1, with fewer than $3 deliveries leased, the
// least recently served first; a webhook another claim holds is skipped.
// The webhooks with pending deliveries are found by skipping through
// webhook_deliveries_pending_idx, a probe each. NO KEY UPDATE leaves the
// key share lock that a new delivery's foreign key takes free.
const lockDueWebhooksSQL = `
WITH RECURSIVE pending AS (
    (SELECT webhook_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.webhook_id FROM webhook_deliveries d
            WHERE d.status = 'pending' AND d.webhook_id > p.webhook_id ORDER BY d.webhook_id LIMIT 1)
    FROM pending p WHERE p.webhook_id IS NOT NULL
)
SELECT w.id, p.org_id,
       least((SELECT count(*) FROM (SELECT FROM webhook_deliveries d
                  WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_at <= now() LIMIT $3) due),
             $3 - (SELECT count(*) FROM webhook_deliveries l WHERE l.webhook_id = w.id AND l.leased_until > now()))::int
FROM webhooks w JOIN projects p ON p.id = w.project_id
WHERE w.id IN (SELECT webhook_id FROM pending) AND p.org_id <> ALL($1)
  AND EXISTS (SELECT FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_at <= now())
  AND (SELECT count(*) FROM webhook_deliveries l WHERE l.webhook_id = w.id AND l.leased_until > now()) < $3
ORDER BY w.served_at NULLS FIRST, w.id
LIMIT $2
FOR NO KEY UPDATE OF w SKIP LOCKED`

// claimDeliveriesSQL claims, of each webhook $1[i], its $2[i] oldest due
// deliveries, or fewer if it has $3 leased less than that, for $4; and
// marks the webhooks served.
const claimDeliveriesSQL = `
WITH want AS (
    SELECT u.webhook_id, least(u.n, $3 - (SELECT count(*) FROM webhook_deliveries l
                                           WHERE l.webhook_id = u.webhook_id AND l.leased_until > now())) AS n
    FROM unnest($1::bigint[], $2::int[]) AS u(webhook_id, n)
), picked AS (
    SELECT d.id FROM want u CROSS JOIN LATERAL (
        SELECT d.id, row_number() OVER (ORDER BY d.next_at, d.id) AS n FROM (
            SELECT d.id, d.next_at FROM webhook_deliveries d
            WHERE d.webhook_id = u.webhook_id AND d.status = 'pending' AND d.next_at <= now()
            ORDER BY d.next_at, d.id LIMIT $3
        ) d
    ) d
    WHERE d.n <= u.n
), claimed AS (
    UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_at = now() + $4, leased_until = now() + $4
    FROM picked WHERE d.id = picked.id
    RETURNING ` + deliveryColumns + `
), served AS (
    UPDATE webhooks SET served_at = now() WHERE id IN (SELECT webhook_id FROM claimed)
)
SELECT d.*, p.org_id, w.url, w.secret,
       e.id, e.project_id, e.sensor_id, e.target_key, e.kind, e.level_id, e.level_name, e.value, e.reading_at, e.user_id, e.note, e.coalesced, e.created_at
FROM claimed d JOIN webhooks w ON w.id = d.webhook_id JOIN projects p ON p.id = w.project_id JOIN alarm_events e ON e.id = d.event_id
ORDER BY d.webhook_id, d.event_id`

// shareClaims shares q.Max deliveries between hooks, in their order, one
// each a round: at most hook.Free each, and what q.PerOrg leaves of each
// organization's. It returns the webhooks that get any and how many.
func shareClaims(hooks []dueWebhook, q ClaimQuery) (ids []int64, counts []int32) {
	orgs := map[int64]int{} // deliveries of the organization, in flight and shared out
	for org, n := range q.InFlight {
		orgs[org] = n
	}
	share := make([]int32, len(hooks))
	left := q.Max
	for more := true; more && left > 0; {
		more = false
		for i, h := range hooks {
			if left == 0 || int(share[i]) >= h.Free || orgs[h.OrgID] >= q.PerOrg {
				continue
			}
			share[i]++
			orgs[h.OrgID]++
			left--
			more = true
		}
	}
	for i, h := range hooks {
		if share[i] > 0 {
			ids, counts = append(ids, h.ID), append(counts, share[i])
		}
	}
	return ids, counts
}

// FinishDelivery records the attempt-th attempt of a claimed delivery:
// delivered, or failed for good, or due again at next; and ends its lease.
// It returns Conflict when the lease ran out and another claim took the
// delivery: that claim's attempt is the one to record.
func (db *DB) FinishDelivery(ctx context.Context, id int64, attempt int, status string, httpStatus *int, lastError string, next time.Time) error {
	tag, err := db.pool.Exec(ctx, `
UPDATE webhook_deliveries SET status = $3, last_status = $4, last_error = $5, next_at = $6, leased_until = NULL,
    delivered_at = CASE WHEN $3 = 'delivered' THEN now() END
WHERE id = $1 AND attempts = $2 AND status = 'pending'`, id, attempt, status, httpStatus, lastError, next)
	if err == nil && tag.RowsAffected() == 0 {
		return apperr.Errorf(apperr.Conflict, "delivery %d: attempt %d is no longer the claimed one", id, attempt)
	}
	return dbError("finish delivery", err)
}
