"""The graph read back: a memory's structure (whom it is about, its key, mentions and edges), the
entities a question names, their keyed facts, an entity's row and its neighbours (one hop)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

import asyncpg

from ..graph.name_forms import Name
from ..graph.names import entity_name
from ..graph.subjects import Subjects
from ..models import KINDS, MemoryEdge, MemoryFilter, Principal
from .graph import choose, named_rows
from .memory_store import MemoryStore
from .sql import Sql, live, successor, visible


async def structure_of(conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
    """For each memory of `ids`: the names of what it is about and mentions, its key, and its
    edges (kind, the other memory, 'out' from it or 'in' to it)."""
    q = Sql()
    edges = await conn.fetch(
        f"""SELECT from_id, to_id, kind FROM memory_edges
            WHERE user_id = {q.arg(p.user_id)} AND (from_id = ANY({q.arg(list(ids))}::uuid[])
                                                   OR to_id = ANY({q.arg(list(ids))}::uuid[]))
            ORDER BY created_at""", *q.args)
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT me.memory_id, me.role, e.name, e.kind, f.attribute, f.key_words
            FROM memory_entities me JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
            LEFT JOIN memory_facts f ON f.user_id = me.user_id AND f.memory_id = me.memory_id
                                    AND f.entity_id = me.entity_id
            WHERE me.user_id = {q.arg(p.user_id)} AND me.memory_id = ANY({q.arg(list(ids))}::uuid[])
            ORDER BY me.role, e.name""", *q.args)
    found: dict[UUID, dict[str, object]] = {}
    for r in rows:
        s = found.setdefault(r["memory_id"], {"about": [], "mentions": [], "key": None})
        name = entity_name(r["kind"], r["name"])
        s["about" if r["role"] == "about" else "mentions"].append(name)  # type: ignore[union-attr]
        if r["attribute"] is not None:
            s["key"] = r["attribute"]
    for e in edges:
        for mine, other, direction in ((e["from_id"], e["to_id"], "out"), (e["to_id"], e["from_id"], "in")):
            if mine in ids:
                entry = found.setdefault(mine, {"about": [], "mentions": [], "key": None})
                entry.setdefault("edges", []).append(MemoryEdge(kind=e["kind"], memory=other, direction=direction))
    return found


async def subjects_of(conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID]) -> dict[UUID, Subjects]:
    """For each memory of `ids` the graph has read: the entities it is about, every one it names and
    the attribute its keyed facts state of each (graph/subjects.py). A memory the graph has not read
    (an import's backlog) is left out."""
    rows = await conn.fetch(
        """SELECT me.memory_id, me.entity_id, me.role, me.source, e.kind, e.name, f.attribute, f.valid_from
           FROM memory_entities me JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
           LEFT JOIN memory_facts f
             ON f.user_id = me.user_id AND f.memory_id = me.memory_id AND f.entity_id = me.entity_id
           WHERE me.user_id = $1 AND me.memory_id = ANY($2::uuid[])""", p.user_id, list(ids))
    said: dict[UUID, dict[UUID, str]] = {}
    read: dict[UUID, dict[UUID, str]] = {}
    named: dict[UUID, set[UUID]] = {}
    keyed: dict[UUID, dict[UUID, str]] = {}
    since: dict[UUID, datetime] = {}
    for r in rows:
        named.setdefault(r["memory_id"], set()).add(r["entity_id"])
        if r["role"] == "about":
            by = read if r["source"] == "rules" else said
            by.setdefault(r["memory_id"], {})[r["entity_id"]] = entity_name(r["kind"], r["name"])
        if r["attribute"] is not None:
            keyed.setdefault(r["memory_id"], {})[r["entity_id"]] = r["attribute"]
            since[r["memory_id"]] = r["valid_from"]
    return {m: Subjects(said=said.get(m, {}), read=read.get(m, {}), named=frozenset(found), keyed=keyed.get(m, {}),
                        since=since.get(m)) for m, found in named.items()}


async def entities_by_name(conn: asyncpg.Connection, p: Principal, names: Sequence[Name]
                           ) -> dict[str, list[asyncpg.Record]]:
    """Each of `names` (a question's, by canonical name) -> the known entities it is that `p` can
    see (`id`, and `keyed`: whether it has keyed facts); names of nothing known are left out, and
    nothing is created. A lone first name is the one full name it begins, never one of two. Each
    namespace the session sees may hold its own entity of one name: all of them count."""
    if not names:
        return {}
    q = Sql()
    rows = await named_rows(conn, q, p.user_id, visible(q, p, "e"), names, extra=(
        ", EXISTS (SELECT 1 FROM memory_facts f WHERE f.user_id = e.user_id AND f.entity_id = e.id) AS keyed"))
    found: dict[str, list[asyncpg.Record]] = {}
    for name in names:
        chosen = choose(name, rows)
        if chosen is not None:
            found[name.canonical] = [r for r in rows if r["canonical"] == chosen["canonical"]]
    return found


