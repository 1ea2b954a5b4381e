package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/sensorreadings/readings/migrations"
)

// Migrate applies every pending migration. A Postgres advisory lock held for
// the session makes replicas that start together take turns.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	provider, err := newMigrator(pool, log)
	if err != nil {
		return err
	}
	defer provider.Close()
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// MigrationState reports the applied version and whether any is pending.
func MigrationState(ctx context.Context, pool *pgxpool.Pool) (version int64, pending bool, err error) {
	provider, err := newMigrator(pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, false, err
	}
	defer provider.Close()
	current, _, err := provider.GetVersions(ctx)
	if err != nil {
		return 0, false, dbError("migration state", err)
	}
	// Not current < target: a migration below the current version can be
	// missing too (see newMigrator).
	pending, err = provider.HasPending(ctx)
	if err != nil {
		return 0, false, dbError("migration state", err)
	}
	return current, pending, nil
}

func newMigrator(pool *pgxpool.Pool, log *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	// Capabilities built side by side land in the order they are merged,
	// not the order of their numbers, so a database can have a higher
	// version than a migration that lands after it (00006 came after 00007,
	// 00010-00012 after 00030). Each migration creates what it alone owns,
	// so applying the missing ones then is safe; refusing them would stop
	// the service on such a database.
	provider, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), migrations.FS,
		goose.WithSessionLocker(locker), goose.WithSlog(log), goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return provider, nil
}
