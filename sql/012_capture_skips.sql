-- What capture could not store as the transcript had it (issue 26): a turn cleaned (NUL
-- characters, invalid Unicode), cut, or skipped because the store refused it, and a transcript
-- line that is not valid JSON. One entry per (what, where), newest last, kept with the cursor so
-- `mcp-memory capture --status` can list them and the cursor still moves past the turn.
ALTER TABLE transcript_cursors ADD COLUMN IF NOT EXISTS problems jsonb NOT NULL DEFAULT '[]'::jsonb;
