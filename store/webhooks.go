package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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
		if err := db.makeRoom(ctx, tx, webhooksCap, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO webhooks (project_id, url, secret) VALUES ($1, $2, $3) RETURNING `+webhookColumns, projectID, url, secret)
		var err error
		hook, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Webhook])
		return err
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
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND project_id = $2`, webhookID, projectID)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("delete webhook", pgx.ErrNoRows, "webhook")
		}
		return err
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

// ClaimDeliveries takes up to limit due deliveries, of webhooks other than
// busy, for lease: until it ends no worker of any replica takes them
// again, and if the claimer dies they are due again when it ends, so that
// every event is delivered at least once. Each claim counts an attempt.
func (db *DB) ClaimDeliveries(ctx context.Context, busy []int64, limit int, lease time.Duration) ([]Claim, error) {
	if busy == nil {
		busy = []int64{} // a NULL array would match nothing
	}
	rows, _ := db.pool.Query(ctx, `
WITH due AS (
    SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND next_at <= now() AND webhook_id <> ALL($1)
    ORDER BY next_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_at = now() + $3
    FROM due WHERE d.id = due.id
    RETURNING `+deliveryColumns+`
)
SELECT d.*, w.url, w.secret,
       e.id, e.project_id, e.sensor_id, e.target_key, e.kind, e.level_id, e.level_name, e.value, e.reading_at, e.user_id, e.note, e.created_at
FROM claimed d JOIN webhooks w ON w.id = d.webhook_id JOIN alarm_events e ON e.id = d.event_id
ORDER BY d.webhook_id, d.event_id`, busy, limit, lease)
	claims, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claim, error) {
		var c Claim
		d, e := &c.Delivery, &c.Event
		err := row.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.Status, &d.Attempts, &d.NextAt, &d.LastStatus, &d.LastError, &d.DeliveredAt, &d.CreatedAt,
			&c.URL, &c.Secret,
			&e.ID, &e.ProjectID, &e.SensorID, &e.TargetKey, &e.Kind, &e.LevelID, &e.LevelName, &e.Value, &e.ReadingAt, &e.UserID, &e.Note, &e.CreatedAt)
		return c, err
	})
	return claims, dbError("claim deliveries", err)
}

// FinishDelivery records an attempt of a claimed delivery: delivered, or
// failed for good, or due again at next.
func (db *DB) FinishDelivery(ctx context.Context, id int64, status string, httpStatus *int, lastError string, next time.Time) error {
	_, err := db.pool.Exec(ctx, `
UPDATE webhook_deliveries SET status = $2, last_status = $3, last_error = $4, next_at = $5,
    delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
WHERE id = $1`, id, status, httpStatus, lastError, next)
	return dbError("finish delivery", err)
}
