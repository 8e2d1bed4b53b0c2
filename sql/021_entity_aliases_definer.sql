-- The alias rows (020_entity_lookup.sql) are the triggers' to write, never a session's: a row naming
-- another namespace's entity would make its lookups resolve a name it never had (foreign keys do not
-- see row-level security). The triggers' function runs as the schema's owner, who copies only the
-- entity row the session was allowed to write; the application role keeps SELECT alone (rls.sql).
ALTER FUNCTION entity_aliases_sync() SECURITY DEFINER SET search_path = public, pg_temp;

-- Nothing reads an entity's aliases through `&&` any more (the lookup reads entity_aliases), so its
-- GIN index only cost every write that touched an entity.
DROP INDEX IF EXISTS entities_aliases;
