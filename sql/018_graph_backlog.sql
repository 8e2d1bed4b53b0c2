-- Memories whose names the graph has not read yet: those stored before it existed (016), and
-- those an import inserts verbatim (with what their writer said of them, `given`: {"about": [...],
-- "key": "..."}). The server reads them in the background after it starts, and `mcp-memory backfill`
-- does too (mcp_memory/backlog.py); each row goes in the transaction that records its memory's
-- names. The owner's alone: the application role has no grant on it.
CREATE TABLE IF NOT EXISTS graph_backlog (
    user_id   text NOT NULL,
    memory_id uuid NOT NULL,
    given     jsonb,
    PRIMARY KEY (user_id, memory_id),
    FOREIGN KEY (user_id, memory_id) REFERENCES memories (user_id, id) ON DELETE CASCADE
);

INSERT INTO graph_backlog (user_id, memory_id)
SELECT m.user_id, m.id FROM memories m
WHERE NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.user_id = m.user_id AND me.memory_id = m.id)
ON CONFLICT DO NOTHING;
