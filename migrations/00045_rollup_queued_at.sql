-- When each queued hour of the rollups was queued, so that an operator
-- sees how far the maintainer is behind (readings_rollup_queue_oldest_seconds
-- on /metrics), not only how much it has to do. An hour queued again keeps
-- its first time: it has waited since then.
--
-- An expand step: the default fills the column for writers that do not
-- name it, the previous release's among them, and adding a column with a
-- stable default rewrites no rows.

-- +goose Up
ALTER TABLE rollup_dirty ADD COLUMN queued_at timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE rollup_dirty DROP COLUMN queued_at;
