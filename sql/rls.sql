-- Applied after the numbered migrations on every `migrate`, so a deployment that gains
-- CREATEROLE later gets row-level security by running `mcp-memory migrate` again. It changes
-- only what is missing: no table lock is taken when everything is in place.
-- Row-level security. Application connections run as mcp_memory_app, which sees only the rows
-- of the transaction's user (and of its agent / project, for memories), so a query that forgot
-- its filter still returns nothing of anyone else. The migrating owner keeps full access for
-- cross-user maintenance (retention, export, key administration).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcp_memory_app') THEN
        CREATE ROLE mcp_memory_app NOLOGIN;
    END IF;
    EXECUTE format('GRANT mcp_memory_app TO %I', current_user);
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'cannot create role mcp_memory_app (needs CREATEROLE); row-level security is not active';
END $$;

CREATE OR REPLACE FUNCTION mcp_memory_setting(name text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('mcp_memory.' || name, true), '')
$$;

DO $$
DECLARE
    t text;
    tenant_rule text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcp_memory_app') THEN
        RETURN;
    END IF;
    GRANT USAGE ON SCHEMA public TO mcp_memory_app;
    GRANT SELECT ON meta, schema_migrations TO mcp_memory_app;
    IF to_regclass('embedding_cache') IS NOT NULL THEN
        GRANT SELECT, INSERT ON embedding_cache TO mcp_memory_app;
    END IF;
    GRANT EXECUTE ON FUNCTION mcp_memory_setting(text) TO mcp_memory_app;
    FOREACH t IN ARRAY ARRAY['memories', 'memory_history', 'forget_tokens', 'idempotency_keys', 'api_keys',
                             'rate_limits', 'memory_jobs', 'transcript_cursors', 'console_sessions',
                             'entities', 'memory_entities', 'memory_facts', 'memory_edges', 'entity_edits',
                             'entity_aliases'] LOOP
        IF to_regclass(t) IS NULL THEN
            CONTINUE;
        END IF;
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %I TO mcp_memory_app', t);
        IF NOT (SELECT relrowsecurity AND relforcerowsecurity FROM pg_class WHERE oid = t::regclass) THEN
            EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
            EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = t AND policyname = 'owner_all') THEN
            EXECUTE format('CREATE POLICY owner_all ON %I TO %I USING (true) WITH CHECK (true)', t, current_user);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = t AND policyname = 'tenant') THEN
            -- The graph's rows carry their memory's (or first memory's) namespace: the memories' rule.
            tenant_rule := CASE WHEN t IN ('memories', 'entities', 'memory_entities', 'memory_facts',
                                           'memory_edges', 'entity_edits', 'entity_aliases') THEN
                'user_id = mcp_memory_setting(''user_id'')'
                ' AND (agent_id IS NULL OR agent_id = mcp_memory_setting(''agent_id''))'
                ' AND (project_id IS NULL OR project_id = mcp_memory_setting(''project_id''))'
            ELSE 'user_id = mcp_memory_setting(''user_id'')' END;
            EXECUTE format('CREATE POLICY tenant ON %I TO mcp_memory_app USING (%s) WITH CHECK (%s)',
                           t, tenant_rule, tenant_rule);
        END IF;
    END LOOP;
    -- The console's namespace picker and all-namespaces view read every namespace of one user. A
    -- transaction that also sets mcp_memory.scope = 'user' may read them (permissive policies OR
    -- together), never write through this one (FOR SELECT; writes still pass `tenant`), and still
    -- sees nothing of another user. The console keeps a key's agent / project grants by its WHERE.
    FOREACH t IN ARRAY ARRAY['memories', 'entities', 'memory_entities', 'memory_facts', 'memory_edges',
                             'entity_edits', 'entity_aliases'] LOOP
        IF to_regclass(t) IS NULL THEN
            CONTINUE;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = t AND policyname = 'tenant_user_read') THEN
            EXECUTE format('CREATE POLICY tenant_user_read ON %I AS PERMISSIVE FOR SELECT TO mcp_memory_app '
                           'USING (user_id = mcp_memory_setting(''user_id'') AND mcp_memory_setting(''scope'') = ''user'')',
                           t);
        END IF;
    END LOOP;
    -- Only time removes data (the retention sweep runs as the owner), history is append-only,
    -- and a key's grants are the operator's to change: the application role may do none of it.
    REVOKE DELETE ON memories, memory_history, forget_tokens, idempotency_keys, api_keys, rate_limits,
        memory_jobs, transcript_cursors, entities FROM mcp_memory_app;
    -- A memory's mentions, keyed facts and edges are read off its text, its writer and a model: a
    -- new text or a person's correction replaces them (the history keeps what they were).
    IF to_regclass('memory_edges') IS NOT NULL THEN
        GRANT DELETE ON memory_entities, memory_facts, memory_edges TO mcp_memory_app;
    END IF;
    REVOKE UPDATE ON memory_history FROM mcp_memory_app;
    REVOKE UPDATE ON api_keys FROM mcp_memory_app;
    GRANT UPDATE (last_used_at) ON api_keys TO mcp_memory_app;
    -- An entity's alias rows follow its aliases: the triggers write them as the owner
    -- (021_entity_aliases_definer.sql); a session only reads them.
    IF to_regclass('entity_aliases') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE ON entity_aliases FROM mcp_memory_app;
    END IF;
    -- A person's graph edits are history: an undo marks one undone (who, when), nothing else.
    IF to_regclass('entity_edits') IS NOT NULL THEN
        REVOKE DELETE, UPDATE ON entity_edits FROM mcp_memory_app;
        GRANT UPDATE (undone_at, undone_by) ON entity_edits TO mcp_memory_app;
    END IF;
    -- Signing out deletes the session's row (its user's only, under the tenant policy).
    GRANT DELETE ON console_sessions TO mcp_memory_app;
END $$;

-- Under row-level security the planner may use an index for a query's own condition only if
-- the condition's function is leakproof; the text-search, trigram, vector and array-containment
-- (tag filter) operators are not marked so, which turns every search of a large scope into a
-- sequential scan (over 1 s at 100,000 memories). They reveal nothing of rows beyond whether they match, so a superuser
-- (the embedded database always) marks them; elsewhere the README says how. The trigram index
-- serves `query <% content` through its commutator (`content %> query`), so both are marked. And
-- pg_trgm declares both as cheap as an addition (cost 1), while one call on a conversation turn
-- takes ~25 us, some hundreds of additions: the planner then computes word_similarity on every
-- memory of the scope instead of reading the trigram index (a one-word search at 1,082 LoCoMo
-- turns: 44 ms, 14 ms with the index at cost 1000; at cost 100 the whole search still chose
-- the scan).
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
        ALTER FUNCTION word_similarity_op(text, text) LEAKPROOF COST 1000;
        ALTER FUNCTION word_similarity_commutator_op(text, text) LEAKPROOF COST 1000;
        ALTER FUNCTION cosine_distance(vector, vector) LEAKPROOF;
        ALTER FUNCTION arraycontains(anyarray, anyarray) LEAKPROOF;
        -- The console's lists of a person's graph edits touching an entity (entity_edits.entity_ids).
        ALTER FUNCTION arrayoverlap(anyarray, anyarray) LEAKPROOF;
    END IF;
END $$;
