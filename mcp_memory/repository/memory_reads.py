"""Reading memories: by id (counting the access or not), a page of a filtered list, and a memory's
history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from ..errors import NotFound
from ..graph.subjects import Subjects
from ..models import HistoryEntry, ListOrder, Memory, MemoryFilter, Principal
from . import graph_reads
from .memory_rows import to_memory
from .memory_store import MemoryStore
from .sql import Sql, live, successor


class MemoryReads(MemoryStore):
    async def peek_many(self, p: Principal, ids: Sequence[UUID]) -> list[Memory]:
        """Live, visible memories among `ids`, in the order given; no access is counted."""
        async with self.transaction(p) as conn:
            rows = {r["id"]: r for r in await self._fetch(conn, p, ids, deleted=False, successor=True)}
        return [to_memory(rows[i]) for i in ids if i in rows]

    async def structure(self, p: Principal, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
        """What the graph holds of each memory of `ids` (repository/graph_reads.py `structure_of`)."""
        async with self.reading(p) as conn:
            return await graph_reads.structure_of(conn, p, ids)

    async def subjects(self, p: Principal, ids: Sequence[UUID]) -> dict[UUID, Subjects]:
        """Whom each memory of `ids` is about and what it names, as the graph stored it
        (repository/graph_reads.py `subjects_of`)."""
        async with self.reading(p) as conn:
            return await graph_reads.subjects_of(conn, p, ids)

    async def get_many(self, p: Principal, ids: Sequence[UUID]) -> list[Memory]:
        """Live, visible memories among `ids`, counting the access (bookkeeping, never ranking)."""
        q = Sql()
        where = [*live(q, p), f"m.id = ANY({q.arg(list(ids))}::uuid[])"]
        async with self.transaction(p) as conn:
            rows = await conn.fetch(
                f"""UPDATE memories m SET access_count = access_count + 1, last_accessed = now()
                    WHERE {' AND '.join(where)} RETURNING *, {successor(q, p)}""", *q.args)
        by_id = {r["id"]: r for r in rows}
        return [to_memory(by_id[i]) for i in ids if i in by_id]

    async def list(self, p: Principal, f: MemoryFilter | None, order: ListOrder, limit: int,
                   after: Sequence[Any] | None = None) -> tuple[list[Memory], list[Any] | None]:
        """One page in keyset order; returns it with the sort key to pass as `after` for the next
        page (None on the last page)."""
        q = Sql()
        where = live(q, p, f)
        keys = ["occurred_at", "id"] if order != "importance" else ["importance", "occurred_at", "id"]
        direction = "ASC" if order == "oldest" else "DESC"
        if after is not None:
            op = ">" if order == "oldest" else "<"
            # Compare in the column's own types: a real importance read back as a double
            # must find exactly itself again.
            casts = {"importance": "::real", "occurred_at": "::timestamptz", "id": "::uuid"}
            bounds = ", ".join(f"{q.arg(v)}{casts[k]}" for k, v in zip(keys, after, strict=True))
            where.append(f"({', '.join(f'm.{k}' for k in keys)}) {op} ({bounds})")
        sql = (f"SELECT *, {successor(q, p)} FROM memories m WHERE {' AND '.join(where)} "
               f"ORDER BY {', '.join(f'm.{k} {direction}' for k in keys)} LIMIT {q.arg(limit + 1)}")
        async with self.transaction(p) as conn:
            rows = await conn.fetch(sql, *q.args)
        next_key = [rows[limit - 1][k] for k in keys] if len(rows) > limit else None
        return [to_memory(r) for r in rows[:limit]], next_key

    async def history(self, p: Principal, memory_id: UUID, limit: int) -> list[HistoryEntry]:
        async with self.transaction(p) as conn:
            if not await self._fetch(conn, p, [memory_id], deleted=None):
                raise NotFound(f"no memory {memory_id} in this session's scope")
            rows = await conn.fetch(
                """SELECT * FROM memory_history WHERE user_id = $1 AND memory_id = $2
                   ORDER BY seq LIMIT $3""", p.user_id, memory_id, limit)
        return [HistoryEntry(seq=r["seq"], event=r["event"], actor=r["actor"], client=r["client"],
                             reason=r["reason"], old=r["old"], new=r["new"], created_at=r["created_at"])
                for r in rows]
