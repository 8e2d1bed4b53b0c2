-- Extraction (issue 27 item 10): with a model configured, each captured session delta gets one
-- job of kind 'extract' (keyed by the delta's last episode, so capturing it again is a no-op) that
-- asks the model for the delta's durable facts; each fact is then written, and decided, like any
-- write. `sources`: the delta's episodes, in order. `session_id`: its session, for the caps.
ALTER TABLE memory_jobs DROP CONSTRAINT IF EXISTS memory_jobs_kind_check;
ALTER TABLE memory_jobs ADD CONSTRAINT memory_jobs_kind_check CHECK (kind IN ('decide', 'extract'));
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS sources uuid[] NOT NULL DEFAULT '{}';
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS session_id text;
CREATE INDEX IF NOT EXISTS memory_jobs_extract_recent ON memory_jobs (user_id, created_at)
    WHERE kind = 'extract';
