-- Alarms: each project's levels, each sensor's rules on its inputs and
-- outputs with the state the rules carry from reading to reading, the
-- current alarms and the append-only history of their events. Ingest
-- writes the states, alarms and events in the batch's transaction, under
-- the sensor's lock (store.InsertReadings), so they change with the
-- readings or not at all.

-- +goose Up
CREATE TABLE alarm_levels (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    rank       int NOT NULL CHECK (rank BETWEEN 1 AND 100),
    colour     text NOT NULL CHECK (colour ~ '^#[0-9a-f]{6}$'),
    UNIQUE (project_id, rank),
    UNIQUE (project_id, name)
);

-- Every project starts with the default levels; admins edit them.
-- +goose StatementBegin
CREATE FUNCTION insert_default_alarm_levels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO alarm_levels (project_id, name, rank, colour) VALUES
        (NEW.id, 'Maintenance', 1, '#8c8c8c'),
        (NEW.id, 'Alert', 2, '#f2c94c'),
        (NEW.id, 'Action', 3, '#f2994a'),
        (NEW.id, 'Alarm', 4, '#eb5757');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER projects_default_alarm_levels
    AFTER INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION insert_default_alarm_levels();

INSERT INTO alarm_levels (project_id, name, rank, colour)
SELECT p.id, l.name, l.rank, l.colour FROM projects p
CROSS JOIN (VALUES ('Maintenance', 1, '#8c8c8c'), ('Alert', 2, '#f2c94c'), ('Action', 3, '#f2994a'), ('Alarm', 4, '#eb5757')) AS l(name, rank, colour);

-- A rule watches one input or output of its sensor by id (ids are unique in
-- the service and survive formula edits); the key is kept for display.
-- active and streak are alarms.State.
CREATE TABLE alarm_rules (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sensor_id   bigint NOT NULL REFERENCES sensors ON DELETE CASCADE,
    target_id   bigint NOT NULL,
    target_key  text NOT NULL,
    level_id    bigint NOT NULL REFERENCES alarm_levels,
    direction   text NOT NULL CHECK (direction IN ('above', 'below')),
    threshold   float8 NOT NULL CHECK (threshold > '-Infinity' AND threshold < 'Infinity'),
    deadband    float8 NOT NULL DEFAULT 0 CHECK (deadband >= 0 AND deadband < 'Infinity'),
    persistence int NOT NULL DEFAULT 1 CHECK (persistence BETWEEN 1 AND 1000),
    active      boolean NOT NULL DEFAULT false,
    streak      int NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alarm_rules_sensor_id_idx ON alarm_rules (sensor_id, target_id, id);
CREATE INDEX alarm_rules_level_id_idx ON alarm_rules (level_id);

-- The current alarm of each target not at rest.
CREATE TABLE alarms (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id      bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    sensor_id       bigint NOT NULL REFERENCES sensors ON DELETE CASCADE,
    target_id       bigint NOT NULL,
    target_key      text NOT NULL,
    level_id        bigint NOT NULL REFERENCES alarm_levels,
    since           timestamptz NOT NULL,
    value           float8 NOT NULL,
    acknowledged_at timestamptz,
    acknowledged_by bigint REFERENCES users ON DELETE SET NULL,
    note            text NOT NULL DEFAULT '',
    UNIQUE (sensor_id, target_id)
);
CREATE INDEX alarms_project_id_idx ON alarms (project_id, id);

-- The history: appended to, never rewritten. The level's name is kept, so
-- that an event still reads right after its level is renamed or deleted.
CREATE TABLE alarm_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    sensor_id   bigint NOT NULL REFERENCES sensors ON DELETE CASCADE,
    target_key  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('triggered', 'escalated', 'de-escalated', 'cleared', 'acknowledged', 'late')),
    level_id    bigint REFERENCES alarm_levels ON DELETE SET NULL,
    level_name  text NOT NULL DEFAULT '',
    value       float8,
    reading_at  timestamptz,
    user_id     bigint REFERENCES users ON DELETE SET NULL,
    note        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alarm_events_project_id_idx ON alarm_events (project_id, id);

-- +goose Down
DROP TABLE alarm_events;
DROP TABLE alarms;
DROP TABLE alarm_rules;
DROP TRIGGER projects_default_alarm_levels ON projects;
DROP FUNCTION insert_default_alarm_levels();
DROP TABLE alarm_levels;
