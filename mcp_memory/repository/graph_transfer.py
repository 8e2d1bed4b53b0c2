"""The graph as an export carries it and an import puts it back: the user's entities (merged ones
too), each memory's mentions, keyed facts and edges, and the edits a person made (merges, splits,
key fixes), so that a store moved keeps what a person corrected and is not read again by rules.
Owner's connection, in the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from .staging import staged

ENTITY_COLUMNS = ("id", "agent_id", "project_id", "kind", "name", "canonical", "aliases", "merged_into",
                  "created_at", "updated_at")
EDIT_COLUMNS = ("id", "agent_id", "project_id", "kind", "entity_id", "other_id", "memory_id", "entity_ids", "rows",
                "reason", "actor", "client", "created_at", "undone_at", "undone_by")

# Select-list items of an export's `memories m` row: its graph, and whether the graph has read it
# (a memory still on the backlog has no graph yet; what its writer said waits in `given`).
MEMORY_GRAPH = """
    (SELECT jsonb_agg(jsonb_build_object('entity', me.entity_id, 'role', me.role, 'source', me.source,
                                         'created_at', me.created_at) ORDER BY me.entity_id)
     FROM memory_entities me WHERE me.user_id = m.user_id AND me.memory_id = m.id) AS mentions,
    (SELECT jsonb_agg(jsonb_build_object('entity', f.entity_id, 'attribute', f.attribute, 'key_words', f.key_words,
                                         'single', f.single, 'ended', f.ended, 'source', f.source,
                                         'created_at', f.created_at) ORDER BY f.entity_id)
     FROM memory_facts f WHERE f.user_id = m.user_id AND f.memory_id = m.id) AS facts,
    (SELECT jsonb_agg(jsonb_build_object('to', e.to_id, 'kind', e.kind, 'agent_id', e.agent_id,
                                         'project_id', e.project_id, 'source', e.source,
                                         'created_at', e.created_at) ORDER BY e.kind, e.to_id)
     FROM memory_edges e WHERE e.user_id = m.user_id AND e.from_id = m.id) AS edges,
    b.memory_id IS NOT NULL AS unread, b.given AS given"""
UNREAD_JOIN = "LEFT JOIN graph_backlog b ON b.user_id = m.user_id AND b.memory_id = m.id"


async def entities(conn: asyncpg.Connection, user_id: str) -> list[dict[str, Any]]:
    """Every entity of the user, merged ones too, each after the one it was merged into."""
    rows = [dict(r) for r in await conn.fetch(
        f"SELECT {', '.join(ENTITY_COLUMNS)} FROM entities WHERE user_id = $1 ORDER BY created_at, id", user_id)]
    return list(_targets_first(rows))


def _targets_first(rows: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    by_id = {r["id"]: r for r in rows}
    done: set[UUID] = set()

    def emit(row: dict[str, Any], seen: frozenset[UUID]) -> Iterable[dict[str, Any]]:
        target = row["merged_into"]
        if target in by_id and target not in done and target not in seen:
            yield from emit(by_id[target], seen | {row["id"]})
        if row["id"] not in done:
            done.add(row["id"])
            yield row

    for row in rows:
        yield from emit(row, frozenset())


async def edits(conn: asyncpg.Connection, user_id: str) -> list[dict[str, Any]]:
    """The user's entity edits (entity_edits), in the order they were made."""
    return [dict(r) for r in await conn.fetch(
        f"SELECT {', '.join(EDIT_COLUMNS)} FROM entity_edits WHERE user_id = $1 ORDER BY seq", user_id)]


