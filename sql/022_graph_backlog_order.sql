-- The backlog is read oldest first (a first name meets the full names written before it). Ordered
-- through its memories, each batch joined and sorted every row left: a million imported memories
-- read 200 at a time sorted a million rows 5,000 times. Each row now carries its memory's
-- created_at, and the batch is the index's first rows. Nullable: a row a server of the version
-- before enqueues (a rolling upgrade) is read first.
ALTER TABLE graph_backlog ADD COLUMN IF NOT EXISTS created_at timestamptz;

UPDATE graph_backlog b SET created_at = m.created_at
FROM memories m
WHERE m.user_id = b.user_id AND m.id = b.memory_id AND b.created_at IS NULL;

CREATE INDEX IF NOT EXISTS graph_backlog_order ON graph_backlog (created_at NULLS FIRST, memory_id);
