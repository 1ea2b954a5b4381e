-- Blueprints, and the instances sensors make of them.

-- +goose Up
CREATE TABLE blueprints (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES organizations ON DELETE CASCADE,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
    -- Arrays of {key, name, unit[, default | formula]}, read and written
    -- whole: nothing queries inside them.
    inputs      jsonb NOT NULL CHECK (jsonb_typeof(inputs) = 'array'),
    constants   jsonb NOT NULL CHECK (jsonb_typeof(constants) = 'array'),
    outputs     jsonb NOT NULL CHECK (jsonb_typeof(outputs) = 'array'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blueprints_org_id_idx ON blueprints (org_id, id);

-- Every input and output of every instance gets an id from here, so that
-- ids are unique across the service and never reused.
CREATE SEQUENCE instance_port_ids;

-- A sensor's instance is its own copy of a blueprint (inputs and outputs
-- with their ids, formulas, constants, dated calibrations, a version that
-- goes up with every change), kept whole on the sensor because it is read
-- and written whole. Deleting the blueprint leaves the instance as it is.
ALTER TABLE sensors
    ADD COLUMN blueprint_id bigint REFERENCES blueprints ON DELETE SET NULL,
    ADD COLUMN instance jsonb CHECK (instance IS NULL OR jsonb_typeof(instance) = 'object');

-- +goose Down
ALTER TABLE sensors DROP COLUMN instance, DROP COLUMN blueprint_id;
DROP SEQUENCE instance_port_ids;
DROP TABLE blueprints;
