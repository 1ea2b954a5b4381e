-- What a rate rule keeps of its window (00062) in parts, so that a write
-- after the newest reading appends its own values and drops the parts
-- that left the window, instead of rewriting the whole window:
-- alarm_rules.rate_kept keeps where the window stands and the values
-- after the last part; rate_kept_parts the runs of values before, each of
-- at most store.KeptPartLen values (under 8 kB), named by its last
-- instant (Unix microseconds). Both stay in their rows: under
-- toast_tuple_target, a part is written once and read without TOAST, and
-- its floats, which never compress, are not tried. A window kept before
-- is a rate_kept without parts, which the next write splits.
-- +goose Up
-- A rule's parts go with its sensor; the statements that delete rules
-- delete theirs (no key on alarm_rules, which 00010's Down drops).
CREATE TABLE rate_kept_parts (
    rule_id bigint NOT NULL,
    upto bigint NOT NULL,
    sensor_id bigint NOT NULL REFERENCES sensors (id) ON DELETE CASCADE,
    part bytea NOT NULL,
    PRIMARY KEY (rule_id, upto)
) WITH (toast_tuple_target = 8160);
CREATE INDEX ON rate_kept_parts (sensor_id);
ALTER TABLE rate_kept_parts ALTER COLUMN part SET STORAGE MAIN;
ALTER TABLE alarm_rules SET (toast_tuple_target = 8160);
ALTER TABLE alarm_rules ALTER COLUMN rate_kept SET STORAGE MAIN;

-- +goose Down
-- Without its parts, what is kept is not a window: forgotten, the next
-- write reads the readings.
UPDATE alarm_rules SET rate_kept = NULL WHERE rate_kept IS NOT NULL;
DROP TABLE rate_kept_parts;
ALTER TABLE alarm_rules RESET (toast_tuple_target);
ALTER TABLE alarm_rules ALTER COLUMN rate_kept SET STORAGE EXTERNAL;
