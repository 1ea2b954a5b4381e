-- Organizations, users, memberships and API tokens.

-- +goose Up
CREATE TABLE organizations (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email      text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    name       text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Emails compare case-insensitively: ada@example.com and Ada@Example.com are one user.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- The enum's order is the roles' order: each includes the ones before it,
-- so "role >= 'editor'" reads as "at least editor".
CREATE TYPE member_role AS ENUM ('viewer', 'editor', 'admin', 'owner');

CREATE TABLE memberships (
    org_id     bigint NOT NULL REFERENCES organizations ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    role       member_role NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user_id_idx ON memberships (user_id);

-- Only the SHA-256 of a token's secret is kept; prefix is what people see.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    secret_hash  bytea NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    expires_at   timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_user_id_idx ON api_tokens (user_id);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE memberships;
DROP TYPE member_role;
DROP TABLE users;
DROP TABLE organizations;
