-- A user's turns by when they were said: the turns around a speaker's own (the conversations they
-- take part in) are counted by their time, a range of this index each, not by reading every turn
-- of the user (repository/graph_reads.py `share_spoken`). Turns only: notes are never read so.
CREATE INDEX IF NOT EXISTS memories_episode_time ON memories (user_id, occurred_at) WHERE kind = 'episode';
