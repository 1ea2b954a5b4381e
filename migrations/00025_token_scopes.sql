-- A token may be narrowed to one organization, one of its projects and
-- some of that project's sensors, with a role ceiling; a device token may
-- only post readings. The effective role is computed at each request as the
-- lower of the member's current role and scope_role, so that demoting the
-- user demotes their tokens too. A token goes with the project it is
-- limited to.

-- +goose Up
ALTER TABLE api_tokens
    ADD COLUMN scope_org_id     bigint REFERENCES organizations ON DELETE CASCADE,
    ADD COLUMN scope_project_id bigint REFERENCES projects ON DELETE CASCADE,
    ADD COLUMN scope_sensor_ids bigint[] CHECK (cardinality(scope_sensor_ids) BETWEEN 1 AND 100),
    ADD COLUMN scope_role       member_role,
    ADD COLUMN device           boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT api_tokens_scope_check CHECK (
        (scope_project_id IS NULL OR scope_org_id IS NOT NULL)
        AND (scope_sensor_ids IS NULL OR scope_project_id IS NOT NULL)
        AND (scope_role IS NULL OR scope_org_id IS NOT NULL)
        AND (NOT device OR (scope_project_id IS NOT NULL AND scope_role = 'editor')));
CREATE INDEX api_tokens_scope_project_id_idx ON api_tokens (scope_project_id) WHERE scope_project_id IS NOT NULL;
CREATE INDEX api_tokens_scope_org_id_idx ON api_tokens (scope_org_id) WHERE scope_org_id IS NOT NULL;

-- +goose Down
ALTER TABLE api_tokens
    DROP CONSTRAINT api_tokens_scope_check,
    DROP COLUMN device,
    DROP COLUMN scope_role,
    DROP COLUMN scope_sensor_ids,
    DROP COLUMN scope_project_id,
    DROP COLUMN scope_org_id;
