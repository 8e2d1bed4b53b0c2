-- A first load into an empty store (`mcp-memory import` of at least import_index_after memories)
-- builds the memories' GIN indexes (full text, trigram, tags) once after its rows instead of
-- taking each row into each of them on the way in, as it does the vector index. Their definitions
-- wait here while they are away, written in the transaction that drops them, so a load killed
-- midway leaves them to the next `migrate` (every start), which builds what is listed
-- (deferred_indexes.sql). The owner's alone, like graph_backlog.
CREATE TABLE IF NOT EXISTS deferred_indexes (
    name        text PRIMARY KEY,
    definition  text NOT NULL,
    deferred_at timestamptz NOT NULL DEFAULT now()
);

-- Builds every index listed that is not there and takes it off the list; how many it built. The
-- builders queue on one transaction-level lock, so a server starting during an import's rebuild
-- waits for it instead of failing on a name the other is creating (CREATE INDEX IF NOT EXISTS is
-- not safe to race).
CREATE OR REPLACE FUNCTION mcp_memory_restore_deferred_indexes() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    built integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM deferred_indexes) THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('mcp_memory:deferred_indexes', 0));
    FOR r IN SELECT name, definition FROM deferred_indexes ORDER BY name LOOP
        IF to_regclass(r.name) IS NULL THEN
            EXECUTE r.definition;
            built := built + 1;
        END IF;
        DELETE FROM deferred_indexes WHERE name = r.name;
    END LOOP;
    RETURN built;
END $$;

REVOKE EXECUTE ON FUNCTION mcp_memory_restore_deferred_indexes() FROM PUBLIC;
