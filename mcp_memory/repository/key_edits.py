"""A person's fix of one memory's key, and its undo (entity_edits.py records both): its keyed facts
filed under another attribute or removed, the values of the attributes it left and joined put in
order of valid time (fact_order.py), and the links that moved recorded so that the undo puts them
back, refused where one has changed since."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from ..errors import Conflict, InvalidInput, NotFound, PermissionDenied
from ..graph.keys import Key
from ..models import Principal
from . import fact_order
from .entity_edits import consistent, mark_undone, record_edit, reinsert_facts
from .sql import Sql, visible


async def editable_memory(conn: asyncpg.Connection, p: Principal, memory: UUID, what: str, *,
                          live: bool = False) -> asyncpg.Record:
    """`memory` as this session may fix it (`what` it would have done to it); `live`: not forgotten
    either (a fix; an undo puts back what it changed whatever became of the memory since)."""
    q = Sql()
    row = await conn.fetchrow(f"SELECT m.id, m.agent_id, m.project_id, m.deleted_at, m.pinned FROM memories m "
                              f"WHERE {visible(q, p)} AND m.id = {q.arg(memory)}", *q.args)
    if row is None:
        raise NotFound(f"no memory {memory} in this session's scope; nothing was changed")
    if (p.agent_confined and row["agent_id"] is None) or (p.project_confined and row["project_id"] is None):
        raise PermissionDenied(f"memory {memory} is shared beyond this credential's agents and projects; it cannot "
                               f"{what}. Nothing was changed")
    if live and row["deleted_at"] is not None:
        raise Conflict(f"memory {memory} is forgotten: restore it first; nothing was changed")
    return row


async def keyed_facts(conn: asyncpg.Connection, p: Principal, memory: UUID) -> list[asyncpg.Record]:
    return await conn.fetch(
        """SELECT f.entity_id, f.attribute, f.key_words, f.single, to_jsonb(f) AS row FROM memory_facts f
           WHERE f.user_id = $1 AND f.memory_id = $2 ORDER BY f.entity_id FOR UPDATE""", p.user_id, memory)


async def fix_key(conn: asyncpg.Connection, p: Principal, memory: UUID, key: Key | None,
                  reason: str | None) -> asyncpg.Record:
    """The keyed facts of `memory` filed under `key` instead (None: removed). Which value is current
    follows by itself (validity is read off the live facts); which memory replaces which follows the
    attributes' values in order of valid time (fact_order.py `relink`), recorded for the undo."""
    row = await editable_memory(conn, p, memory, "have its key fixed", live=True)
    facts = await keyed_facts(conn, p, memory)
    if not facts:
        raise InvalidInput(f"memory {memory} states no keyed attribute: there is no key to fix (a memory is keyed "
                           "when written with about and key); nothing was changed")
    if key is not None and all((f["attribute"], f["single"]) == (key.attribute, key.single) for f in facts):
        raise InvalidInput(f"memory {memory} is already filed under {key.attribute!r}; nothing was changed")
    if key is None:
        await conn.execute("DELETE FROM memory_facts WHERE user_id = $1 AND memory_id = $2", p.user_id, memory)
    else:
        await conn.execute("UPDATE memory_facts SET attribute = $3, key_words = $4, single = $5 "
                           "WHERE user_id = $1 AND memory_id = $2", p.user_id, memory, key.attribute, key.words,
                           key.single)
    entities = [f["entity_id"] for f in facts]
    left = [(f["entity_id"], f["attribute"]) for f in facts]
    joined = [(e, key.attribute) for e in entities] if key is not None else []
    links = await fact_order.refiled(conn, p, memory, left, joined, f"its key fixed: {memory} "
                                     f"{'is ' + repr(key.attribute) if key else 'states no keyed attribute'} now")
    after = None if key is None else {"attribute": key.attribute, "key_words": key.words, "single": key.single}
    return await record_edit(conn, p, "key", row, entity=entities[0], memory=memory, entities=entities,
                         rows={"before": [f["row"] for f in facts], "after": after,
                               "links": fact_order.as_rows(links)}, reason=reason)


async def undo_key(conn: asyncpg.Connection, p: Principal, edit: asyncpg.Record) -> None:
    """A key fix undone: the facts exactly as they were (a removed one put back, valid from its
    memory's occurred_at as it is now) and the links it changed as they were, provided both are
    still as the fix left them."""
    before, after = edit["rows"]["before"], edit["rows"]["after"]
    memory = edit["memory_id"]
    await editable_memory(conn, p, memory, "have its key fixed")
    now = await keyed_facts(conn, p, memory)
    expected = [] if after is None else [(UUID(r["entity_id"]), after["attribute"], after["key_words"],
                                          after["single"]) for r in before]
    if sorted((f["entity_id"], f["attribute"], f["key_words"], f["single"]) for f in now) != sorted(expected):
        raise Conflict(f"the keyed facts of memory {memory} changed since this fix; nothing was changed")
    await conn.execute("DELETE FROM memory_facts WHERE user_id = $1 AND memory_id = $2", p.user_id, memory)
    if await reinsert_facts(conn, p, before) != len(before):
        raise Conflict(f"memory {memory} is gone; nothing was changed")
    links = fact_order.from_rows(edit["rows"].get("links", []))
    if not await fact_order.put_back(conn, p, links, f"the key fix of {memory} undone"):
        raise Conflict(f"which memories replace which changed since the key fix of {memory}; nothing was changed")
    await consistent(conn, p, [UUID(r["entity_id"]) for r in before])
    await mark_undone(conn, p, edit["id"])
