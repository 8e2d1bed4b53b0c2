-- Session summaries (issue 49): extraction's model writes each captured session's summary beside
-- its facts, kind 'session_summary', derived_from the session's turns (memory_edges).
ALTER TABLE memories DROP CONSTRAINT IF EXISTS memories_kind_check;
ALTER TABLE memories ADD CONSTRAINT memories_kind_check
    CHECK (kind IN ('fact', 'preference', 'decision', 'episode', 'procedure', 'identity', 'note', 'session_summary'));
