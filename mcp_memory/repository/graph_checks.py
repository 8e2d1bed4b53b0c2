"""The graph's consistency checks, over every user on the owner's connection: what foreign keys
cannot forbid (a fact without its mention, a link to a merged entity or outside its memory's
namespace), for `mcp-memory doctor` and every retention sweep, and the graph's sizes."""

from __future__ import annotations

import asyncpg

# Each check counts links that should not exist; all zero is a consistent graph. Links to memories
# that are gone cannot exist (foreign keys, ON DELETE CASCADE); these are the ones keys cannot forbid.
CHECKS = {
    "facts without their mention": """SELECT count(*) FROM memory_facts f WHERE NOT EXISTS (
        SELECT 1 FROM memory_entities me WHERE me.user_id = f.user_id AND me.memory_id = f.memory_id
        AND me.entity_id = f.entity_id)""",
    "links to a merged entity": """SELECT (SELECT count(*) FROM memory_entities me JOIN entities e
        ON e.user_id = me.user_id AND e.id = me.entity_id WHERE e.merged_into IS NOT NULL)
        + (SELECT count(*) FROM memory_facts f JOIN entities e ON e.user_id = f.user_id AND e.id = f.entity_id
           WHERE e.merged_into IS NOT NULL)""",
    "links outside their memory's namespace": """SELECT (SELECT count(*) FROM memory_entities x JOIN memories m
        ON m.user_id = x.user_id AND m.id = x.memory_id
        WHERE x.agent_id IS DISTINCT FROM m.agent_id OR x.project_id IS DISTINCT FROM m.project_id)
        + (SELECT count(*) FROM memory_facts x JOIN memories m ON m.user_id = x.user_id AND m.id = x.memory_id
           WHERE x.agent_id IS DISTINCT FROM m.agent_id OR x.project_id IS DISTINCT FROM m.project_id
              OR x.valid_from <> m.occurred_at)""",
    "entities wider than a memory naming them": """SELECT count(*) FROM memory_entities x JOIN entities e
        ON e.user_id = x.user_id AND e.id = x.entity_id
        WHERE e.agent_id IS NOT NULL AND e.agent_id IS DISTINCT FROM x.agent_id
           OR e.project_id IS NOT NULL AND e.project_id IS DISTINCT FROM x.project_id""",
    # The lookup finds an alias by its own row (020_entity_lookup.sql's triggers keep them).
    "aliases out of step with their rows": """SELECT (SELECT count(*) FROM entities e, unnest(e.aliases) a
        WHERE NOT EXISTS (SELECT 1 FROM entity_aliases x WHERE x.user_id = e.user_id AND x.entity_id = e.id
                          AND x.alias = a AND x.agent_id IS NOT DISTINCT FROM e.agent_id
                          AND x.project_id IS NOT DISTINCT FROM e.project_id))
        + (SELECT count(*) FROM entity_aliases x JOIN entities e ON e.user_id = x.user_id AND e.id = x.entity_id
           WHERE NOT x.alias = ANY (e.aliases))""",
}


async def inconsistencies(conn: asyncpg.Connection) -> dict[str, int]:
    """The graph's consistency checks over every user (an owner's connection): name -> count."""
    return {name: await conn.fetchval(sql) for name, sql in CHECKS.items()}


async def sizes(conn: asyncpg.Connection) -> tuple[int, int, int]:
    """(entities, keyed facts, memories whose names are not read yet) over every user (an owner's
    connection)."""
    row = await conn.fetchrow("SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM memory_facts), "
                              "(SELECT count(*) FROM graph_backlog)")
    return row[0], row[1], row[2]
