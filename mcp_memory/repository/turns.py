"""The turn before an episode, which the episode's vector may hold (vectors.py `summed`): the
live episode written just before it in its namespace (user, agent and project the same), if that
one occurred at most a gap earlier. "Just before" is the order search passes a question's score
along to its neighbours (retrieval/statement.py `_neighbour`): by when it occurred, then when it
was stored (a batch's rows are stored in its order), then id. The same namespace makes the turn before visible to
whoever sees the episode: no one's text enters a vector another may search."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import asyncpg
import numpy as np

from ..models import Principal
from .memory_store import MemoryStore
from .sql import Sql

# Where a memory about to be written stands in that order: after every stored row of its time.
_UNSTORED = "'infinity'::timestamptz AS created_at, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid AS id"


def _adjacent(q: Sql, gap_minutes: float, of: str, direction: str) -> str:
    """The live episode just before (`<`) or after (`>`) the row `of` (with a memory's user_id,
    agent_id, project_id, occurred_at, created_at and id) in its namespace, within the gap: a
    subquery of its id, content and occurred_at."""
    gap = f"{q.arg(float(gap_minutes))}::float8 * interval '1 minute'"
    order, window = (("DESC", f"b.occurred_at >= {of}.occurred_at - {gap}") if direction == "<"
                     else ("ASC", f"b.occurred_at <= {of}.occurred_at + {gap}"))
    return f"""(
        SELECT b.id, b.content, b.occurred_at FROM memories b
        WHERE b.user_id = {of}.user_id AND b.kind = 'episode' AND b.deleted_at IS NULL
          AND b.agent_id IS NOT DISTINCT FROM {of}.agent_id AND b.project_id IS NOT DISTINCT FROM {of}.project_id
          AND (b.occurred_at, b.created_at, b.id) {direction} ({of}.occurred_at, {of}.created_at, {of}.id)
          AND {window}
        ORDER BY b.occurred_at {order}, b.created_at {order}, b.id {order} LIMIT 1)"""


def before(q: Sql, gap_minutes: float, of: str) -> str:
    """A LEFT JOIN LATERAL giving `turn_before.content` and `.occurred_at` for the row `of` (see
    `_adjacent`); both NULL with no gap (no turn is held)."""
    if gap_minutes <= 0:
        return "LEFT JOIN LATERAL (SELECT NULL::text AS content, NULL::timestamptz AS occurred_at) turn_before ON TRUE"
    return f"LEFT JOIN LATERAL {_adjacent(q, gap_minutes, of, '<')} turn_before ON TRUE"


async def before_new(conn: asyncpg.Connection, user_id: str,
                     new: Sequence[tuple[str | None, str | None, datetime | None]],
                     gap_minutes: float) -> list[tuple[str, datetime] | None]:
    """For each memory about to be written, (agent_id, project_id, occurred_at: None for now), the
    stored turn before it: its text and when it occurred."""
    if not new:
        return []
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT n.ord, turn_before.content, turn_before.occurred_at
            FROM unnest({q.arg([a for a, _, _ in new])}::text[], {q.arg([pr for _, pr, _ in new])}::text[],
                        {q.arg([at for _, _, at in new])}::timestamptz[]) WITH ORDINALITY
                 AS n(agent_id, project_id, at, ord)
            CROSS JOIN LATERAL (SELECT {q.arg(user_id)}::text AS user_id, n.agent_id, n.project_id,
                                       coalesce(n.at, now()) AS occurred_at, {_UNSTORED}) t
            {before(q, gap_minutes, "t")}
            WHERE turn_before.content IS NOT NULL""", *q.args)
    found = {r["ord"]: (r["content"], r["occurred_at"]) for r in rows}
    return [found.get(i + 1) for i in range(len(new))]


async def before_stored(conn: asyncpg.Connection, user_id: str, ids: Sequence[UUID],
                        gap_minutes: float) -> dict[UUID, tuple[str, str, str | None]]:
    """For each live memory of `ids`: (its kind, its text, the text of the turn before it were it
    an episode)."""
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT m.id, m.kind, m.content, turn_before.content AS before FROM memories m
            {before(q, gap_minutes, "m")}
            WHERE m.user_id = {q.arg(user_id)} AND m.id = ANY({q.arg(list(ids))}::uuid[])
              AND m.deleted_at IS NULL""", *q.args)
    return {r["id"]: (r["kind"], r["content"], r["before"]) for r in rows}


async def after_stored(conn: asyncpg.Connection, user_id: str, ids: Sequence[UUID], gap_minutes: float) -> list[UUID]:
    """The live episodes whose turn before is one of `ids` (their vectors hold its text)."""
    q = Sql()
    return [r["id"] for r in await conn.fetch(
        f"""SELECT DISTINCT a.id FROM memories m CROSS JOIN LATERAL {_adjacent(q, gap_minutes, "m", ">")} a
            WHERE m.user_id = {q.arg(user_id)} AND m.id = ANY({q.arg(list(ids))}::uuid[])
              AND m.kind = 'episode'""", *q.args)]


async def store(conn: asyncpg.Connection, user_id: str, model: str,
                rows: Sequence[tuple[UUID, str, Sequence[float]]]) -> None:
    """Vectors made again for memories (derived data: no version, no history), each only if the
    memory still says the text it was made of."""
    await conn.executemany(
        "UPDATE memories SET embedding = $4, embedding_model = $5 WHERE user_id = $1 AND id = $2 AND content = $3",
        [(user_id, mid, content, np.asarray(v, dtype=np.float32), model) for mid, content, v in rows])


class MemoryTurns(MemoryStore):
    """The functions above in the caller's transaction (row-level security on its user)."""

    async def turns_before_new(self, p: Principal, new: Sequence[tuple[str | None, str | None, datetime | None]],
                               gap_minutes: float) -> list[tuple[str, datetime] | None]:
        async with self.reading(p) as conn:
            return await before_new(conn, p.user_id, new, gap_minutes)

    async def turns_before(self, p: Principal, ids: Sequence[UUID],
                           gap_minutes: float) -> dict[UUID, tuple[str, str, str | None]]:
        async with self.reading(p) as conn:
            return await before_stored(conn, p.user_id, ids, gap_minutes)

    async def turns_after(self, p: Principal, ids: Sequence[UUID], gap_minutes: float) -> list[UUID]:
        async with self.reading(p) as conn:
            return await after_stored(conn, p.user_id, ids, gap_minutes)

    async def drop_vectors(self, p: Principal, ids: Sequence[UUID]) -> None:
        """No vector for these memories until the backfill makes them again."""
        async with self.transaction(p) as conn:
            await conn.execute("UPDATE memories SET embedding = NULL, embedding_model = NULL "
                               "WHERE user_id = $1 AND id = ANY($2::uuid[])", p.user_id, list(ids))

    async def store_vectors(self, p: Principal, model: str, rows: Sequence[tuple[UUID, str, Sequence[float]]]) -> None:
        async with self.transaction(p) as conn:
            await store(conn, p.user_id, model, rows)