# An entity's turns are counted up to this many (a search pays for the count once a minute).
TURNS_COUNTED = 100_000


# What a scope holds beside its turns, counted whole around a speaker's turns (`share_spoken`).
NOT_TURNS = [kind for kind in KINDS if kind != "episode"]


class Spoken(NamedTuple):
    turns: int  # counted up to TURNS_COUNTED
    share: float  # of the memories around them, as far as telling whether it reaches the share asked


def speaker_windows(q: Sql, p: Principal, entities: Sequence[UUID], gap_minutes: float,
                    as_of: datetime | None = None) -> str:
    """The conversations a speaker takes part in: a SELECT of a row per scope (`agent_id`,
    `project_id`) and `near`, the windows `gap_minutes` either side of each of their turns there
    (live episodes about one of `entities` that `p` sees, as the store stood at `as_of`) merged
    (`range_agg`). The one definition the search's factor (retrieval/conversations.py) and the
    speaker's share (`share_spoken`) read. Each turn is read by its id (a LIMIT 1 lateral): joined,
    the planner of the search statement read every episode of the user instead."""
    gap = f"{q.arg(gap_minutes)}::float8 * interval '1 minute'"
    existed = f"AND t.created_at <= {q.arg(as_of)}" if as_of is not None else ""
    return f"""SELECT t.agent_id, t.project_id,
               range_agg(tstzrange(t.occurred_at - {gap}, t.occurred_at + {gap}, '[]')) AS near
        FROM memory_entities me CROSS JOIN LATERAL (
            SELECT t.agent_id, t.project_id, t.occurred_at FROM memories t
            WHERE t.user_id = me.user_id AND t.id = me.memory_id AND t.kind = 'episode'
              AND t.deleted_at IS NULL AND {visible(q, p, "t")} {existed}
            LIMIT 1) t
        WHERE me.user_id = {q.arg(p.user_id)} AND me.entity_id = ANY({q.arg(list(entities))}::uuid[])
          AND me.role = 'about'
        GROUP BY t.agent_id, t.project_id"""


def turns_within(window: str, scope: str) -> str:
    """That memory `m` is a turn in the time range `window` of a speaker's conversations in the scope
    of the row `scope` (`speaker_windows`): a range of the turns' time index, probed window by window
    by a lateral the caller keeps apart with OFFSET 0 (flattened, the planner joined every turn of the
    user to the windows, 300 ms at 90,000)."""
    return (f"m.kind = 'episode' AND m.occurred_at >= lower({window}) AND m.occurred_at <= upper({window}) "
            f"AND m.agent_id IS NOT DISTINCT FROM {scope}.agent_id "
            f"AND m.project_id IS NOT DISTINCT FROM {scope}.project_id")


async def share_spoken(conn: asyncpg.Connection, p: Principal, entities: Sequence[UUID], share: float,
                       gap_minutes: float, windowed_up_to: int) -> Spoken:
    """How many of the live memories `p` sees are turns of one of `entities` (episodes about them:
    their speaker), and their share of the memories around them: the turns within `gap_minutes` of
    one of theirs in its scope (the conversations they take part in, `speaker_windows`) and every
    memory that is no turn. A store of many conversations holds a speaker's turns as a store of
    theirs alone does: half of the two people's, not a tenth of everyone's. Counted only as far as
    telling whether the share reaches `share` (0 < share <= 1), so a person of a few turns costs a
    few rows. One of more than `windowed_up_to` turns is counted against the whole scope: their
    windows would be read turn by turn (and their conversations are not told apart either)."""
    q = Sql()
    turns = await conn.fetchval(
        f"""SELECT count(*) FROM (
                SELECT DISTINCT me.memory_id FROM memory_entities me
                JOIN memories m ON m.user_id = me.user_id AND m.id = me.memory_id
                WHERE me.user_id = {q.arg(p.user_id)} AND me.entity_id = ANY({q.arg(list(entities))}::uuid[])
                  AND me.role = 'about' AND m.kind = 'episode' AND {" AND ".join(live(q, p))}
                LIMIT {TURNS_COUNTED}) x""", *q.args)
    if not turns:
        return Spoken(0, 0.0)
    cap = math.floor(turns / share) + 1
    q = Sql()
    where = " AND ".join(live(q, p))
    if turns > windowed_up_to:
        around = await conn.fetchval(
            f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT {q.arg(cap)}) s", *q.args)
    else:
        around = await conn.fetchval(
            f"""WITH windows AS MATERIALIZED (
                    SELECT w.agent_id, w.project_id, unnest(w.near) AS r
                    FROM ({speaker_windows(q, p, entities, gap_minutes)}) w)
                SELECT count(*) FROM (
                    (SELECT 1 FROM windows w CROSS JOIN LATERAL (
                        SELECT 1 FROM memories m WHERE {where} AND {turns_within("w.r", "w")} OFFSET 0) x)
                    UNION ALL
                    (SELECT 1 FROM memories m WHERE {where} AND m.kind = ANY({q.arg(NOT_TURNS)}::text[]))
                    LIMIT {q.arg(cap)}) s""", *q.args)
    return Spoken(turns, turns / around if around else 0.0)


