-- An hour's rollup is one row: rollup_hours keeps, beside the count and
-- the version, every input's and every output's statistics over the hour,
-- packed (store/hourrollup.go): count, sum, minimum and maximum in inputs
-- and outputs (48 bytes a series), the first and last values and times
-- apart in edges (32 bytes), read only for first, last and rate. A year of a sensor is
-- then 8,784 rows whatever its inputs and outputs, read in one range scan
-- and merged into buckets by the service, where rollup_inputs and
-- rollup_outputs held a row per hour and series, merged per bucket in SQL
-- (131,760 rows for 10 inputs and 5 outputs).
--
-- quarters keeps the same for each quarter of the hour, for the buckets
-- that start in the middle of an hour: every zone's offset is a multiple
-- of 15 minutes, so a day of Asia/Kolkata is 23 hours and four quarters.
-- At 4.8 kB for 15 series it is kept out of line (TOAST), and read only
-- for such hours.
--
-- outputs is NULL where the outputs are not rolled up (a sensor with
-- linked inputs), empty where the sensor has none; a row whose inputs are
-- NULL was written before this migration and is read from the readings
-- until the maintainer, to which every such hour is queued here, has
-- recomputed it.

-- +goose Up
ALTER TABLE rollup_hours ADD COLUMN inputs bytea, ADD COLUMN outputs bytea, ADD COLUMN edges bytea, ADD COLUMN quarters bytea;
DROP TABLE rollup_inputs;
DROP TABLE rollup_outputs;
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT sensor_id, hour, true FROM rollup_hours
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true;

-- +goose Down
CREATE TABLE rollup_inputs (
    sensor_id bigint      NOT NULL REFERENCES sensors ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    id        bigint      NOT NULL,
    n         bigint      NOT NULL,
    sum_lo    float8      NOT NULL,
    sum_hi    float8      NOT NULL,
    min       float8      NOT NULL,
    max       float8      NOT NULL,
    first     float8      NOT NULL,
    first_at  timestamptz NOT NULL,
    last      float8      NOT NULL,
    last_at   timestamptz NOT NULL,
    PRIMARY KEY (sensor_id, hour, id)
);
CREATE TABLE rollup_outputs (LIKE rollup_inputs INCLUDING ALL);
ALTER TABLE rollup_outputs ADD FOREIGN KEY (sensor_id) REFERENCES sensors ON DELETE CASCADE;
INSERT INTO rollup_dirty AS d (sensor_id, hour, inputs)
SELECT sensor_id, hour, true FROM rollup_hours
ON CONFLICT (sensor_id, hour) DO UPDATE SET inputs = true;
ALTER TABLE rollup_hours DROP COLUMN inputs, DROP COLUMN outputs, DROP COLUMN edges, DROP COLUMN quarters;
