-- Hourly rollups of each sensor's inputs and outputs, so that long ranges
-- are aggregated from a row per hour instead of every reading
-- (store/rollups.go, docs/performance.md).
--
-- rollup_dirty is the queue of hours whose rollups no longer match the
-- readings: ingest and delete add the hours they touch in their own
-- transaction (inputs = true); an edit of a sensor's formulas, constants,
-- calibrations or baselines adds every hour it has rollups for (inputs =
-- false: only the outputs are stale). The maintainer recomputes queued
-- hours in the background and removes them. A query reads the hours that
-- are not queued from the rollups and the others from the readings.
--
-- rollup_hours has a row per hour with readings: how many, and the version
-- of the sensor's instance the outputs of the hour were computed with; an
-- hour whose version is not the sensor's is read from the readings for
-- its outputs, whatever the queue says.
--
-- Sums are kept in two parts, as stats.Sums adds them, so that no finite
-- values overflow them.

-- +goose Up
CREATE TABLE rollup_dirty (
    sensor_id bigint      NOT NULL REFERENCES sensors ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    inputs    boolean     NOT NULL,
    PRIMARY KEY (sensor_id, hour)
);

CREATE TABLE rollup_hours (
    sensor_id bigint      NOT NULL REFERENCES sensors ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    n         bigint      NOT NULL,
    version   bigint      NOT NULL,
    PRIMARY KEY (sensor_id, hour)
);

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

-- Where readings are a hypertable, the two large rollup tables are too,
-- partitioned by hour as readings are by datetime. Continuous aggregates
-- would not do: they can only hold what SQL computes, not outputs of the
-- formulas evaluated in Go, and their invalidation follows the rows, not
-- an edit of a sensor's formulas.
-- +goose StatementBegin
DO $$
BEGIN
    -- Nested, so that the view is only looked up where it exists.
    IF to_regclass('timescaledb_information.hypertables') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM timescaledb_information.hypertables WHERE hypertable_name = 'readings') THEN
            PERFORM create_hypertable('rollup_inputs', 'hour',
                chunk_time_interval => INTERVAL '90 days', create_default_indexes => false, migrate_data => true);
            PERFORM create_hypertable('rollup_outputs', 'hour',
                chunk_time_interval => INTERVAL '90 days', create_default_indexes => false, migrate_data => true);
        END IF;
    END IF;
END;
$$;
-- +goose StatementEnd

-- The readings stored before rollups existed are queued, so the maintainer
-- builds their rollups; until it has, they are read as before.
INSERT INTO rollup_dirty (sensor_id, hour, inputs)
SELECT DISTINCT sensor_id, date_bin('1 hour', datetime, TIMESTAMPTZ '2000-01-01 00:00+00'), true FROM readings;

-- +goose Down
DROP TABLE rollup_outputs;
DROP TABLE rollup_inputs;
DROP TABLE rollup_hours;
DROP TABLE rollup_dirty;
