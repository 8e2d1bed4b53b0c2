-- API keys (only their hash is kept) and per-principal rate-limit windows.
CREATE TABLE IF NOT EXISTS api_keys (
    user_id      text NOT NULL,
    id           uuid NOT NULL DEFAULT gen_random_uuid(),
    name         text NOT NULL,
    key_hash     text NOT NULL,
    agents       text[],
    projects     text[],
    permissions  text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (user_id, id),
    UNIQUE (user_id, key_hash)
);

CREATE TABLE IF NOT EXISTS rate_limits (
    user_id      text NOT NULL,
    actor        text NOT NULL,
    action       text NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer NOT NULL,
    PRIMARY KEY (user_id, actor, action, window_start)
);
CREATE INDEX IF NOT EXISTS rate_limits_window ON rate_limits (window_start);