def graph_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The graph of an exported memory row (MEMORY_GRAPH's columns); None while it is unread."""
    if row["unread"]:
        return None
    return {"mentions": row["mentions"] or [], "facts": row["facts"] or [], "edges": row["edges"] or []}


@dataclass
class Taken:
    """An import's graph so far: each exported entity's id in this store (`ids`: its own where it is
    new or was there, else the live entity of its namespace and name)."""

    ids: dict[UUID, UUID] = field(default_factory=dict)


async def take_entities(conn: asyncpg.Connection, user_id: str, exported: Sequence[Mapping[str, Any]]) -> Taken:
    """Put the file's entities into the store (each after its merge target, as exported): one the
    store holds by id is that one (or what the store has merged it into); a live one whose name the
    store holds live in the same namespace (before, or written by a session meanwhile) is that
    entity, which takes its aliases; any other is inserted as it was."""
    taken = Taken()
    rows = await conn.fetch("SELECT id, merged_into, agent_id, project_id, canonical FROM entities WHERE user_id = $1",
                            user_id)
    stored = {r["id"]: r["merged_into"] for r in rows}
    live = {_named(r): r["id"] for r in rows if r["merged_into"] is None}
    new = [e for e in exported if e["id"] not in stored]
    taken.ids = {e["id"]: _final(stored, e["id"]) for e in exported if e["id"] in stored}
    taken.ids |= {e["id"]: live[_named(e)] for e in new if e["merged_into"] is None and _named(e) in live}
    fresh = [e for e in new if e["merged_into"] is None and e["id"] not in taken.ids]
    typed = await staged(conn, "import_entities", "entities", _ENTITY, set(),
                         [(user_id, *(e[c] for c in ENTITY_COLUMNS)) for e in fresh])
    inserted = {r["id"] for r in await conn.fetch(
        f"""INSERT INTO entities ({', '.join(_ENTITY)}) SELECT {typed} FROM import_entities ORDER BY n
            ON CONFLICT (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), canonical)
                WHERE merged_into IS NULL DO NOTHING
            RETURNING id""")}
    raced = [e for e in fresh if e["id"] not in inserted]  # named by a write that committed meanwhile
    if raced:
        live |= {_named(r): r["id"] for r in await conn.fetch(
            """SELECT id, agent_id, project_id, canonical FROM entities WHERE user_id = $1 AND merged_into IS NULL
               AND canonical = ANY($2::text[])""", user_id, [e["canonical"] for e in raced])}
    taken.ids |= {e["id"]: e["id"] for e in fresh if e["id"] in inserted} | {e["id"]: live[_named(e)] for e in raced}
    # Merged ones after the live ones they point at, in the file's order (a chain of merges in one statement).
    merged = [e for e in new if e["merged_into"] is not None]
    taken.ids |= {e["id"]: e["id"] for e in merged}
    typed = await staged(conn, "import_merged", "entities", _ENTITY, set(), [
        (user_id, *(taken.ids.get(e[c], e[c]) if c == "merged_into" else e[c] for c in ENTITY_COLUMNS))
        for e in merged])
    await conn.execute(f"INSERT INTO entities ({', '.join(_ENTITY)}) SELECT {typed} FROM import_merged ORDER BY n")
    await conn.executemany(
        """UPDATE entities SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(aliases || $3::text[]) a
                                               WHERE a <> canonical ORDER BY a)
           WHERE user_id = $1 AND id = $2 AND NOT aliases @> $3::text[]""",
        [(user_id, taken.ids[e["id"]], e["aliases"]) for e in new
         if e["merged_into"] is None and taken.ids[e["id"]] != e["id"]])
    return taken


_ENTITY = ("user_id", *ENTITY_COLUMNS)


def _named(e: Mapping[str, Any]) -> tuple[str | None, str | None, str]:
    return e["agent_id"], e["project_id"], e["canonical"]


def _final(stored: Mapping[UUID, UUID | None], entity: UUID) -> UUID:
    seen = {entity}
    while (target := stored.get(entity)) is not None and target not in seen:
        seen.add(target)
        entity = target
    return entity


async def put_graph(conn: asyncpg.Connection, user_id: str, taken: Taken, records: Sequence[Mapping[str, Any]]) -> None:
    """The mentions and facts of the memories just inserted (`records`, each with its graph), in their
    memory's namespace and valid from its occurred_at as a write records them, on entities as taken.
    Their edges go in after every batch (`put_edges`), once both ends are there."""
    def entity(item: Any) -> UUID:
        return taken.ids.get(item.entity, item.entity)

    def mine(r: Mapping[str, Any]) -> tuple[UUID, str | None, str | None]:
        return r["memory"]["id"], r["memory"]["agent_id"], r["memory"]["project_id"]

    # Two exported entities the store holds as one: the memory's `about` row wins, as a merge keeps it.
    mentions = [(user_id, *mine(r), entity(x), x.role, x.source, x.created_at)
                for r in records for x in sorted(r["graph"].mentions, key=lambda x: x.role != "about")]
    facts = [(user_id, *mine(r), entity(f), f.attribute, f.key_words, f.single, f.ended, r["memory"]["occurred_at"],
              f.source, f.created_at) for r in records for f in r["graph"].facts]
    await _put(conn, "memory_entities", _MENTION, mentions)
    await _put(conn, "memory_facts", _FACT, facts)


async def put_edges(conn: asyncpg.Connection, user_id: str, records: Sequence[Mapping[str, Any]]) -> None:
    """Every edge `records` carry (each with its graph, or None) whose two ends are both here: after
    all of an import's batches, so an edge between two of them (written at once, or one in a later
    import of the rest of the file) goes in whichever came last."""
    await _put(conn, "memory_edges", _EDGE, [
        (user_id, r["memory"]["id"], e.to, e.kind, e.agent_id, e.project_id, e.source, e.created_at)
        for r in records if r.get("graph") is not None for e in r["graph"].edges], _BOTH_ENDS)


async def _put(conn: asyncpg.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
               where: str = "") -> None:
    if rows:
        typed = await staged(conn, f"import_{table}", table, columns, set(), rows)
        await conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {typed} FROM import_{table} x "
                           f"{where} ORDER BY n ON CONFLICT DO NOTHING")


