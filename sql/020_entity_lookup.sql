-- The entity lookup (repository/graph.py `named_rows`) in conditions an index can serve under
-- row-level security on any server. There a query's own condition is read through an index only
-- when its functions are LEAKPROOF, which only a superuser can mark (the embedded server does,
-- rls.sql); a managed database's owner cannot, and the lookup's `aliases && $names` and
-- `split_part(canonical, ' ', 1) = $first` then filtered every entity of the user (3,000 read to
-- find one). Equality of text is leakproof everywhere, so each name form gets a column or a row of
-- its own that `=` finds.

-- A lone first name ("Greta") is looked up among the full names it begins by their first word.
ALTER TABLE entities ADD COLUMN IF NOT EXISTS first_word text
    GENERATED ALWAYS AS (split_part(canonical, ' ', 1)) STORED;
DROP INDEX IF EXISTS entities_first_word;
CREATE INDEX IF NOT EXISTS entities_first_word_col ON entities (user_id, first_word) WHERE merged_into IS NULL;

-- An entity's aliases (the word set of its name, names merged into it), one row each, kept by the
-- triggers below from `entities.aliases`, which stays what the console and the checks read. The
-- rows carry their entity's namespace, for the graph's row-level security rule (rls.sql).
CREATE TABLE IF NOT EXISTS entity_aliases (
    user_id    text NOT NULL,
    entity_id  uuid NOT NULL,
    alias      text NOT NULL,
    agent_id   text,
    project_id text,
    PRIMARY KEY (user_id, entity_id, alias),
    FOREIGN KEY (user_id, entity_id) REFERENCES entities (user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS entity_aliases_alias ON entity_aliases (alias, user_id);

CREATE OR REPLACE FUNCTION entity_aliases_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (NEW.agent_id IS DISTINCT FROM OLD.agent_id
                             OR NEW.project_id IS DISTINCT FROM OLD.project_id) THEN
        DELETE FROM entity_aliases WHERE user_id = NEW.user_id AND entity_id = NEW.id;
    ELSIF TG_OP = 'UPDATE' THEN
        DELETE FROM entity_aliases
        WHERE user_id = NEW.user_id AND entity_id = NEW.id AND NOT alias = ANY (NEW.aliases);
    END IF;
    INSERT INTO entity_aliases (user_id, entity_id, alias, agent_id, project_id)
        SELECT NEW.user_id, NEW.id, a, NEW.agent_id, NEW.project_id FROM unnest(NEW.aliases) a
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS entity_aliases_inserted ON entities;
CREATE TRIGGER entity_aliases_inserted AFTER INSERT ON entities
    FOR EACH ROW WHEN (cardinality(NEW.aliases) > 0) EXECUTE FUNCTION entity_aliases_sync();
DROP TRIGGER IF EXISTS entity_aliases_updated ON entities;
CREATE TRIGGER entity_aliases_updated AFTER UPDATE OF aliases, agent_id, project_id ON entities
    FOR EACH ROW EXECUTE FUNCTION entity_aliases_sync();

INSERT INTO entity_aliases (user_id, entity_id, alias, agent_id, project_id)
    SELECT e.user_id, e.id, a, e.agent_id, e.project_id FROM entities e, unnest(e.aliases) a
    ON CONFLICT DO NOTHING;
