-- A person's or an agent's fix of whom one memory is about (memory_update `about`), recorded and
-- undone as a key fix is: `rows` holds the memory's mentions and keyed facts as they were, whom it
-- is about after, and the links the fix changed. Like a key fix it names its memory and no other
-- entity. The checks were unnamed in 017: PostgreSQL's own names for them, on any server; each is
-- dropped before it is added, so the migration may run again.
ALTER TABLE entity_edits DROP CONSTRAINT IF EXISTS entity_edits_kind_check;
ALTER TABLE entity_edits DROP CONSTRAINT IF EXISTS entity_edits_check;
ALTER TABLE entity_edits DROP CONSTRAINT IF EXISTS entity_edits_check1;
ALTER TABLE entity_edits DROP CONSTRAINT IF EXISTS entity_edits_memory_check;
ALTER TABLE entity_edits DROP CONSTRAINT IF EXISTS entity_edits_other_check;
ALTER TABLE entity_edits ADD CONSTRAINT entity_edits_kind_check CHECK (kind IN ('merge', 'split', 'key', 'about'));
ALTER TABLE entity_edits ADD CONSTRAINT entity_edits_memory_check
    CHECK ((kind IN ('key', 'about')) = (memory_id IS NOT NULL));
ALTER TABLE entity_edits ADD CONSTRAINT entity_edits_other_check
    CHECK ((kind IN ('key', 'about')) = (other_id IS NULL));
