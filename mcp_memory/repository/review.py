"""What the review console asks of the store beyond the tools: recently forgotten memories, writes
per day, what retention takes next, and marking an existing memory as superseding others. Every
query takes the caller's Principal and its scope rule, like the rest of the repository."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from uuid import UUID

from ..errors import NotFound
from ..models import Memory, Principal
from .memories import MemoryRepository, to_memory
from .sql import Sql, live, visible


async def forgotten(repo: MemoryRepository, p: Principal, since: datetime, limit: int) -> list[Memory]:
    """Forgotten memories still inside their restore window, the most recently forgotten first."""
    q = Sql()
    where = visible(q, p)
    async with repo.transaction(p) as conn:
        rows = await conn.fetch(
            f"""SELECT * FROM memories m WHERE {where} AND m.deleted_at IS NOT NULL AND m.deleted_at >= {q.arg(since)}
                ORDER BY m.deleted_at DESC, m.id LIMIT {q.arg(limit)}""", *q.args)
    return [to_memory(r) for r in rows]


async def written_per_day(repo: MemoryRepository, p: Principal, since: datetime) -> list[tuple[date, int]]:
    """Memories created per UTC day since `since` (forgotten ones too: they were written)."""
    q = Sql()
    where = visible(q, p)
    async with repo.transaction(p) as conn:
        rows = await conn.fetch(
            f"""SELECT (m.created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM memories m
                WHERE {where} AND m.created_at >= {q.arg(since)} GROUP BY 1 ORDER BY 1""", *q.args)
    return [(r["day"], r["n"]) for r in rows]


async def oldest_tombstones(repo: MemoryRepository, p: Principal, limit: int) -> list[Memory]:
    """Forgotten memories in the order the retention sweep will delete them for good."""
    q = Sql()
    where = visible(q, p)
    async with repo.transaction(p) as conn:
        rows = await conn.fetch(
            f"""SELECT * FROM memories m WHERE {where} AND m.deleted_at IS NOT NULL
                ORDER BY m.deleted_at, m.id LIMIT {q.arg(limit)}""", *q.args)
    return [to_memory(r) for r in rows]


async def stalest(repo: MemoryRepository, p: Principal, limit: int) -> list[tuple[Memory, datetime]]:
    """Live unpinned memories by when they were last read or changed, oldest first: the order in
    which the stale sweep (when configured) forgets them. Same rule as maintenance._forget_stale."""
    q = Sql()
    where = " AND ".join(live(q, p))
    async with repo.transaction(p) as conn:
        rows = await conn.fetch(
            f"""SELECT *, greatest(coalesce(m.last_accessed, m.created_at), m.updated_at) AS touched
                FROM memories m WHERE {where} AND NOT m.pinned
                ORDER BY touched, m.id LIMIT {q.arg(limit)}""", *q.args)
    return [(to_memory(r), r["touched"]) for r in rows]


async def supersede(repo: MemoryRepository, p: Principal, successor: UUID, older: Sequence[UUID], *,
                    request_id: str | None = None) -> None:
    """Mark `older` as replaced by the live, visible `successor`, with their history rows, in one
    transaction (the same rule memory_write's `supersedes` applies)."""
    async with repo.transaction(p) as conn:
        if not await repo._fetch(conn, p, [successor], deleted=False):
            raise NotFound(f"no live memory {successor} in this session's scope")
        await repo._supersede(conn, p, successor, older, request_id)
