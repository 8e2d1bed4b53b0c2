"""The graph's backlog (sql/018_graph_backlog.sql): memories whose names it has not read, those
stored before it existed and those imported verbatim. Read in batches across users on the owner's
pool, each batch in one transaction with the names it records (mcp_memory/backlog.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from ..graph import Said
from ..models import ALL_PERMISSIONS, Principal
from . import graph

BACKLOG_ACTOR = "system:graph-backlog"


class GraphBacklog:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def pending(self) -> int:
        return await self.pool.fetchval("SELECT count(*) FROM graph_backlog")

    async def read(self, size: int, said: Callable[[asyncpg.Record], Said]) -> int:
        """Record the names of up to `size` memories of the backlog (oldest first, so a first name
        meets the full names written before it, as when they were written), as `said` reads each,
        and take them off it; a batch another reader holds is skipped. Returns how many."""
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                """SELECT m.user_id, m.id, m.content, m.kind, m.agent_id, m.project_id, m.occurred_at, b.given
                   FROM (SELECT user_id, memory_id, given, created_at FROM graph_backlog
                         ORDER BY created_at NULLS FIRST, memory_id LIMIT $1 FOR UPDATE SKIP LOCKED) b
                   JOIN memories m ON m.user_id = b.user_id AND m.id = b.memory_id
                   ORDER BY b.created_at NULLS FIRST, b.memory_id""", size)
            by_user: dict[str, list[tuple[asyncpg.Record, Said]]] = {}
            for row in rows:
                by_user.setdefault(row["user_id"], []).append((row, said(row)))
            for user in sorted(by_user):
                await graph.lock_names(conn, user, [s for _, s in by_user[user]])
            for user in sorted(by_user):
                mine = by_user[user]
                batch = graph.Batch.of([row for row, _ in mine], [s for _, s in mine])
                for row, read in mine:
                    p = Principal(user_id=user, agent_id=row["agent_id"], project_id=row["project_id"],
                                  permissions=ALL_PERMISSIONS, actor=BACKLOG_ACTOR, client=None)
                    await graph.record(conn, p, row, read, batch)
                await batch.flush(conn, user)
            await conn.execute(
                "DELETE FROM graph_backlog b USING unnest($1::text[], $2::uuid[]) x(user_id, memory_id) "
                "WHERE b.user_id = x.user_id AND b.memory_id = x.memory_id",
                [r["user_id"] for r in rows], [r["id"] for r in rows])
        return len(rows)


async def enqueue(conn: asyncpg.Connection, user_id: str,
                  items: Sequence[tuple[UUID, datetime, dict[str, Any] | None]]) -> None:
    """Put memories just inserted verbatim (an import) on the backlog, with their created_at (its
    order) and what their writer said of them (`about`, `key`), in the inserting transaction."""
    await conn.executemany("INSERT INTO graph_backlog (user_id, memory_id, created_at, given) VALUES ($1, $2, $3, $4) "
                           "ON CONFLICT DO NOTHING", [(user_id, mid, at, given) for mid, at, given in items])
