-- Every stored date must be one a search can age. Dates at the ends of the timestamp range were
-- stored as -infinity / infinity by the drivers; they take the time the memory was written, and
-- the repair is recorded in each memory's history.
WITH repaired AS (
    UPDATE memories SET occurred_at = created_at, updated_at = now(), version = version + 1
    WHERE NOT isfinite(occurred_at)
    RETURNING user_id, id, occurred_at
)
INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, reason)
SELECT user_id, id, 'UPDATE', jsonb_build_object('occurred_at', 'infinite'),
       jsonb_build_object('occurred_at', occurred_at), 'migration:008',
       'occurred_at was outside the supported range (0001-01-02 to 9999-12-30 UTC)'
FROM repaired;

-- An idempotency key remembers the request it was used for, so a key reused for a different
-- request is refused instead of answering with the first memory. NULL: a key from before.
ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS request_hash text;
