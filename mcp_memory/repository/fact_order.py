"""The values of a one-at-a-time attribute put back in order of valid time after a change moved a
memory among them, in the change's own transaction: its date moved (memory_update's occurred_at),
or a person filed it under another key (the console's key fix, key_edits.py).

A newer value replaces the older by construction (graph.py `_replace`), so the links between one
subject's values of such an attribute say which came after which (of a many-valued attribute, which
value a later memory said had ended). A date corrected afterwards
("she joined Globex in 2023, not 2025") left them saying the old order: the profile read the new
order off the facts, but the moved memory still replaced a value now newer than it, and the search
put that one under it. A key fixed ("Head of Design" is her title, not her employer) left the
employer she had before replaced by a memory that is no employer. Here each of the subject's values
that is replaced by one dated before itself, or by a memory that left the attribute, is replaced by
the next value in time instead, or by nothing when it is the newest; one replaced by nothing while
a later value holds is replaced by the next; and the memory that left is no longer replaced by its
former attribute's values. Links to other memories (a writer's `supersedes`, a forgotten successor)
stay as they are; a pinned memory is never replaced, and a credential confined to an agent or
project changes no memory outside it, as on a write. Each change has its history row."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from ..models import Principal
from .memory_store import history
from .sql import Sql, visible

Group = tuple[UUID, str]  # (entity, attribute)


def held_for_another(others: str) -> str:
    """SQL: whether memory `m` states a current value of fact `f`'s attribute for an entity that
    `others` (a condition on `o.entity_id`) admits: none of its live memories states a later one.
    "Ana and Rui moved to Porto." keyed home city about both is still Ana's home when Rui moves on
    alone, so it is replaced by nothing, though Rui's values are in order of valid time."""
    return f"""EXISTS (SELECT 1 FROM memory_facts o
                       WHERE o.user_id = f.user_id AND o.memory_id = m.id AND o.attribute = f.attribute AND o.single
                         AND {others}
                         AND NOT EXISTS (SELECT 1 FROM memory_facts l JOIN memories lm
                                                ON lm.user_id = l.user_id AND lm.id = l.memory_id
                                         WHERE l.user_id = o.user_id AND l.entity_id = o.entity_id
                                           AND l.attribute = o.attribute AND l.valid_from > o.valid_from
                                           AND lm.deleted_at IS NULL))"""


@dataclass(frozen=True)
class Relinked:
    """A memory's successor before and after the values were put in order."""

    memory: UUID
    before: UUID | None
    after: UUID | None


def as_rows(links: Sequence[Relinked]) -> list[list[str | None]]:
    """`links` as an edit records them (entity_edits.rows, JSON), for `from_rows` to read back."""
    return [[str(x) if x else None for x in (c.memory, c.before, c.after)] for c in links]


def from_rows(rows: Sequence[Sequence[str | None]]) -> list[Relinked]:
    return [Relinked(*(UUID(x) if x else None for x in link)) for link in rows]


async def in_time_order(conn: asyncpg.Connection, p: Principal, memory_id: UUID,
                        groups: Sequence[Group]) -> list[Relinked]:
    """After `memory_id`'s facts' valid_from moved: the values of each attribute it states (`groups`,
    as the move returned them), in order of valid time (the module's docstring)."""
    return await relink(conn, p, memory_id, groups, (), f"in order of valid time after the date of {memory_id} moved")


async def refiled(conn: asyncpg.Connection, p: Principal, memory_id: UUID, left: Sequence[Group],
                  joined: Sequence[Group], reason: str) -> list[Relinked]:
    """After `memory_id`'s facts moved from the (subject, attribute) groups `left` to `joined` (its
    key or its subject fixed): the values of each in order of valid time (`relink`)."""
    return await relink(conn, p, memory_id, [*left, *(g for g in joined if g not in left)],
                        [g for g in left if g not in joined], reason)


