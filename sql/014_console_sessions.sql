-- Console sessions (issue 28): the browser holds a random token, the database only its SHA-256,
-- so nothing a dump or a backup contains is enough to mint or revive a session. A session signed
-- in with an API key names the key and ends when the key is revoked or expires; one signed in
-- with an OAuth token keeps what the token granted (verified at sign-in) and ends no later than
-- the token. Idle and absolute expiry are checked on every request; sign-out deletes the row.
CREATE TABLE IF NOT EXISTS console_sessions (
    user_id      text        NOT NULL,
    id           uuid        NOT NULL DEFAULT gen_random_uuid(),
    token_hash   text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('key', 'jwt', 'local')),
    key_id       uuid,
    credential   jsonb,
    agent_id     text,
    project_id   text,
    all_namespaces boolean   NOT NULL DEFAULT false,
    user_agent   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, id),
    CHECK ((kind = 'key') = (key_id IS NOT NULL)),
    CHECK ((kind = 'jwt') = (credential IS NOT NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS console_sessions_token ON console_sessions (user_id, token_hash);
CREATE INDEX IF NOT EXISTS console_sessions_key ON console_sessions (user_id, key_id);
CREATE INDEX IF NOT EXISTS console_sessions_expiry ON console_sessions (expires_at);
