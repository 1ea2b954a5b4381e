-- Hypertables made by an earlier 00003 got create_hypertable's default
-- index on (datetime DESC). The primary key (sensor_id, datetime) makes it
-- redundant: every insert paid for it, and the planner chose it over the
-- primary key on partly compressed chunks.

-- +goose Up
DROP INDEX IF EXISTS readings_datetime_idx;

-- +goose Down
SELECT 1;
