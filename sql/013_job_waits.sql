-- Decisions that wait instead of dying (issue 27). A queued job can wait for a reason that is
-- not its fault (no client that may see its memories offers sampling, the endpoint is down, a
-- budget is spent): `waiting` says why, and an attempt is not counted. `called_at` is when a
-- model was last asked for it, so only model calls count against the per-minute limit.
-- `unbudgeted`: the user lifted the budget wait of this job (`mcp-memory jobs retry`).
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS waiting text;
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS called_at timestamptz;
ALTER TABLE memory_jobs ADD COLUMN IF NOT EXISTS unbudgeted boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS memory_jobs_user_called ON memory_jobs (user_id, called_at)
    WHERE called_at IS NOT NULL;
