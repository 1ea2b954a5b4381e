-- Webhooks and their outbox. A trigger writes one delivery per webhook of
-- the project in the transaction that appends an alarm event, so that no
-- event is committed without its deliveries, whatever path appended it; a
-- worker claims due deliveries with SKIP LOCKED and a lease, so that a
-- crash at any moment leaves them to be delivered again, same event id.

-- +goose Up
CREATE TABLE webhooks (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    url        text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    secret     text NOT NULL CHECK (length(secret) BETWEEN 16 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_project_id_idx ON webhooks (project_id, id);

CREATE TABLE webhook_deliveries (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id   bigint NOT NULL REFERENCES webhooks ON DELETE CASCADE,
    event_id     bigint NOT NULL REFERENCES alarm_events ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     int NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_status  int,
    last_error   text NOT NULL DEFAULT '',
    delivered_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_id_idx ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_event_id_idx ON webhook_deliveries (event_id);

-- +goose StatementBegin
CREATE FUNCTION enqueue_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event_id)
    SELECT id, NEW.id FROM webhooks WHERE project_id = NEW.project_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER alarm_events_enqueue_webhooks
    AFTER INSERT ON alarm_events
    FOR EACH ROW EXECUTE FUNCTION enqueue_webhook_deliveries();

-- +goose Down
DROP TRIGGER alarm_events_enqueue_webhooks ON alarm_events;
DROP FUNCTION enqueue_webhook_deliveries();
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
