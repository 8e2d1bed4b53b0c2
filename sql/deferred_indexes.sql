-- Applied after the numbered migrations on every `migrate`: the indexes a first load took away and
-- did not get to build again (the process killed midway) are built now (023_deferred_indexes.sql).
-- Nothing listed: one lookup of an empty table.
SELECT mcp_memory_restore_deferred_indexes();