# A memory's mentions and facts are in its namespace, its facts valid from its occurred_at, as a
# write records them (graph_checks.py checks it); the file's ids are of memories just inserted.
_MENTION = ("user_id", "memory_id", "agent_id", "project_id", "entity_id", "role", "source", "created_at")
_FACT = ("user_id", "memory_id", "agent_id", "project_id", "entity_id", "attribute", "key_words", "single", "ended",
         "valid_from", "source", "created_at")
_EDGE = ("user_id", "from_id", "to_id", "kind", "agent_id", "project_id", "source", "created_at")
# An edge goes in once both its ends are here.
_BOTH_ENDS = """WHERE EXISTS (SELECT 1 FROM memories m WHERE m.user_id = x.user_id AND m.id = x.from_id)
                  AND EXISTS (SELECT 1 FROM memories m WHERE m.user_id = x.user_id AND m.id = x.to_id)"""


async def take_edits(conn: asyncpg.Connection, user_id: str, taken: Taken,
                     exported: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """The file's entity edits, as made, where every entity they touch kept its id here (an edit of an
    entity the store already held under another id could not be undone here); (taken, left out)."""
    kept = [e for e in exported
            if all(taken.ids.get(i, i) == i for i in (e["entity_id"], e["other_id"], *e["entity_ids"]) if i)]
    typed = await staged(conn, "import_edits", "entity_edits", ("user_id", *EDIT_COLUMNS), {"rows"},
                         [(user_id, *(e[c] for c in EDIT_COLUMNS)) for e in kept])
    added = await conn.fetch(f"INSERT INTO entity_edits (user_id, {', '.join(EDIT_COLUMNS)}) "
                             f"SELECT {typed} FROM import_edits ORDER BY n ON CONFLICT DO NOTHING RETURNING id")
    return len(added), len(exported) - len(kept)
