"""What a session's memories look like from above: counts, the pinned core, and the tags and ids
that complete a half-typed argument. Read-only."""

from __future__ import annotations

from uuid import UUID

from ..models import Memory, Principal, ScopeInfo, Stats
from .memories import MemoryRepository, to_memory
from .sql import Sql, visible


class OverviewRepository:
    def __init__(self, memories: MemoryRepository) -> None:
        self.memories = memories

    async def stats(self, p: Principal, top_tags: int) -> Stats:
        q = Sql()
        where = visible(q, p)
        async with self.memories.transaction(p) as conn:
            totals = await conn.fetchrow(
                f"""SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS active,
                           count(*) FILTER (WHERE deleted_at IS NOT NULL) AS forgotten,
                           count(*) FILTER (WHERE deleted_at IS NULL AND pinned) AS pinned,
                           count(*) FILTER (WHERE deleted_at IS NULL AND embedding IS NULL) AS without_vector,
                           min(occurred_at) FILTER (WHERE deleted_at IS NULL) AS oldest,
                           max(occurred_at) FILTER (WHERE deleted_at IS NULL) AS newest
                    FROM memories m WHERE {where}""", *q.args)
            kinds = await conn.fetch(
                f"SELECT kind, count(*) AS n FROM memories m WHERE {where} AND deleted_at IS NULL GROUP BY kind",
                *q.args)
            scopes = await conn.fetch(
                f"""SELECT agent_id IS NOT NULL AS a, project_id IS NOT NULL AS pr, count(*) AS n
                    FROM memories m WHERE {where} AND deleted_at IS NULL GROUP BY 1, 2""", *q.args)
        by_scope = {ScopeInfo.of("x" if r["a"] else None, "x" if r["pr"] else None).level: r["n"] for r in scopes}
        return Stats(active=totals["active"], forgotten=totals["forgotten"], pinned=totals["pinned"],
                     by_kind={r["kind"]: r["n"] for r in kinds}, by_scope=by_scope,
                     top_tags=dict(await self.tags(p, "", top_tags)), without_vector=totals["without_vector"],
                     newest=totals["newest"], oldest=totals["oldest"])

    async def pinned(self, p: Principal, limit: int) -> list[Memory]:
        """Core memories: pinned, highest priority first (then importance, then the newest)."""
        q = Sql()
        where = visible(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""SELECT * FROM memories m WHERE {where} AND deleted_at IS NULL AND pinned
                    ORDER BY priority DESC, importance DESC, occurred_at DESC, id LIMIT {q.arg(limit)}""", *q.args)
        return [to_memory(r) for r in rows]

    async def tags(self, p: Principal, prefix: str, limit: int) -> list[tuple[str, int]]:
        """Tags in use that start with prefix, most used first."""
        q = Sql()
        where = visible(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""SELECT t.tag, count(*) AS n FROM memories m, unnest(m.tags) AS t(tag)
                    WHERE {where} AND deleted_at IS NULL AND starts_with(t.tag, {q.arg(prefix)})
                    GROUP BY t.tag ORDER BY n DESC, t.tag LIMIT {q.arg(limit)}""", *q.args)
        return [(r["tag"], r["n"]) for r in rows]

    async def ids(self, p: Principal, prefix: str, limit: int) -> list[UUID]:
        """Ids of live memories that start with prefix, newest first."""
        q = Sql()
        where = visible(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""SELECT id FROM memories m WHERE {where} AND deleted_at IS NULL
                    AND starts_with(m.id::text, {q.arg(prefix.lower())})
                    ORDER BY occurred_at DESC LIMIT {q.arg(limit)}""", *q.args)
        return [r["id"] for r in rows]
