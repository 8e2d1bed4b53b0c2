-- Search passes part of a question's score to the episode written next in its scope (its reply):
-- this index finds that episode with one probe instead of scanning the user's rows.
CREATE INDEX IF NOT EXISTS memories_episode_sequence
    ON memories (user_id, occurred_at, created_at, id)
    WHERE kind = 'episode' AND deleted_at IS NULL;
