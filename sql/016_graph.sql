-- The graph room (issue 48): who a memory is about and which attribute it states, as structure.
--
-- entities: one row per named thing per namespace (the scope of the memory that first named it),
--   found by its canonical name (lower case, possessive cut) or an alias. A merge keeps the row
--   (merged_into), so nothing that pointed at it is lost and a split can bring it back.
-- memory_entities: a memory's mentions; role 'about' is its subject, 'mentioned' any other name in
--   it; source says who said so (the writer's `about`, rules, a model's extraction).
-- memory_facts: a keyed fact: the memory states `attribute` of `entity_id`, true from valid_from
--   (its occurred_at). Where the attribute holds one value at a time (`single`), the next live
--   fact's valid_from ends it: validity is read off the live rows, so a forget, restore, purge or
--   undo can never leave it wrong; the memory's superseded_by says the same for ranking.
-- memory_edges: typed links between two memories (derived_from, contradicts, extends, supports,
--   similar), beside superseded_by.
-- Every row carries its memory's (user, agent, project) and row-level security keys on them as on
-- memories; mentions, facts and edges go with their memory (ON DELETE CASCADE: only the retention
-- sweep deletes a memory), so no link can outlive what it links.

CREATE TABLE IF NOT EXISTS entities (
    user_id     text NOT NULL,
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    agent_id    text,
    project_id  text,
    kind        text NOT NULL DEFAULT 'named' CHECK (kind IN ('user', 'named')),
    name        text NOT NULL CHECK (length(btrim(name)) > 0),
    canonical   text NOT NULL CHECK (length(canonical) > 0),
    aliases     text[] NOT NULL DEFAULT '{}',
    merged_into uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, id),
    FOREIGN KEY (user_id, merged_into) REFERENCES entities (user_id, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS entities_scope_canonical
    ON entities (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), canonical) WHERE merged_into IS NULL;
CREATE INDEX IF NOT EXISTS entities_aliases ON entities USING gin (aliases);
-- A question's names are looked up in every namespace the session sees at once.
CREATE INDEX IF NOT EXISTS entities_canonical ON entities (user_id, canonical) WHERE merged_into IS NULL;
-- A lone first name is looked up among the full names it begins.
CREATE INDEX IF NOT EXISTS entities_first_word ON entities (user_id, split_part(canonical, ' ', 1))
    WHERE merged_into IS NULL;

CREATE TABLE IF NOT EXISTS memory_entities (
    user_id    text NOT NULL,
    memory_id  uuid NOT NULL,
    entity_id  uuid NOT NULL,
    agent_id   text,
    project_id text,
    role       text NOT NULL CHECK (role IN ('about', 'mentioned')),
    source     text NOT NULL CHECK (source IN ('writer', 'rules', 'model')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, memory_id, entity_id),
    FOREIGN KEY (user_id, memory_id) REFERENCES memories (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, entity_id) REFERENCES entities (user_id, id)
);
CREATE INDEX IF NOT EXISTS memory_entities_entity ON memory_entities (user_id, entity_id);

CREATE TABLE IF NOT EXISTS memory_facts (
    user_id    text NOT NULL,
    memory_id  uuid NOT NULL,
    entity_id  uuid NOT NULL,
    agent_id   text,
    project_id text,
    attribute  text NOT NULL CHECK (length(attribute) > 0),
    key_words  text NOT NULL,
    single     boolean NOT NULL,
    ended      boolean NOT NULL DEFAULT false,
    valid_from timestamptz NOT NULL,
    source     text NOT NULL CHECK (source IN ('writer', 'rules', 'model')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, memory_id, entity_id),
    FOREIGN KEY (user_id, memory_id) REFERENCES memories (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, entity_id) REFERENCES entities (user_id, id)
);
CREATE INDEX IF NOT EXISTS memory_facts_attribute ON memory_facts (user_id, entity_id, attribute, valid_from);

CREATE TABLE IF NOT EXISTS memory_edges (
    user_id    text NOT NULL,
    from_id    uuid NOT NULL,
    to_id      uuid NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('derived_from', 'contradicts', 'extends', 'supports', 'similar')),
    agent_id   text,
    project_id text,
    source     text NOT NULL CHECK (source IN ('writer', 'rules', 'model')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, from_id, kind, to_id),
    FOREIGN KEY (user_id, from_id) REFERENCES memories (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, to_id) REFERENCES memories (user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS memory_edges_to ON memory_edges (user_id, to_id);
