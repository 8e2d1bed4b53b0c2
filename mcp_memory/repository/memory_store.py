"""What every stage of MemoryRepository stands on: the caller's transaction, the history row a
mutation writes in it, the decision job a new memory gets in it, and reading rows by id under the
caller's scope."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from ..errors import NotFound
from ..fresh import Fresh
from ..models import Principal
from . import jobs
from .memory_rows import _ids_text, _own
from .sql import Sql, local_transaction, planner_rows, read_transaction, visible
from .sql import successor as successor_of

T = TypeVar("T")


async def history(conn: asyncpg.Connection, p: Principal, rows: Sequence[tuple[UUID, str, Any, Any]],
                  reason: str | None, request_id: str | None = None) -> None:
    """One history row for each of `rows` (memory, event, old, new), as `p` changed them."""
    await conn.executemany(
        """INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, client, request_id, reason)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
        [(p.user_id, mid, event, old, new, p.actor, p.client, request_id, reason) for mid, event, old, new in rows])


class MemoryStore:
    def __init__(self, pool: asyncpg.Pool, *, decision_attempts: int | None = None,
                 undecided_kinds: frozenset[str] = frozenset()) -> None:
        self.pool = pool
        # Given when a decisions provider is configured: each new memory gets a decision job in
        # its write's transaction, tried this many times (decisions/jobs.py).
        self.decision_attempts = decision_attempts
        # Kinds whose memories get no decision job: with extraction on, a captured turn's facts are
        # extracted and decided, so deciding the turn itself would only spend a model call on it.
        self.undecided_kinds = undecided_kinds
        # Row counts by the planner's statistics, kept a minute (`counted`): a store does not change
        # size by much in a minute, and a search need not pay a round trip for them each time.
        self._counted: Fresh[Any] = Fresh()

    async def counted(self, key: Hashable, count: Callable[[], Awaitable[T]]) -> T:
        """`count()`, or what it gave for `key` less than a minute ago (the last 1,024 keys)."""
        known = self._counted.get(key)
        if known is not None:
            return known
        rows = await count()
        self._counted.put(key, rows)
        return rows

    async def index_rows(self, conn: asyncpg.Connection) -> float:
        """About how many rows the table (and so the vector index) holds (0 before any ANALYZE)."""
        async def count() -> float:
            return max(0.0, await planner_rows(conn))
        return await self.counted("memories", count)

    async def _enqueue(self, conn: asyncpg.Connection, p: Principal, rows: Sequence[asyncpg.Record],
                       explicit: Sequence[UUID] = ()) -> None:
        ids = [r["id"] for r in rows if r["kind"] not in self.undecided_kinds]
        if self.decision_attempts is not None and ids:
            await jobs.enqueue(conn, p, ids, explicit=explicit, max_attempts=self.decision_attempts)

    @asynccontextmanager
    async def transaction(self, p: Principal, *, kept_plans: bool = False,
                          **gucs: str) -> AsyncIterator[asyncpg.Connection]:
        """One short transaction tagged with the caller's user (row-level security keys on it);
        `gucs` are further transaction-local settings (`hnsw__ef_search` sets hnsw.ef_search);
        `kept_plans`: sql.local_transaction's."""
        async with local_transaction(self.pool, _settings(p, gucs), kept_plans) as conn:
            yield conn

    @asynccontextmanager
    async def writing(self, p: Principal) -> AsyncIterator[asyncpg.Connection]:
        """`transaction` for storing, changing, forgetting or restoring memories. Its statements find
        their rows by key (an id, the scope's text hash, an entity's name, a subject's attribute), so
        each runs on the generic plan its prepared statement keeps on the connection, planned at its
        first call there, instead of at every call as the pools' force_custom_plan has it for the
        searches, whose plans follow their values (a write's transaction 5.1 -> 4.8 ms p50,
        docs/benchmarks.md)."""
        async with self.transaction(p, kept_plans=True) as conn:
            yield conn

    @asynccontextmanager
    async def reading(self, p: Principal, **gucs: str) -> AsyncIterator[asyncpg.Connection]:
        """`transaction` for a body that only reads (a search): read only, and the caller does
        not wait for its end (sql.read_transaction)."""
        async with read_transaction(self.pool, _settings(p, gucs)) as conn:
            yield conn


    async def _fetch(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], *,
                     deleted: bool | None, lock: bool = False, successor: bool = False) -> list[asyncpg.Record]:
        """`successor`: with the live successor each names (sql.py `successor`), for a read."""
        q = Sql()
        where = [visible(q, p), f"m.id = ANY({q.arg(list(ids))}::uuid[])"]
        if deleted is not None:
            where.append("m.deleted_at IS NOT NULL" if deleted else "m.deleted_at IS NULL")
        columns = f"*, {successor_of(q, p)}" if successor else "*"
        sql = f"SELECT {columns} FROM memories m WHERE {' AND '.join(where)} ORDER BY m.id"
        return await conn.fetch(sql + (" FOR UPDATE" if lock else ""), *q.args)

    async def _lock_own(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], *, deleted: bool,
                        verb: str, missing: str) -> list[asyncpg.Record]:
        """Every memory `ids` names, locked and this credential's to `verb`; otherwise NotFound with
        `missing` ({ids}: the ones not there) or PermissionDenied, and nothing changes."""
        rows = await self._fetch(conn, p, ids, deleted=deleted, lock=True)
        absent = set(ids) - {r["id"] for r in rows}
        if absent:
            raise NotFound(missing.format(ids=_ids_text(sorted(absent))))
        _own(p, rows, verb)
        return rows


def _settings(p: Principal, gucs: dict[str, str]) -> dict[str, str]:
    """The caller's user, agent and project (row-level security keys on them) and `gucs`."""
    settings = {f"mcp_memory.{name}": value or "" for name, value in
                (("user_id", p.user_id), ("agent_id", p.agent_id), ("project_id", p.project_id))}
    return settings | {name.replace("__", "."): value for name, value in gucs.items()}
