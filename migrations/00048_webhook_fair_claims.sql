-- Fair webhook deliveries (store.ClaimDeliveries): a claim takes a few due
-- deliveries of each webhook in turn, the least recently served first
-- (served_at), under the webhook's row lock, and counts the deliveries of
-- the webhook that are leased (leased_until, set by the claim and cleared
-- when the attempt is recorded) so that no webhook has more than its bound
-- in flight on all replicas together. The claim looks for webhooks with
-- pending deliveries by skipping through the (webhook_id, next_at) index,
-- one probe a webhook, however long one webhook's backlog.

-- +goose Up
ALTER TABLE webhooks ADD COLUMN served_at timestamptz;
ALTER TABLE webhook_deliveries ADD COLUMN leased_until timestamptz;
DROP INDEX webhook_deliveries_due_idx;
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, next_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (webhook_id) WHERE leased_until IS NOT NULL;

-- +goose Down
DROP INDEX webhook_deliveries_leased_idx;
DROP INDEX webhook_deliveries_pending_idx;
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at) WHERE status = 'pending';
ALTER TABLE webhook_deliveries DROP COLUMN leased_until;
ALTER TABLE webhooks DROP COLUMN served_at;
