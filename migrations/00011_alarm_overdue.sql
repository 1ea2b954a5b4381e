-- Overdue rules: a sensor without a reading for longer than after_seconds
-- raises an alarm at its level. The service checks them in the background
-- (store.CheckOverdue), one replica at a time; the alarm is the sensor's
-- current alarm with target_id 0, which no input or output has (their ids
-- come from a sequence that starts at 1).

-- +goose Up
CREATE TABLE alarm_overdue (
    sensor_id     bigint PRIMARY KEY REFERENCES sensors ON DELETE CASCADE,
    level_id      bigint NOT NULL REFERENCES alarm_levels,
    after_seconds int NOT NULL CHECK (after_seconds BETWEEN 60 AND 31622400),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alarm_overdue_level_id_idx ON alarm_overdue (level_id);

-- +goose Down
DROP TABLE alarm_overdue;
