-- Auto-capture (mcp_memory/capture): how much of each transcript was already stored, so a hook
-- that runs again on the same or a longer transcript stores only what is new. `hashes` holds a
-- short digest of every turn taken, in order, and `memory_ids` the episode each became: a
-- transcript rewritten or cut short is recognised by the first turn whose digest differs. That
-- turn is compared with its episode (cut short: nothing to store; grown: the episode is updated),
-- capture resumes after it, and content dedup keeps unchanged turns from being stored twice.
CREATE TABLE IF NOT EXISTS transcript_cursors (
    user_id     text NOT NULL,
    transcript  text NOT NULL,
    agent_id    text,
    project_id  text,
    session_id  text,
    path        text,
    turns       integer NOT NULL DEFAULT 0 CHECK (turns >= 0),
    hashes      text[] NOT NULL DEFAULT '{}',
    memory_ids  uuid[] NOT NULL DEFAULT '{}',
    rewrites    integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, transcript)
);
