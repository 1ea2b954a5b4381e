package store

import (
	"context"
	"log/slog"
)

// StorageMode says how readings are stored.
type StorageMode string

// The storage modes.
const (
	TimescaleDB StorageMode = "timescaledb" // readings are a hypertable
	PostgreSQL  StorageMode = "postgresql"  // readings are a plain table
)

// Readiness is the state /readyz reports.
type Readiness struct {
	Version int64 // the last migration applied
	Pending bool  // whether this binary knows migrations the database lacks
	Storage StorageMode
}

// Readiness reports the database's migration state and storage mode.
func (db *DB) Readiness(ctx context.Context) (Readiness, error) {
	version, pending, err := MigrationState(ctx, db.pool)
	if err != nil {
		return Readiness{}, err
	}
	mode, _, err := db.StorageMode(ctx)
	return Readiness{Version: version, Pending: pending, Storage: mode}, err
}

const storageModeSQL = `
SELECT
    EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb'),
    EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')
        AND to_regclass('timescaledb_information.hypertables') IS NOT NULL`

const isHypertableSQL = `
SELECT EXISTS (SELECT 1 FROM timescaledb_information.hypertables WHERE hypertable_name = 'readings')`

// StorageMode tells whether readings are a hypertable, and whether the
// server offers TimescaleDB at all.
func (db *DB) StorageMode(ctx context.Context) (mode StorageMode, available bool, err error) {
	var loaded bool
	if err := db.pool.QueryRow(ctx, storageModeSQL).Scan(&available, &loaded); err != nil {
		return "", false, dbError("storage mode", err)
	}
	if !loaded {
		return PostgreSQL, available, nil
	}
	var hypertable bool
	if err := db.pool.QueryRow(ctx, isHypertableSQL).Scan(&hypertable); err != nil {
		return "", false, dbError("storage mode", err)
	}
	if hypertable {
		return TimescaleDB, available, nil
	}
	return PostgreSQL, available, nil
}

// LogStorageMode says at start-up how readings are stored, and warns when
// TimescaleDB is installed on the server but could not be used, saying how
// to get a hypertable. The status of TimescaleDB's policy jobs plays no
// part: on PostgreSQL 15.20 a job run by the background worker is recorded
// as failed ("cannot drop portal") though its work is committed.
func (db *DB) LogStorageMode(ctx context.Context, log *slog.Logger) error {
	mode, available, err := db.StorageMode(ctx)
	if err != nil {
		return err
	}
	if mode == PostgreSQL && available {
		log.Warn("timescaledb is installed on the database server but not preloaded, so readings are a plain table; " +
			"to make them a hypertable, add timescaledb to shared_preload_libraries, restart PostgreSQL, then run `readings migrate` " +
			"or restart the service with -migrate: it converts readings once, and ingest waits while their rows move into chunks")
	}
	log.Info("storage", "mode", mode)
	return nil
}