async def entities_named(conn: asyncpg.Connection, p: Principal, names: Sequence[Name],
                         keyed: bool = True) -> list[UUID]:
    """The known entities `names` are, each once (`entities_by_name`), and (`keyed`) only those with
    keyed facts: most named things have none, and a question about an attribute reads no facts
    without one."""
    found = await entities_by_name(conn, p, names)
    return list(dict.fromkeys(r["id"] for rows in found.values() for r in rows if r["keyed"] or not keyed))


async def subject_facts(repo: MemoryStore, p: Principal, names: Sequence[Name]
                        ) -> tuple[list[asyncpg.Record], frozenset[UUID]]:
    """The keyed facts of the entities `names` are (as a write would resolve them), each with its
    memory's id and text, and the ids of those a live memory has replaced."""
    async with repo.reading(p) as conn:
        entities = await entities_named(conn, p, names)
        if not entities:
            return [], frozenset()
        rows = await facts_of(conn, p, entities, None)
        replaced = await conn.fetch(
            "SELECT m.id FROM memories m JOIN memories s ON s.user_id = m.user_id AND s.id = m.superseded_by "
            "WHERE m.user_id = $1 AND m.id = ANY($2::uuid[]) AND s.deleted_at IS NULL",
            p.user_id, [r["id"] for r in rows])
    return rows, frozenset(r["id"] for r in replaced)


async def current_facts(repo: MemoryStore, p: Principal, names: Sequence[Name]) -> list[asyncpg.Record]:
    """The keyed facts of the entities `names` are that nothing live has replaced (`subject_facts`)."""
    rows, gone = await subject_facts(repo, p, names)
    return [r for r in rows if r["id"] not in gone]


async def facts_of(conn: asyncpg.Connection, p: Principal, entities: Sequence[UUID],
                   f: MemoryFilter | None) -> list[asyncpg.Record]:
    """The keyed facts of `entities` whose memories are live, visible and pass `f` (as of its
    `as_of`), each with its entity's name where the session sees the entity (None where not) and
    what a search hit shows of its memory; newest valid first."""
    q = Sql()
    where = live(q, p, f)
    if f is not None and f.as_of is not None:
        where.append(f"m.created_at <= {q.arg(f.as_of)}")
    return await conn.fetch(
        f"""SELECT DISTINCT ON (f.valid_from, m.created_at, m.id) f.attribute, f.key_words, f.single, f.valid_from,
                   f.entity_id, e.name AS entity_name, e.kind AS entity_kind,
                   m.id, m.title, m.content, m.kind, m.tags, m.agent_id, m.project_id, m.occurred_at, m.superseded_by,
                   {successor(q, p)}
            FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            LEFT JOIN entities e ON e.user_id = f.user_id AND e.id = f.entity_id
            WHERE f.user_id = {q.arg(p.user_id)} AND f.entity_id = ANY({q.arg(list(entities))}::uuid[])
              AND {" AND ".join(where)}
            ORDER BY f.valid_from DESC, m.created_at DESC, m.id""", *q.args)


