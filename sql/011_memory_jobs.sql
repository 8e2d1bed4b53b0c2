-- Durable jobs (issue 17): a memory that was written gets a job, in the write's own transaction,
-- asking a model what it does to the older memories it touches. Workers in any server process
-- claim jobs with FOR UPDATE SKIP LOCKED; a claimed job whose lease ran out (its worker died) is
-- taken again; after max_attempts it stays here as a dead letter until retried or cancelled.
CREATE TABLE IF NOT EXISTS memory_jobs (
    user_id      text NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    kind         text NOT NULL DEFAULT 'decide' CHECK (kind IN ('decide')),
    memory_id    uuid NOT NULL,
    -- Who wrote the memory: the decision acts as that principal (its scope and permissions).
    principal    jsonb NOT NULL,
    -- The memories the writer superseded explicitly: no decision ever touches them.
    explicit     uuid[] NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'running', 'done', 'dead', 'cancelled')),
    attempts     integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL CHECK (max_attempts >= 1),
    run_after    timestamptz NOT NULL DEFAULT now(),
    locked_by    text,
    locked_until timestamptz,
    last_error   text,
    -- What was decided and applied: action, targets, reason, provider, model, skipped targets.
    result       jsonb,
    tokens       integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    PRIMARY KEY (user_id, id),
    -- One decision per memory: enqueueing twice (a retried write) is a no-op.
    UNIQUE (user_id, memory_id, kind)
);
-- Workers look for due jobs and expired leases across users.
CREATE INDEX IF NOT EXISTS memory_jobs_due ON memory_jobs (run_after) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS memory_jobs_leases ON memory_jobs (locked_until) WHERE status = 'running';
-- Per-user budgets sum recent work.
CREATE INDEX IF NOT EXISTS memory_jobs_user_recent ON memory_jobs (user_id, finished_at)
    WHERE finished_at IS NOT NULL;
