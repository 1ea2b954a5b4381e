-- Storms bounded at their source: of one target's changes within one write
-- of readings, only a few raise events (alarms.Coalesce), and each event
-- counts the changes before it, since the target's previous event of that
-- write, that raised none. The constant default adds the column without
-- rewriting the history.

-- +goose Up
ALTER TABLE alarm_events ADD COLUMN coalesced int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE alarm_events DROP COLUMN coalesced;
