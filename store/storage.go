package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StorageConfig is how TimescaleDB keeps readings. It applies to a
// hypertable only; a plain readings table has nothing to configure.
type StorageConfig struct {
	ChunkInterval time.Duration // the span of datetime one chunk holds; applies to chunks made from now on
	CompressAfter time.Duration // compress a chunk once all of it is this old; 0: never
	Retention     time.Duration // drop a chunk once all of it is this old; 0: keep readings forever
}

// Validate says what is wrong with c, or nil.
func (c StorageConfig) Validate() error {
	switch {
	case c.ChunkInterval < time.Hour:
		return fmt.Errorf("chunk interval %s must be at least 1h: every chunk costs planning time", c.ChunkInterval)
	case c.CompressAfter < 0:
		return fmt.Errorf("compress after %s cannot be negative", c.CompressAfter)
	case c.Retention < 0:
		return fmt.Errorf("retention %s cannot be negative", c.Retention)
	case c.Retention > 0 && c.Retention < c.ChunkInterval:
		return fmt.Errorf("retention %s is shorter than a chunk (%s): whole chunks are dropped", c.Retention, c.ChunkInterval)
	}
	return nil
}

// The compression settings, the same on every database: segments by sensor
// because every query names one, and ordered by datetime ascending, which
// serves newest-first reads as fast (docs/performance.md).
const (
	compressSegmentBy = "sensor_id"
	compressOrderBy   = "datetime"
)

// storageLockID serializes ConfigureStorage across replicas that start at
// once; it is "readings" in ASCII.
const storageLockID = 0x72656164696e6773

const storageStateSQL = `
SELECT
    EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb'),
    EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'),
    'timescaledb' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))`

// ConfigureStorage applies cfg to the readings hypertable: its chunk
// interval, its compression settings and policy, its retention policy.
// It changes only what differs, so that it can run at every start, and one
// replica at a time. Where TimescaleDB has been preloaded since the
// migrations left readings a plain table, it first makes readings a
// hypertable, moving its rows into chunks under a lock that holds off
// ingest until it is done. On plain PostgreSQL it does nothing and says
// so.
func ConfigureStorage(ctx context.Context, pool *pgxpool.Pool, cfg StorageConfig, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("configure storage: %w", err)
	}
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(storageLockID)); err != nil {
			return err
		}
		var available, created, preloaded bool
		if err := tx.QueryRow(ctx, storageStateSQL).Scan(&available, &created, &preloaded); err != nil {
			return err
		}
		if !available || !preloaded {
			log.Info("storage settings (chunk interval, compression, retention) not applied: readings are a plain table")
			return nil
		}
		hypertable := false
		if created {
			if err := tx.QueryRow(ctx, isHypertableSQL).Scan(&hypertable); err != nil {
				return err
			}
		}
		if !hypertable {
			if err := convertToHypertable(ctx, tx, cfg, log); err != nil {
				return err
			}
		}
		return applyStorageConfig(ctx, tx, cfg, log)
	})
	if err != nil {
		return fmt.Errorf("configure storage: %w", err)
	}
	return nil
}

// convertToHypertable makes the plain readings table a hypertable, as
// migration 00003 would have had TimescaleDB been preloaded then.
func convertToHypertable(ctx context.Context, tx pgx.Tx, cfg StorageConfig, log *slog.Logger) error {
	var rows int64
	if err := tx.QueryRow(ctx, `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'readings'::regclass`).Scan(&rows); err != nil {
		return err
	}
	log.Warn("TimescaleDB is preloaded now: making readings a hypertable; ingest waits until its rows are in chunks", "rows_estimated", rows)
	start := time.Now()
	if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS timescaledb`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SELECT create_hypertable('readings', 'datetime',
    chunk_time_interval => $1::interval, create_default_indexes => false, migrate_data => true)`, interval(cfg.ChunkInterval))
	if err != nil {
		return err
	}
	log.Info("readings are a hypertable", "duration", time.Since(start))
	return nil
}

// policy is a TimescaleDB policy job on readings, set by one interval.
type policy struct {
	name, proc, key string // proc: the job's procedure; key: its interval in the job's config
	add, remove     string
}