async def relink(conn: asyncpg.Connection, p: Principal, memory_id: UUID, groups: Sequence[Group],
                 left: Collection[Group], reason: str) -> list[Relinked]:
    """The values of each of `groups` in order of valid time, where `memory_id` moved among them or
    left those of `left` (its key fixed); returns what changed, each with its history row."""
    if not groups:
        return []
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT f.entity_id, f.attribute, f.single, f.valid_from, m.id, m.superseded_by, m.pinned, m.agent_id,
                   m.project_id, {held_for_another("o.entity_id <> f.entity_id")} AS held_for_another
            FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            WHERE f.user_id = {q.arg(p.user_id)} AND m.deleted_at IS NULL AND {visible(q, p)}
              AND (f.entity_id, f.attribute) IN (SELECT * FROM unnest({q.arg([g[0] for g in groups])}::uuid[],
                                                                      {q.arg([g[1] for g in groups])}::text[]))
            ORDER BY f.entity_id, f.attribute, f.valid_from, m.created_at
            FOR UPDATE OF m""", *q.args)
    values: dict[Group, list[asyncpg.Record]] = {}
    for r in rows:
        values.setdefault((r["entity_id"], r["attribute"]), []).append(r)
    mates = {r["id"] for g in left for r in values.get(g, ())}  # the values it left
    changes: dict[UUID, Relinked] = {}
    for group in values.values():
        for change in _reordered(group, memory_id, mates, p):
            changes.setdefault(change.memory, change)
    if memory_id not in changes and not any(memory_id == r["id"] for r in rows):
        # It left every attribute it was among: replaced by none of their values any more.
        mine = await conn.fetchrow("SELECT superseded_by FROM memories WHERE user_id = $1 AND id = $2",
                                   p.user_id, memory_id)
        if mine is not None and mine["superseded_by"] in mates:
            changes[memory_id] = Relinked(memory_id, mine["superseded_by"], None)
    await write_links(conn, p, list(changes.values()), reason)
    return list(changes.values())


def _reordered(values: Sequence[asyncpg.Record], moved: UUID, mates: Collection[UUID], p: Principal) -> list[Relinked]:
    """Of one subject's values of one attribute (in order of valid time), each whose link is out of
    order, or joins it to the memory that `moved` when that one left them, or joins that one to the
    values it left (`mates`): its successor now and the next value in time (or None). A many-valued
    attribute's values accumulate: one is replaced only by a memory saying it ended (graph.py
    `_end`), and one said to have ended before it was stated holds again. One still another
    subject's current value is replaced by nothing (`held_for_another`)."""
    when = {v["id"]: v["valid_from"] for v in values}
    changes = []
    for v in values:
        if p.agent_confined and v["agent_id"] is None or p.project_confined and v["project_id"] is None:
            continue
        single = v["single"]
        later = next((w["id"] for w in values if w["valid_from"] > v["valid_from"]), None) if single else None
        now = v["superseded_by"]
        backwards = now in when and when[now] < v["valid_from"]  # the same day still replaces (graph.py)
        gone = now is not None and now not in when and (now == moved or v["id"] == moved and now in mates)
        if backwards or gone or single and now is None and later is not None and not v["pinned"]:
            after = None if v["pinned"] or v["held_for_another"] else later
            if after != now:
                changes.append(Relinked(v["id"], now, after))
    return changes


async def write_links(conn: asyncpg.Connection, p: Principal, changes: Sequence[Relinked], reason: str,
                      request_id: str | None = None) -> None:
    """Each memory's new successor, with its history row (graph.py's replaces by key and a writer's
    `supersedes`, memory_insert.py, write theirs here too)."""
    if not changes:
        return
    await conn.executemany(
        "UPDATE memories SET superseded_by = $3, updated_at = now(), version = version + 1 "
        "WHERE user_id = $1 AND id = $2", [(p.user_id, c.memory, c.after) for c in changes])
    await history(conn, p, [(c.memory, "UPDATE", {"superseded_by": c.before}, {"superseded_by": c.after})
                            for c in changes], reason, request_id)


async def put_back(conn: asyncpg.Connection, p: Principal, changes: Sequence[Relinked], reason: str) -> bool:
    """`changes` undone (each memory's successor as before), provided each is still as they left
    it; False (nothing changed) otherwise."""
    if not changes:
        return True
    rows = await conn.fetch("SELECT id, superseded_by FROM memories WHERE user_id = $1 AND id = ANY($2::uuid[]) "
                            "AND deleted_at IS NULL FOR UPDATE", p.user_id, [c.memory for c in changes])
    now = {r["id"]: r["superseded_by"] for r in rows}
    if any(c.memory not in now or now[c.memory] != c.after for c in changes):
        return False
    await write_links(conn, p, [Relinked(c.memory, c.after, c.before) for c in changes], reason)
    return True
