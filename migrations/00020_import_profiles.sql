-- Import profiles: how a sensor's datalogger files are read. columns maps
-- a file's column name to the input id it feeds (a JSON object of ids);
-- tz and dst say how the logger's local datetimes become instants. A
-- file's query parameters override them.

-- +goose Up
CREATE TABLE import_profiles (
    sensor_id  bigint PRIMARY KEY REFERENCES sensors ON DELETE CASCADE,
    columns    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(columns) = 'object'),
    tz         text NOT NULL DEFAULT 'UTC',
    dst        text CHECK (dst IN ('earlier', 'later')),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE import_profiles;
