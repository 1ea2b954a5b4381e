-- When a write last queued each hour of the rollups: the maintainer
-- leaves an hour until no write has touched it for a while (one of its
-- intervals), so that an hour overwritten batch after batch is read back
-- and recomputed once, not once a round while the batches come. queued_at
-- keeps the first time, for the queue's age on /metrics. An hour queued
-- for its outputs alone (an edit of formulas) waits for nothing:
-- '-infinity'.
--
-- An expand step: the default fills the column for writers that do not
-- name it, the previous release's among them, whose queued hours then
-- settle from their last write too; adding a column with a stable default
-- rewrites no rows.

-- +goose Up
ALTER TABLE rollup_dirty ADD COLUMN touched_at timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE rollup_dirty DROP COLUMN touched_at;
