-- Every change of what a token speaks for is notified on readings_auth
-- (store.AuthChannel), at commit, whatever made it (a request, the admin
-- command, a cascade from a deleted user, organization or project): each
-- replica keeps who its recent tokens speak for (authcache) and forgets
-- it all when told. A token's use (last_used_at), written in batches,
-- changes nothing of it and is not notified; nor is a new token, which no
-- replica can have kept.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('readings_auth', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER api_tokens_auth_changed AFTER UPDATE ON api_tokens FOR EACH ROW
    WHEN ((OLD.user_id, OLD.secret_hash, OLD.expires_at, OLD.revoked_at, OLD.scope_org_id, OLD.scope_project_id,
           OLD.scope_sensor_ids, OLD.scope_role, OLD.device)
          IS DISTINCT FROM
          (NEW.user_id, NEW.secret_hash, NEW.expires_at, NEW.revoked_at, NEW.scope_org_id, NEW.scope_project_id,
           NEW.scope_sensor_ids, NEW.scope_role, NEW.device))
    EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER api_tokens_auth_deleted AFTER DELETE OR TRUNCATE ON api_tokens FOR EACH STATEMENT
    EXECUTE FUNCTION notify_auth_change();
CREATE TRIGGER memberships_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memberships FOR EACH STATEMENT
    EXECUTE FUNCTION notify_auth_change();

-- +goose Down
DROP TRIGGER memberships_auth_changed ON memberships;
DROP TRIGGER api_tokens_auth_deleted ON api_tokens;
DROP TRIGGER api_tokens_auth_changed ON api_tokens;
DROP FUNCTION notify_auth_change();
