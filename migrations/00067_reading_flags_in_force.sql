-- The flags in force by sensor, and those that reject readings whole:
-- whether a sensor has any of either is one probe of these indexes,
-- which a page of readings asks each time (store.DB.ReadPage), so that
-- the pages of the sensors without, most of them, skip reading the
-- flags over their range and checking every reading against them.

-- +goose Up
CREATE INDEX reading_flags_in_force_idx ON reading_flags (sensor_id) WHERE cleared_at IS NULL;
CREATE INDEX reading_flags_rejecting_idx ON reading_flags (sensor_id)
    WHERE input_id IS NULL AND flag = 'rejected' AND cleared_at IS NULL;

-- +goose Down
DROP INDEX reading_flags_rejecting_idx;
DROP INDEX reading_flags_in_force_idx;
