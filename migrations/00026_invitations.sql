-- Invitations let an owner add a member without an operator: the invitee
-- exchanges the one-time code for their first token. As for tokens, only
-- the SHA-256 of the code is kept.

-- +goose Up
CREATE TABLE invitations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES organizations ON DELETE CASCADE,
    email       text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    role        member_role NOT NULL,
    code_hash   bytea NOT NULL UNIQUE CHECK (length(code_hash) = 32),
    invited_by  bigint REFERENCES users ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by bigint REFERENCES users ON DELETE SET NULL,
    revoked_at  timestamptz
);
CREATE INDEX invitations_org_id_idx ON invitations (org_id, id);

-- +goose Down
DROP TABLE invitations;
