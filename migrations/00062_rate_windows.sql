-- A rate rule keeps the values of its window between writes
-- (store.RateWindow, sensing/rates.go), so that a write after the
-- sensor's newest reading reads no reading back to find where each of
-- its windows starts. NULL: nothing kept, the next write reads the
-- readings. Rewritten by each write, its floats never compress: kept out
-- of line without trying.
-- +goose Up
ALTER TABLE alarm_rules ADD COLUMN rate_kept bytea;
ALTER TABLE alarm_rules ALTER COLUMN rate_kept SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE alarm_rules DROP COLUMN rate_kept;
