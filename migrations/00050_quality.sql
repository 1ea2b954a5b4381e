-- Data quality (issue 29): flags on readings, the validity checks that set
-- them at ingest, and the audit trail of every change that alters what
-- history means or who may see it.
--
-- A flag covers a sensor's readings from from_at to to_at, both
-- inclusive: one reading when they are equal, a range otherwise, and
-- readings that arrive in the range later too. input_id NULL flags the
-- whole reading, else one input. A flag is never deleted nor changed but
-- for its clearing (cleared_at), so that the flags in force at any past
-- instant are known: those set at or before it and not cleared by then.
-- The stored values are never touched.

-- +goose Up
CREATE TABLE reading_flags (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sensor_id   bigint      NOT NULL REFERENCES sensors ON DELETE CASCADE,
    input_id    bigint,
    flag        text        NOT NULL CHECK (flag IN ('suspect', 'rejected')),
    from_at     timestamptz NOT NULL,
    to_at       timestamptz NOT NULL CHECK (to_at >= from_at),
    reason      text        NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    check_kind  text        CHECK (check_kind IN ('range', 'spike', 'rate', 'stuck')),
    set_by      bigint      REFERENCES users ON DELETE SET NULL,
    set_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    cleared_at  timestamptz,
    cleared_by  bigint      REFERENCES users ON DELETE SET NULL,
    clear_reason text       CHECK (length(clear_reason) <= 500)
);
CREATE INDEX reading_flags_sensor_idx ON reading_flags (sensor_id, from_at);
-- A check flags a value once, however often its readings are written.
CREATE UNIQUE INDEX reading_flags_check_once ON reading_flags (sensor_id, from_at, coalesce(input_id, 0), check_kind)
    WHERE check_kind IS NOT NULL AND cleared_at IS NULL;

-- A sensor's validity checks, replaced whole: read once per write of its
-- readings, with the sensor's lock.
CREATE TABLE sensor_checks (
    sensor_id  bigint      PRIMARY KEY REFERENCES sensors ON DELETE CASCADE,
    checks     jsonb       NOT NULL CHECK (jsonb_typeof(checks) = 'array'),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The audit trail: who changed what, when, and the before and after. No
-- foreign key to projects or sensors, so that the trail of a deleted one
-- stays with its organization. The entries of a sensor's configuration
-- (kinds formulas, constants, calibrations, baselines, links, blueprint)
-- carry its whole instance before and after: reads as of a past instant
-- take the instance in force then from them.
CREATE TABLE audit_entries (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id     bigint      NOT NULL REFERENCES organizations ON DELETE CASCADE,
    project_id bigint,
    sensor_id  bigint,
    kind       text        NOT NULL,
    action     text        NOT NULL,
    actor      bigint      REFERENCES users ON DELETE SET NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    before     jsonb,
    after      jsonb
);
CREATE INDEX audit_entries_org_idx ON audit_entries (org_id, id);
CREATE INDEX audit_entries_project_idx ON audit_entries (project_id, id);
CREATE INDEX audit_entries_sensor_idx ON audit_entries (sensor_id, at);

-- A rate rule watches its target's change over a window (rate_window_s
-- seconds), per rate_per_s seconds, instead of its value.
ALTER TABLE alarm_rules
    ADD COLUMN rate_window_s integer CHECK (rate_window_s BETWEEN 60 AND 2678400),
    ADD COLUMN rate_per_s integer CHECK (rate_per_s BETWEEN 1 AND 31536000),
    ADD CHECK ((rate_window_s IS NULL) = (rate_per_s IS NULL));

-- +goose Down
ALTER TABLE alarm_rules DROP COLUMN rate_per_s, DROP COLUMN rate_window_s;
DROP TABLE audit_entries;
DROP TABLE sensor_checks;
DROP TABLE reading_flags;