var (
	compressionPolicy = policy{
		name: "compress_after", proc: "policy_compression", key: "compress_after",
		add:    `SELECT add_compression_policy('readings', $1::interval)`,
		remove: `SELECT remove_compression_policy('readings', if_exists => true)`,
	}
	retentionPolicy = policy{
		name: "retention", proc: "policy_retention", key: "drop_after",
		add:    `SELECT add_retention_policy('readings', $1::interval)`,
		remove: `SELECT remove_retention_policy('readings', if_exists => true)`,
	}
)

func applyStorageConfig(ctx context.Context, tx pgx.Tx, cfg StorageConfig, log *slog.Logger) error {
	var sameInterval bool
	err := tx.QueryRow(ctx, `
SELECT time_interval = $1::interval FROM timescaledb_information.dimensions
WHERE hypertable_schema = current_schema() AND hypertable_name = 'readings' AND column_name = 'datetime'`, interval(cfg.ChunkInterval)).Scan(&sameInterval)
	if err != nil {
		return fmt.Errorf("chunk interval: %w", err)
	}
	if !sameInterval {
		if _, err := tx.Exec(ctx, `SELECT set_chunk_time_interval('readings', $1::interval)`, interval(cfg.ChunkInterval)); err != nil {
			return fmt.Errorf("chunk interval: %w", err)
		}
		log.Info("storage: chunk interval changed; chunks made from now on span it", "chunk_interval", cfg.ChunkInterval)
	}

	var segmentBy, orderBy *string
	err = tx.QueryRow(ctx, `
SELECT segmentby, orderby FROM timescaledb_information.hypertable_compression_settings
WHERE hypertable = 'readings'::regclass`).Scan(&segmentBy, &orderBy)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("compression settings: %w", err)
	}
	if segmentBy == nil || *segmentBy != compressSegmentBy || orderBy == nil || *orderBy != compressOrderBy {
		_, err := tx.Exec(ctx, `ALTER TABLE readings SET (timescaledb.compress,
    timescaledb.compress_segmentby = '`+compressSegmentBy+`', timescaledb.compress_orderby = '`+compressOrderBy+`')`)
		if err != nil {
			return fmt.Errorf("compression settings: %w", err)
		}
		log.Info("storage: compression settings changed; chunks compressed from now on use them",
			"segmentby", compressSegmentBy, "orderby", compressOrderBy)
	}

	for _, p := range []struct {
		policy
		after time.Duration
	}{{compressionPolicy, cfg.CompressAfter}, {retentionPolicy, cfg.Retention}} {
		if err := p.apply(ctx, tx, p.after, log); err != nil {
			return err
		}
	}
	log.Info("storage settings", "chunk_interval", cfg.ChunkInterval, "compress_after", cfg.CompressAfter, "retention", cfg.Retention)
	return nil
}

// apply makes the policy run with interval after, or removes it for 0,
// unless it is so already.
func (p policy) apply(ctx context.Context, tx pgx.Tx, after time.Duration, log *slog.Logger) error {
	var same *bool // nil: no such job
	err := tx.QueryRow(ctx, `
SELECT (config->>$2)::interval = $3::interval FROM timescaledb_information.jobs
WHERE proc_name = $1 AND hypertable_schema = current_schema() AND hypertable_name = 'readings'`, p.proc, p.key, interval(after)).Scan(&same)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s policy: %w", p.name, err)
	}
	switch {
	case same != nil && *same && after > 0, same == nil && after == 0:
		return nil
	case same != nil:
		if _, err := tx.Exec(ctx, p.remove); err != nil {
			return fmt.Errorf("%s policy: %w", p.name, err)
		}
	}
	if after > 0 {
		if _, err := tx.Exec(ctx, p.add, interval(after)); err != nil {
			return fmt.Errorf("%s policy: %w", p.name, err)
		}
	}
	log.Info("storage: policy changed", p.name, after)
	return nil
}

// interval is d as PostgreSQL shows it best: whole days as days, so that
// the jobs' configuration reads "7 days", not "168:00:00".
func interval(d time.Duration) pgtype.Interval {
	const day = 24 * time.Hour
	return pgtype.Interval{Days: int32(d / day), Microseconds: (d % day).Microseconds(), Valid: true}
}
