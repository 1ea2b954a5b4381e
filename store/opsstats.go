package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// OpsStats is what an operator watches of the database and the service's
// background work, read when /metrics is scraped. Ages are the database's
// clock's.
type OpsStats struct {
	// WebhookBacklog has a row per project with pending deliveries.
	WebhookBacklog []WebhookBacklog
	// RollupQueue is how many hours wait for the rollups' maintainer, and
	// RollupOldest how long the longest has waited (0 when none waits).
	RollupQueue  int64
	RollupOldest time.Duration
	// OverdueLag is how long the sensor most overdue past its rule has
	// gone without its overdue alarm: the check's lag, normally below its
	// interval (0 when no sensor is due).
	OverdueLag time.Duration
	// Standbys are the standbys streaming from this server, and Slots its
	// replication slots: empty without replication.
	Standbys []StandbyLag
	Slots    []ReplicationSlot
	// Archiver is WAL archiving's state (pg_stat_archiver).
	Archiver Archiver
}

// WebhookBacklog is a project's pending webhook deliveries.
type WebhookBacklog struct {
	ProjectID int64
	Pending   int64
	Oldest    time.Duration // how long ago the oldest was created
}

// StandbyLag is a standby streaming from this server (pg_stat_replication).
type StandbyLag struct {
	Name       string // its application_name
	State      string
	LagBytes   int64         // WAL written here that it has not replayed
	ReplayLag  time.Duration // how long its replay trails; 0 once idle and caught up
	SyncState  string
	ClientAddr string
}

// ReplicationSlot is a replication slot on this server.
type ReplicationSlot struct {
	Name          string
	Active        bool
	RetainedBytes int64 // WAL kept here for it
}

// Archiver is WAL archiving's state since the server started.
type Archiver struct {
	Archived, Failed int64
	LastArchived     time.Time // zero when none
	LastFailed       time.Time // zero when none
}

const (
	webhookBacklogSQL = `
SELECT w.project_id, count(*), extract(epoch FROM now() - min(d.created_at))
FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
WHERE d.status = 'pending'
GROUP BY w.project_id`

	rollupQueueSQL = `SELECT count(*), coalesce(extract(epoch FROM now() - min(queued_at)), 0) FROM rollup_dirty`

	// overdueLagSQL selects what raiseOverdueSQL would raise now.
	overdueLagSQL = `
SELECT coalesce(extract(epoch FROM max(now() - (coalesce(sl.datetime, o.created_at) + make_interval(secs => o.after_seconds)))), 0)
FROM alarm_overdue o
JOIN sensors s ON s.id = o.sensor_id
JOIN projects p ON p.id = s.project_id AND p.state = 'active'
LEFT JOIN sensor_latest sl ON sl.sensor_id = o.sensor_id
WHERE coalesce(sl.datetime, o.created_at) + make_interval(secs => o.after_seconds) < now()
  AND NOT EXISTS (SELECT 1 FROM alarms a WHERE a.sensor_id = o.sensor_id AND a.target_id = 0)`

	// The WAL columns are NULL for a role without pg_monitor (or
	// superuser): docs/deployment.md says to grant it.
	standbysSQL = `
SELECT coalesce(application_name, ''), coalesce(state, ''),
       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint,
       coalesce(extract(epoch FROM replay_lag), 0), coalesce(sync_state, ''), coalesce(host(client_addr), 'local')
FROM pg_stat_replication WHERE NOT pg_is_in_recovery()`

	slotsSQL = `
SELECT slot_name, active, coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint
FROM pg_replication_slots WHERE NOT pg_is_in_recovery()`

	archiverSQL = `
SELECT archived_count, failed_count, coalesce(last_archived_time, 'epoch'), coalesce(last_failed_time, 'epoch')
FROM pg_stat_archiver`
)

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// OpsStats reads the operator's figures in one round trip. It returns
// Unavailable when the database does not answer.
func (db *DB) OpsStats(ctx context.Context) (OpsStats, error) {
	var st OpsStats
	var rollupOldest, overdueLag float64
	b := &pgx.Batch{}
	b.Queue(webhookBacklogSQL).Query(func(rows pgx.Rows) error {
		var w WebhookBacklog
		var oldest float64
		_, err := pgx.ForEachRow(rows, []any{&w.ProjectID, &w.Pending, &oldest}, func() error {
			w.Oldest = seconds(oldest)
			st.WebhookBacklog = append(st.WebhookBacklog, w)
			return nil
		})
		return err
	})
	b.Queue(rollupQueueSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&st.RollupQueue, &rollupOldest) })
	b.Queue(overdueLagSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&overdueLag) })
	b.Queue(standbysSQL).Query(func(rows pgx.Rows) error {
		var s StandbyLag
		var lag float64
		_, err := pgx.ForEachRow(rows, []any{&s.Name, &s.State, &s.LagBytes, &lag, &s.SyncState, &s.ClientAddr}, func() error {
			s.ReplayLag = seconds(lag)
			st.Standbys = append(st.Standbys, s)
			return nil
		})
		return err
	})
	b.Queue(slotsSQL).Query(func(rows pgx.Rows) error {
		var s ReplicationSlot
		_, err := pgx.ForEachRow(rows, []any{&s.Name, &s.Active, &s.RetainedBytes}, func() error {
			st.Slots = append(st.Slots, s)
			return nil
		})
		return err
	})
	b.Queue(archiverSQL).QueryRow(func(row pgx.Row) error {
		a := &st.Archiver
		err := row.Scan(&a.Archived, &a.Failed, &a.LastArchived, &a.LastFailed)
		for _, t := range []*time.Time{&a.LastArchived, &a.LastFailed} {
			if t.Unix() == 0 {
				*t = time.Time{}
			}
		}
		return err
	})
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return OpsStats{}, dbError("ops stats", err)
	}
	st.RollupOldest, st.OverdueLag = seconds(rollupOldest), seconds(overdueLag)
	return st, nil
}
