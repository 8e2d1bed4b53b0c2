"""A keyed fact's date moved (memory_update's occurred_at): the values of its one-at-a-time
attribute put back in order of valid time, in the update's own transaction.

A newer value replaces the older by construction (graph.py `_replace`), so the links between one
subject's values of such an attribute say which came after which. A date corrected afterwards
("she joined Globex in 2023, not 2025") left them saying the old order: the profile read the new
order off the facts, but the moved memory still replaced a value now newer than it, and the search
put that one under it. Here each of the subject's values that is replaced by one dated before
itself is replaced by the next value in time instead, or by nothing when it is the newest, and
one replaced by nothing while a later value holds is replaced by the next. Links to memories
outside the attribute's values (a writer's `supersedes`, a forgotten successor) stay as they are;
a pinned memory is never replaced, and a credential confined to an agent or project changes no
memory outside it, as on a write. Each change has its history row."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from ..models import Principal
from .sql import Sql, visible


async def in_time_order(conn: asyncpg.Connection, p: Principal, memory_id: UUID) -> None:
    """Put the values of each one-at-a-time attribute `memory_id` states back in order of valid
    time (the module's docstring); call after its facts' valid_from moved."""
    q = Sql()
    user = q.arg(p.user_id)
    rows = await conn.fetch(
        f"""SELECT f.entity_id, f.attribute, f.valid_from, m.id, m.superseded_by, m.pinned, m.agent_id, m.project_id
            FROM memory_facts f
            JOIN memory_facts mine ON mine.user_id = f.user_id AND mine.entity_id = f.entity_id
                 AND mine.attribute = f.attribute AND mine.single AND mine.memory_id = {q.arg(memory_id)}
            JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            WHERE f.user_id = {user} AND f.single AND m.deleted_at IS NULL AND {visible(q, p)}
            ORDER BY f.entity_id, f.attribute, f.valid_from, m.created_at
            FOR UPDATE OF m""", *q.args)
    groups: dict[tuple[UUID, str], list[asyncpg.Record]] = {}
    for r in rows:
        groups.setdefault((r["entity_id"], r["attribute"]), []).append(r)
    changes: dict[UUID, tuple[UUID | None, UUID | None]] = {}  # memory -> (replaced by before, after)
    for values in groups.values():
        for memory, successor in _reordered(values, p).items():
            changes.setdefault(memory, successor)
    if not changes:
        return
    await conn.executemany(
        "UPDATE memories SET superseded_by = $3, updated_at = now(), version = version + 1 "
        "WHERE user_id = $1 AND id = $2", [(p.user_id, m, after) for m, (_, after) in changes.items()])
    reason = f"in order of valid time after the date of {memory_id} moved"
    await conn.executemany(
        """INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, client, reason)
           VALUES ($1, $2, 'UPDATE', $3, $4, $5, $6, $7)""",
        [(p.user_id, m, {"superseded_by": str(before) if before else None},
          {"superseded_by": str(after) if after else None}, p.actor, p.client, reason)
         for m, (before, after) in changes.items()])


def _reordered(values: Sequence[asyncpg.Record], p: Principal) -> dict[UUID, tuple[UUID | None, UUID | None]]:
    """Of one subject's values of one attribute (in order of valid time), each whose link is out of
    order: memory -> (its successor now, the next value in time or None)."""
    when = {v["id"]: v["valid_from"] for v in values}
    changes: dict[UUID, tuple[UUID | None, UUID | None]] = {}
    for v in values:
        if p.agent_confined and v["agent_id"] is None or p.project_confined and v["project_id"] is None:
            continue
        later = next((w["id"] for w in values if w["valid_from"] > v["valid_from"]), None)
        now = v["superseded_by"]
        backwards = now in when and when[now] < v["valid_from"]  # the same day still replaces (graph.py)
        if backwards or now is None and later is not None and not v["pinned"]:
            after = None if v["pinned"] else later
            if after != now:
                changes[v["id"]] = (now, after)
    return changes
