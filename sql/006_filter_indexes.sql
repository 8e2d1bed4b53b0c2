-- A tag or kind filter combines with the full-text and trigram indexes (a bitmap AND) instead of
-- rechecking every row that holds a query word: for a 5% tag at 100,000 memories, 57 ms -> 5 ms.
CREATE INDEX IF NOT EXISTS memories_tags ON memories USING gin (tags);
CREATE INDEX IF NOT EXISTS memories_kind ON memories (user_id, kind);
