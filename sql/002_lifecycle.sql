-- Forget by query: a preview issues a token bound to its principal and exactly these memories
-- at these versions; execute consumes it once. Only the token's hash is stored.
CREATE TABLE IF NOT EXISTS forget_tokens (
    user_id     text NOT NULL,
    token_hash  text NOT NULL,
    actor       text NOT NULL,
    agent_id    text,
    project_id  text,
    memory_ids  uuid[] NOT NULL,
    versions    integer[] NOT NULL,
    query       text,
    filters     jsonb,
    force       boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    PRIMARY KEY (user_id, token_hash)
);
CREATE INDEX IF NOT EXISTS forget_tokens_expiry ON forget_tokens (expires_at);

-- Retention scans by age across users.
CREATE INDEX IF NOT EXISTS memory_history_created ON memory_history (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS memories_deleted_at ON memories (deleted_at) WHERE deleted_at IS NOT NULL;

-- Successors: "which memories does this one replace" is asked when ranking and in history.
CREATE INDEX IF NOT EXISTS memories_superseded_by ON memories (user_id, superseded_by)
    WHERE superseded_by IS NOT NULL;
