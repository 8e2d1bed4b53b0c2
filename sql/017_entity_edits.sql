-- A person's corrections of the graph (issue 48 item 5), each recorded so it can be undone:
--   merge: entity `other_id` taken into `entity_id` (its mentions and facts moved, its row kept with
--          merged_into, its names added to the target's aliases);
--   split: a merge undone (`rows` names the merge it undid);
--   key:   the attribute of one memory's keyed facts changed or removed.
-- `rows` holds exactly what moved or changed (the rows as they were, by PostgreSQL's own to_jsonb),
-- so an undo puts back exactly that. `entity_ids` are the entities an edit touched: an edit is
-- undone only while no later live edit touches any of them (the later one first).
-- Append-only: the application role may set undone_at / undone_by, nothing else, and never delete.
-- The row carries the namespace of what it changed (a merge: the merged entity's; a key fix: the
-- memory's) and row-level security keys on it as on the graph's tables (rls.sql).

CREATE TABLE IF NOT EXISTS entity_edits (
    user_id    text NOT NULL,
    id         uuid NOT NULL DEFAULT gen_random_uuid(),
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    agent_id   text,
    project_id text,
    kind       text NOT NULL CHECK (kind IN ('merge', 'split', 'key')),
    entity_id  uuid NOT NULL,
    other_id   uuid,
    memory_id  uuid,
    entity_ids uuid[] NOT NULL,
    rows       jsonb NOT NULL,
    reason     text,
    actor      text NOT NULL,
    client     text,
    created_at timestamptz NOT NULL DEFAULT now(),
    undone_at  timestamptz,
    undone_by  text,
    PRIMARY KEY (user_id, id),
    CHECK ((kind = 'key') = (memory_id IS NOT NULL)),
    CHECK ((kind = 'key') = (other_id IS NULL)),
    CHECK ((undone_at IS NULL) = (undone_by IS NULL))
);
CREATE INDEX IF NOT EXISTS entity_edits_entities ON entity_edits USING gin (entity_ids);
CREATE INDEX IF NOT EXISTS entity_edits_seq ON entity_edits (user_id, seq);
