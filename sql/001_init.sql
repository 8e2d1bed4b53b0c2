-- Foundation schema. Every tenant table leads with user_id, and so does every primary key and
-- unique index, so the schema can be distributed by user_id unchanged.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What the database was built with (embedding model and dimension, schema facts).
CREATE TABLE IF NOT EXISTS meta (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS memories (
    user_id         text NOT NULL,
    id              uuid NOT NULL DEFAULT gen_random_uuid(),
    agent_id        text,
    project_id      text,
    kind            text NOT NULL DEFAULT 'note'
                    CHECK (kind IN ('fact', 'preference', 'decision', 'episode', 'procedure', 'identity', 'note')),
    title           text,
    content         text NOT NULL CHECK (length(btrim(content)) > 0),
    tags            text[] NOT NULL DEFAULT '{}',
    metadata        jsonb NOT NULL DEFAULT '{}',
    importance      real NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    confidence      real NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    pinned          boolean NOT NULL DEFAULT false,
    priority        smallint NOT NULL DEFAULT 0,
    source          text,
    content_hash    text NOT NULL,
    embedding       vector,
    embedding_model text,
    fts             tsvector GENERATED ALWAYS AS (
                        setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
                        setweight(to_tsvector('english', content), 'B')
                    ) STORED,
    occurred_at     timestamptz NOT NULL DEFAULT now(),
    valid_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    version         integer NOT NULL DEFAULT 1,
    access_count    integer NOT NULL DEFAULT 0,
    last_accessed   timestamptz,
    deleted_at      timestamptz,
    deleted_reason  text,
    superseded_by   uuid,
    contradicted    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (user_id, id)
);

CREATE INDEX IF NOT EXISTS memories_scope_time
    ON memories (user_id, agent_id, project_id, occurred_at DESC);
CREATE INDEX IF NOT EXISTS memories_fts ON memories USING gin (fts);
CREATE INDEX IF NOT EXISTS memories_content_trgm ON memories USING gin (content gin_trgm_ops);
CREATE INDEX IF NOT EXISTS memories_deleted ON memories (user_id, deleted_at) WHERE deleted_at IS NOT NULL;
-- One live copy of a text per scope; NULL agent/project are folded so they compare equal.
CREATE UNIQUE INDEX IF NOT EXISTS memories_scope_hash
    ON memories (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), content_hash)
    WHERE deleted_at IS NULL;

-- Append-only audit trail: rows are inserted with every mutation and only retention removes them.
CREATE TABLE IF NOT EXISTS memory_history (
    user_id    text NOT NULL,
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    memory_id  uuid NOT NULL,
    event      text NOT NULL
               CHECK (event IN ('ADD', 'UPDATE', 'DELETE', 'RESTORE', 'PIN', 'UNPIN', 'PURGE')),
    old        jsonb,
    new        jsonb,
    actor      text NOT NULL,
    client     text,
    request_id text,
    reason     text,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (user_id, seq)
);
CREATE INDEX IF NOT EXISTS memory_history_memory ON memory_history (user_id, memory_id, seq);

CREATE OR REPLACE FUNCTION memory_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'memory_history is append-only';
END $$;

DROP TRIGGER IF EXISTS memory_history_no_update ON memory_history;
CREATE TRIGGER memory_history_no_update BEFORE UPDATE ON memory_history
    FOR EACH ROW EXECUTE FUNCTION memory_history_append_only();

-- A retried write with the same key returns the memory the first attempt made.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    user_id    text NOT NULL,
    key        text NOT NULL,
    memory_id  uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
