"""A fix of whom one memory is about, and its undo (entity_edits.py records both, as a key fix's):
the memory's subjects become the names given (each resolved in its namespace as a write's `about`
is, a new one created), those it was about before are only mentioned now, its keyed facts move to
the new subjects, and the values of the attributes they left and joined are put in order of valid
time (fact_order.py): a value it wrongly replaced of its old subject is current again, and it
replaces the new subject's older value. Everything that changed is recorded so that the undo puts
it back, refused where any of it has changed since."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from ..errors import Conflict, InvalidInput
from ..graph import Said
from ..graph.name_forms import Name
from ..models import Principal
from . import fact_order
from .entity_edits import consistent, mark_undone, record_edit, reinsert_facts, reinsert_mentions
from .graph import lock_names, resolve
from .key_edits import editable_memory, keyed_facts


async def _mentions(conn: asyncpg.Connection, p: Principal, memory: UUID) -> list[asyncpg.Record]:
    return await conn.fetch(
        """SELECT me.entity_id, me.role, to_jsonb(me) AS row FROM memory_entities me
           WHERE me.user_id = $1 AND me.memory_id = $2 ORDER BY me.entity_id FOR UPDATE""", p.user_id, memory)


def _named(mentions: Sequence[asyncpg.Record]) -> list[list[str]]:
    """What a memory names and as what, as the fix left it: an undo is refused once it changed (a new
    text read again, a merge, another fix)."""
    return sorted([str(m["entity_id"]), m["role"]] for m in mentions)


def _facts_state(facts: Sequence[asyncpg.Record]) -> list[tuple[str, str, str, bool]]:
    return sorted((str(f["entity_id"]), f["attribute"], f["key_words"], f["single"]) for f in facts)


async def fix_about(conn: asyncpg.Connection, p: Principal, memory: UUID, names: Sequence[Name],
                    reason: str | None) -> asyncpg.Record:
    """`memory` filed about `names` (a writer's `about`, each a name it is sure of) instead of what it
    was about. Returns the edit's row."""
    row = await editable_memory(conn, p, memory, "be filed about another", live=True)
    await lock_names(conn, p.user_id, [Said(list(names))])
    ids, _ = await resolve(conn, p.user_id, row["agent_id"], row["project_id"], names)
    about = list(dict.fromkeys(ids[n.canonical] for n in names if n.canonical in ids))
    mentions = await _mentions(conn, p, memory)
    before = [m["entity_id"] for m in mentions if m["role"] == "about"]
    if set(before) == set(about):
        raise InvalidInput(f"about: memory {memory} is already about {', '.join(n.display for n in names)}; "
                           "nothing was changed")
    facts = await keyed_facts(conn, p, memory)
    await _about(conn, p, row, about)
    links = await _move_facts(conn, p, memory, facts, about, f"whom {memory} is about fixed: "
                              f"{', '.join(n.display for n in names)}") if facts else []
    touched = list(dict.fromkeys([*before, *about, *(f["entity_id"] for f in facts)]))
    await consistent(conn, p, touched)
    return await record_edit(conn, p, "about", row, entity=about[0], memory=memory, entities=touched,
                             rows={"mentions": [m["row"] for m in mentions], "facts": [f["row"] for f in facts],
                                   "about": [str(e) for e in about], "names": [n.display for n in names],
                                   "after": _named(await _mentions(conn, p, memory)),
                                   "links": fact_order.as_rows(links)}, reason=reason)


async def _about(conn: asyncpg.Connection, p: Principal, row: asyncpg.Record, about: list[UUID]) -> None:
    """The memory (`row`) about the entities `about`, as its writer said; those it was about before
    only mentioned."""
    await conn.execute("UPDATE memory_entities SET role = 'mentioned' WHERE user_id = $1 AND memory_id = $2 "
                       "AND role = 'about' AND entity_id <> ALL($3::uuid[])", p.user_id, row["id"], about)
    await conn.execute(
        """INSERT INTO memory_entities (user_id, memory_id, entity_id, agent_id, project_id, role, source)
           SELECT $1, $2, e, $3, $4, 'about', 'writer' FROM unnest($5::uuid[]) e
           ON CONFLICT (user_id, memory_id, entity_id) DO UPDATE SET role = 'about', source = 'writer'""",
        p.user_id, row["id"], row["agent_id"], row["project_id"], about)


async def _move_facts(conn: asyncpg.Connection, p: Principal, memory: UUID, facts: Sequence[asyncpg.Record],
                      about: list[UUID], reason: str) -> list[fact_order.Relinked]:
    """The memory's keyed `facts` stated of `about` instead, and the values of the attributes they
    left and joined put in order of valid time; the links that changed."""
    # One attribute a memory: its facts differ only by their subject.
    kept = facts[0]
    await conn.execute("DELETE FROM memory_facts WHERE user_id = $1 AND memory_id = $2", p.user_id, memory)
    await conn.execute(
        """INSERT INTO memory_facts (user_id, memory_id, entity_id, agent_id, project_id, attribute, key_words,
                                     single, ended, valid_from, source, created_at)
           SELECT f.user_id, f.memory_id, e, f.agent_id, f.project_id, f.attribute, f.key_words, f.single,
                  f.ended, f.valid_from, f.source, f.created_at
           FROM jsonb_populate_record(NULL::memory_facts, $2::jsonb) f, unnest($3::uuid[]) e
           WHERE f.user_id = $1""", p.user_id, kept["row"], about)
    left = list(dict.fromkeys((f["entity_id"], f["attribute"]) for f in facts))
    joined = [(e, kept["attribute"]) for e in about]
    return await fact_order.refiled(conn, p, memory, left, joined, reason)


async def undo_about(conn: asyncpg.Connection, p: Principal, edit: asyncpg.Record) -> None:
    """An about fix undone: the memory's mentions and keyed facts exactly as they were, and the links
    it changed as they were, provided whom it is about and its facts are still as the fix left them."""
    rows, memory = edit["rows"], edit["memory_id"]
    await editable_memory(conn, p, memory, "be filed about another")
    now = await _mentions(conn, p, memory)
    facts = await keyed_facts(conn, p, memory)
    expected = sorted((e, f["attribute"], f["key_words"], f["single"])
                      for e in rows["about"] for f in rows["facts"][:1])
    if _named(now) != rows["after"] or _facts_state(facts) != expected:
        raise Conflict(f"whom memory {memory} is about, or its keyed facts, changed since this fix; "
                       "nothing was changed")
    await conn.execute("DELETE FROM memory_facts WHERE user_id = $1 AND memory_id = $2", p.user_id, memory)
    await conn.execute("DELETE FROM memory_entities WHERE user_id = $1 AND memory_id = $2", p.user_id, memory)
    if await reinsert_mentions(conn, p, rows["mentions"]) != len(rows["mentions"]) \
            or await reinsert_facts(conn, p, rows["facts"]) != len(rows["facts"]):
        raise Conflict(f"memory {memory} is gone; nothing was changed")
    links = fact_order.from_rows(rows["links"])
    if not await fact_order.put_back(conn, p, links, f"the about fix of {memory} undone"):
        raise Conflict(f"which memories replace which changed since the about fix of {memory}; nothing was changed")
    await consistent(conn, p, list(edit["entity_ids"]))
    await mark_undone(conn, p, edit["id"])
