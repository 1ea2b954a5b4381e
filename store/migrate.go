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
	current, target, err := provider.GetVersions(ctx)
	if err != nil {
		return 0, false, dbError("migration state", err)
	}
	return current, current < target, nil
}

func newMigrator(pool *pgxpool.Pool, log *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), migrations.FS,
		goose.WithSessionLocker(locker), goose.WithSlog(log))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return provider, nil
}
