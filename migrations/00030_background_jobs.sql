-- Background jobs that must run once across every replica of the service
-- (store.RunJob): a row per job, locked by the replica running it, with
-- when it last finished, so that replicas ticking at different moments run
-- it once an interval between them, not once each.

-- +goose Up
CREATE TABLE background_jobs (
    name        text        PRIMARY KEY,
    finished_at timestamptz
);

-- +goose Down
DROP TABLE background_jobs;
