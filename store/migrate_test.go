package store_test

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sensorreadings/readings/migrations"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// A database that has a higher version than migrations it lacks (they
// landed after it was migrated, as 00010-00012 landed after 00030) gets
// them applied, instead of a service that refuses to start.
func TestMigrateOutOfOrder(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	provider, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	defer provider.Close()
	for _, v := range []int64{12, 11, 10} {
		if _, err := provider.ApplyVersion(ctx, v, false); err != nil {
			t.Fatalf("undo migration %d: %v", v, err)
		}
	}
	if _, pending, err := store.MigrationState(ctx, pool); err != nil || !pending {
		t.Fatalf("MigrationState with 10-12 undone: pending=%v err=%v, want pending", pending, err)
	}
	if err := store.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("Migrate with 10-12 missing below version 30: %v", err)
	}
	if _, pending, err := store.MigrationState(ctx, pool); err != nil || pending {
		t.Errorf("MigrationState after Migrate: pending=%v err=%v, want complete", pending, err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('webhooks') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		t.Errorf("table webhooks after Migrate: exists=%v err=%v", exists, err)
	}
}

// TestRollupQuartersLZ4: an hour's quarters, too large for the row, are
// compressed with lz4 where the server has it, which writes them at
// about twice pglz's speed (migration 00066).
func TestRollupQuartersLZ4(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	var methods []string
	if err := pool.QueryRow(ctx, `SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&methods); err != nil {
		t.Fatal(err)
	}
	want := "" // the default, pglz
	if slices.Contains(methods, "lz4") {
		want = "l"
	}
	var got string
	err := pool.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'rollup_hours'::regclass AND attname = 'quarters'`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("rollup_hours.quarters compressed with %q, want %q (the server has %v)", got, want, methods)
	}
}