async def entity_rows(conn: asyncpg.Connection, p: Principal, *, entity: UUID | None = None,
                      limit: int = 100) -> list[asyncpg.Record]:
    """Visible live entities (one by id, or the most named), with how many live memories name each;
    by name: `entities_named` (as a write resolves it)."""
    q = Sql()
    where = [visible(q, p, "e"), "e.merged_into IS NULL"]
    if entity is not None:
        where.append(f"e.id = {q.arg(entity)}")
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, e.agent_id, e.project_id,
                   (SELECT count(*) FROM memory_entities me JOIN memories m ON m.user_id = me.user_id
                        AND m.id = me.memory_id AND m.deleted_at IS NULL
                    WHERE me.user_id = e.user_id AND me.entity_id = e.id) AS memories
            FROM entities e WHERE {" AND ".join(where)}
            ORDER BY memories DESC, e.name LIMIT {q.arg(limit)}""", *q.args)


async def mentioned_in(conn: asyncpg.Connection, p: Principal, memory: UUID) -> list[UUID]:
    """The live entities a memory names but is not about (its values: "Diego Yilmaz took over as
    Kwame's manager" names Diego Yilmaz)."""
    rows = await conn.fetch(
        """SELECT me.entity_id FROM memory_entities me
           JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id AND e.merged_into IS NULL
           WHERE me.user_id = $1 AND me.memory_id = $2 AND me.role = 'mentioned' ORDER BY e.name""",
        p.user_id, memory)
    return [r["entity_id"] for r in rows]


async def neighbours_of(conn: asyncpg.Connection, p: Principal, entity: UUID, limit: int = 10) -> list[asyncpg.Record]:
    """The entities named in the same live memories as `entity`, most shared first: one hop."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, count(DISTINCT m.id) AS shared
            FROM memory_entities a
            JOIN memories m ON m.user_id = a.user_id AND m.id = a.memory_id AND m.deleted_at IS NULL
            JOIN memory_entities b ON b.user_id = a.user_id AND b.memory_id = a.memory_id AND b.entity_id <> a.entity_id
            JOIN entities e ON e.user_id = b.user_id AND e.id = b.entity_id
            WHERE a.user_id = {q.arg(p.user_id)} AND a.entity_id = {q.arg(entity)} AND {visible(q, p)}
            GROUP BY e.id, e.name, e.kind ORDER BY shared DESC, e.name LIMIT {q.arg(limit)}""", *q.args)


async def described(conn: asyncpg.Connection, p: Principal, memories: Sequence[UUID]) -> frozenset[UUID]:
    """Those of `memories` someone said what they are: a key filed for them, or a writer or a model
    naming whom they are about (a mention the rules found says nothing of what a writer meant)."""
    q = Sql()
    user, ids = q.arg(p.user_id), q.arg(list(memories))
    rows = await conn.fetch(
        f"""SELECT memory_id FROM memory_facts WHERE user_id = {user} AND memory_id = ANY({ids}::uuid[])
            UNION
            SELECT memory_id FROM memory_entities
            WHERE user_id = {user} AND memory_id = ANY({ids}::uuid[]) AND role = 'about' AND source <> 'rules'""",
        *q.args)
    return frozenset(r["memory_id"] for r in rows)


# How many of an entity's mentions `subjects_named` reads for its first notes, its earliest written
# first as the index keeps them: bounded, so a name in thousands of notes ("Slack") costs no more.
MENTIONS_SCANNED = 100


async def subjects_named(conn: asyncpg.Connection, p: Principal, memories: Sequence[UUID], most: int
                         ) -> list[asyncpg.Record]:
    """For each of `memories`, the named entities the graph files it about (memory_id, entity_id,
    name), each with what the first `most` live memories the session sees that name that entity say
    of it (contents, oldest first): how they were introduced ("My brother Oskar Brandt lives in
    Turin."). Each entity's notes are read once, among its first `MENTIONS_SCANNED` mentions."""
    q = Sql()
    user = q.arg(p.user_id)
    return await conn.fetch(
        f"""WITH s AS (SELECT DISTINCT me.memory_id, e.id, e.name
                       FROM memory_entities me
                       JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
                        AND e.kind = 'named' AND e.merged_into IS NULL
                       WHERE me.user_id = {user} AND me.memory_id = ANY({q.arg(list(memories))}::uuid[])
                         AND me.role = 'about'),
            t AS MATERIALIZED (
                SELECT e.id, c.contents FROM (SELECT DISTINCT id FROM s) e
                CROSS JOIN LATERAL (
                    SELECT array_agg(y.content ORDER BY y.occurred_at, y.id) AS contents
                    FROM (SELECT m.content, m.occurred_at, m.id
                          FROM (SELECT x.memory_id FROM memory_entities x
                                WHERE x.user_id = {user} AND x.entity_id = e.id LIMIT {q.arg(MENTIONS_SCANNED)}) x
                          JOIN memories m ON m.user_id = {user} AND m.id = x.memory_id
                          WHERE {" AND ".join(live(q, p))}
                          ORDER BY m.occurred_at, m.id LIMIT {q.arg(most)}) y) c
                WHERE c.contents IS NOT NULL)
            SELECT s.memory_id, s.id AS entity_id, s.name, t.contents FROM s JOIN t ON t.id = s.id""", *q.args)


__all__ = ["current_facts", "described", "entities_by_name", "entities_named", "entity_rows", "facts_of",
           "mentioned_in", "neighbours_of", "structure_of", "subject_facts", "subjects_named", "subjects_of"]
