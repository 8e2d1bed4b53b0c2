-- Vectors already computed, by model and text hash: re-embedding identical text (imports,
-- re-writes, a backfill restarted) costs nothing. Not tenant data: a vector of a text hash.
CREATE TABLE IF NOT EXISTS embedding_cache (
    model      text NOT NULL,
    text_hash  text NOT NULL,
    embedding  vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, text_hash)
);

-- Rows still to embed (fail-open writes, a model switch) are found without a scan.
CREATE INDEX IF NOT EXISTS memories_unembedded ON memories (id)
    WHERE embedding IS NULL AND deleted_at IS NULL;
