-- Projects, sensors and their readings.

-- +goose Up
CREATE TABLE projects (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES organizations ON DELETE CASCADE,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
    state       text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'archived')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_org_id_idx ON projects (org_id, id);

CREATE TABLE sensors (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sensors_project_id_idx ON sensors (project_id, id);

-- A reading's inputs are two parallel arrays, input_ids[i] -> vals[i],
-- sorted by input id. Measured against jsonb on the same rows (see
-- scripts/bench and the README's Performance section): the arrays are about a
-- quarter smaller per row and COPY in about twice as fast, with equal read
-- times, because float8[] is stored as raw doubles where jsonb stores each
-- number as a numeric with its key as text.
--
-- There is deliberately no foreign key to sensors: PostgreSQL checks a
-- foreign key with one index probe per inserted row, which would halve the
-- ingest rate. The store instead locks the sensor row once per batch, and the
-- trigger below deletes a sensor's readings with it.
CREATE TABLE readings (
    sensor_id bigint      NOT NULL,
    datetime  timestamptz NOT NULL,
    input_ids bigint[]    NOT NULL,
    vals      float8[]    NOT NULL,
    PRIMARY KEY (sensor_id, datetime),
    CHECK (cardinality(input_ids) = cardinality(vals) AND cardinality(input_ids) > 0)
);

-- +goose StatementBegin
CREATE FUNCTION delete_sensor_readings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM readings WHERE sensor_id = OLD.id;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER sensors_delete_readings
    AFTER DELETE ON sensors
    FOR EACH ROW EXECUTE FUNCTION delete_sensor_readings();

-- +goose Down
DROP TRIGGER sensors_delete_readings ON sensors;
DROP FUNCTION delete_sensor_readings();
DROP TABLE readings;
DROP TABLE sensors;
DROP TABLE projects;
