-- What a write of readings pays for its alarms, per batch rather than per
-- row (make bench row 11e, docs/performance.md):
--
-- The outbox (00012) is written once per statement that appends events,
-- from the statement's new rows (a transition table), instead of by a
-- PL/pgSQL call per event: a batch appends its events in one statement
-- (store.ApplyAlarms). Each event still gets one delivery per webhook of
-- its project in the transaction that appends it, in the events' order.
--
-- alarm_rules leaves half of each page free, so that the UPDATE that
-- writes a rule's state and what a rate rule keeps (a few kB, in the row)
-- finds room for the new version on the row's page: a HOT update, with
-- no entry in the table's three indexes. Packed, 40 % of them were not.

-- +goose Up
-- The function keeps its name, which 00012's Down drops.
DROP TRIGGER alarm_events_enqueue_webhooks ON alarm_events;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION enqueue_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, event_id)
    SELECT w.id, e.id FROM appended e JOIN webhooks w ON w.project_id = e.project_id
    ORDER BY e.id, w.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER alarm_events_enqueue_webhooks
    AFTER INSERT ON alarm_events
    REFERENCING NEW TABLE AS appended
    FOR EACH STATEMENT EXECUTE FUNCTION enqueue_webhook_deliveries();

ALTER TABLE alarm_rules SET (fillfactor = 50);

-- +goose Down
ALTER TABLE alarm_rules RESET (fillfactor);

DROP TRIGGER alarm_events_enqueue_webhooks ON alarm_events;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION enqueue_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
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
