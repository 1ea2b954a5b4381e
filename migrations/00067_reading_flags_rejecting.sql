-- The flags in force that reject readings whole, by sensor: whether a
-- sensor has any is one probe of this index, which a page of readings
-- asks each time (store.DB.ReadPage), so that the pages of the sensors
-- without any, most of them, skip the check of every row against them.

-- +goose Up
CREATE INDEX reading_flags_rejecting_idx ON reading_flags (sensor_id)
    WHERE input_id IS NULL AND flag = 'rejected' AND cleared_at IS NULL;

-- +goose Down
DROP INDEX reading_flags_rejecting_idx;
