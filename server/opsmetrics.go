package server

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// opsScrapeTimeout bounds the queries of one scrape, well inside
// Prometheus's default scrape timeout of 10 s.
const opsScrapeTimeout = 5 * time.Second

// opsCollector reads the figures with SQL when /metrics is scraped, so
// that every replica reports the state of the database they share, not
// of its own work; alerting rules take the max across replicas
// (prometheus/readings.rules.yml). A failed read reports
// readings_ops_stats_up 0 and leaves the other figures out, rather than
// failing the scrape of the process's own metrics.
type opsCollector struct {
	st  Health
	log *slog.Logger

	up, webhookPending, webhookOldest, rollupQueue, rollupOldest, overdueLag,
	standbyLagBytes, standbyLagSeconds, slotActive, slotRetained,
	archived, archiveFailed, lastArchived, lastArchiveFailure *prometheus.Desc
}

func newOpsCollector(st Health, log *slog.Logger) *opsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("readings_"+name, help, labels, nil)
	}
	return &opsCollector{
		st:                 st,
		log:                log,
		up:                 d("ops_stats_up", "1 when the figures below were read from the database at this scrape, 0 when the read failed."),
		webhookPending:     d("webhook_pending_deliveries", "Webhook deliveries not yet delivered nor failed, by project (projects with none are left out).", "project_id"),
		webhookOldest:      d("webhook_oldest_pending_seconds", "Age of the oldest pending webhook delivery, by project.", "project_id"),
		rollupQueue:        d("rollup_queue_hours", "Hours of readings queued for the rollups' maintainer."),
		rollupOldest:       d("rollup_queue_oldest_seconds", "How long the longest-queued hour has waited for the rollups' maintainer; 0 when none waits."),
		overdueLag:         d("overdue_check_lag_seconds", "How long the sensor most overdue past its rule has gone without its overdue alarm; normally below -alarm-check-interval."),
		standbyLagBytes:    d("standby_replay_lag_bytes", "WAL written on the primary that a streaming standby has not replayed, by standby (application_name).", "standby"),
		standbyLagSeconds:  d("standby_replay_lag_seconds", "How long a streaming standby's replay trails the primary (pg_stat_replication.replay_lag; 0 once idle and caught up).", "standby"),
		slotActive:         d("replication_slot_active", "1 when a standby is connected to the replication slot, 0 when none is.", "slot"),
		slotRetained:       d("replication_slot_retained_bytes", "WAL the primary keeps for a replication slot.", "slot"),
		archived:           d("wal_archived_total", "WAL segments archived since the database server started (pg_stat_archiver)."),
		archiveFailed:      d("wal_archive_failures_total", "Failed attempts to archive a WAL segment since the database server started (pg_stat_archiver)."),
		lastArchived:       d("wal_last_archived_timestamp_seconds", "When a WAL segment was last archived, as a Unix time; absent when none was since the server started."),
		lastArchiveFailure: d("wal_last_archive_failure_timestamp_seconds", "When archiving a WAL segment last failed, as a Unix time; absent when it never did since the server started."),
	}
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.webhookPending, c.webhookOldest, c.rollupQueue, c.rollupOldest, c.overdueLag,
		c.standbyLagBytes, c.standbyLagSeconds, c.slotActive, c.slotRetained, c.archived, c.archiveFailed, c.lastArchived, c.lastArchiveFailure} {
		ch <- d
	}
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), opsScrapeTimeout)
	defer cancel()
	st, err := c.st.OpsStats(ctx)
	if err != nil {
		c.log.Warn("metrics: read the operator's figures", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.up, 1)
	for _, w := range st.WebhookBacklog {
		project := strconv.FormatInt(w.ProjectID, 10)
		gauge(c.webhookPending, float64(w.Pending), project)
		gauge(c.webhookOldest, w.Oldest.Seconds(), project)
	}
	gauge(c.rollupQueue, float64(st.RollupQueue))
	gauge(c.rollupOldest, st.RollupOldest.Seconds())
	gauge(c.overdueLag, st.OverdueLag.Seconds())
	for _, s := range st.Standbys {
		gauge(c.standbyLagBytes, float64(s.LagBytes), s.Name)
		gauge(c.standbyLagSeconds, s.ReplayLag.Seconds(), s.Name)
	}
	for _, s := range st.Slots {
		active := 0.0
		if s.Active {
			active = 1
		}
		gauge(c.slotActive, active, s.Name)
		gauge(c.slotRetained, float64(s.RetainedBytes), s.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.archived, prometheus.CounterValue, float64(st.Archiver.Archived))
	ch <- prometheus.MustNewConstMetric(c.archiveFailed, prometheus.CounterValue, float64(st.Archiver.Failed))
	if !st.Archiver.LastArchived.IsZero() {
		gauge(c.lastArchived, float64(st.Archiver.LastArchived.Unix()))
	}
	if !st.Archiver.LastFailed.IsZero() {
		gauge(c.lastArchiveFailure, float64(st.Archiver.LastFailed.Unix()))
	}
}
