-- Every input id a sensor's readings have ever used, so that ingest can
-- bound how many distinct inputs a sensor without a blueprint collects, and
-- so every page, CSV and aggregate of it stays a bounded width.
--
-- The set lives in its own row rather than a column of sensors: ingest holds
-- the sensor's row FOR SHARE, so that batches to one sensor run side by
-- side, and two of them bringing new ids would deadlock upgrading that share
-- lock to update the row. This row is locked (by the upsert) only by a batch
-- that brings ids the set lacks, so those batches queue on it instead.
-- The set only grows: deleting readings does not free their ids.

-- +goose Up
CREATE TABLE sensor_inputs (
    sensor_id bigint PRIMARY KEY REFERENCES sensors ON DELETE CASCADE,
    input_ids bigint[] NOT NULL -- ascending, each once
);
INSERT INTO sensor_inputs (sensor_id, input_ids)
SELECT r.sensor_id, array_agg(DISTINCT u.id ORDER BY u.id)
FROM readings r CROSS JOIN LATERAL unnest(r.input_ids) AS u(id)
GROUP BY r.sensor_id;

-- +goose Down
DROP TABLE sensor_inputs;
