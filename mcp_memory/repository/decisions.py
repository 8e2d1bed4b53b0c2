"""The SQL of applying and undoing a model's decision: lock the memories involved, link or softly
forget them, and write history rows that name the pipeline, provider, model and reason. The rules
(what may be touched) are the service's (decisions/apply.py); every call runs inside the caller's
one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from ..graph.subjects import Subjects
from ..models import Principal
from .memories import MemoryRepository

PIPELINE_ACTOR = "pipeline:decisions"


def request_id(job_id: int) -> str:
    return f"job:{job_id}"


class DecisionRepository:
    def __init__(self, memories: MemoryRepository) -> None:
        self.memories = memories

    def transaction(self, p: Principal) -> AbstractAsyncContextManager[asyncpg.Connection]:
        return self.memories.transaction(p)

    async def lock(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID]) -> dict[UUID, asyncpg.Record]:
        """The visible memories among `ids`, live or forgotten, locked for the transaction."""
        rows = await self.memories._fetch(conn, p, list(dict.fromkeys(ids)), deleted=None, lock=True)
        return {r["id"]: r for r in rows}

    async def subject(self, p: Principal, memory_id: UUID) -> asyncpg.Record | None:
        """The memory a job is about, with its vector (None: gone or out of the writer's scope)."""
        async with self.memories.transaction(p) as conn:
            rows = await self.memories._fetch(conn, p, [memory_id], deleted=None)
        return rows[0] if rows else None

    async def subjects(self, p: Principal, ids: Sequence[UUID]) -> dict[UUID, Subjects]:
        """Whom each of `ids` is about by the graph: what the guard reads (decisions/guard.py)."""
        return await self.memories.subjects(p, ids)

    async def supersede(self, conn: asyncpg.Connection, ids: Sequence[UUID], user_id: str,
                        successor: UUID | None) -> None:
        await conn.execute("UPDATE memories SET superseded_by = $3, updated_at = now(), version = version + 1 "
                           "WHERE user_id = $1 AND id = ANY($2::uuid[])", user_id, list(ids), successor)

    async def rewrite(self, conn: asyncpg.Connection, user_id: str, memory_id: UUID, content: str, hash_: str,
                      embedding: Sequence[float] | None, model: str | None) -> bool:
        """Give a memory a new text (a decision's merged text, or the old one back on undo); False
        (nothing changed) if an identical live memory is in its scope. Without a vector the
        backfill embeds it later."""
        vector = np.asarray(embedding, dtype=np.float32) if embedding is not None else None
        await conn.execute("SAVEPOINT decision_rewrite")
        try:
            await conn.execute(
                """UPDATE memories SET content = $3, content_hash = $4, embedding = $5, embedding_model = $6,
                          updated_at = now(), version = version + 1
                   WHERE user_id = $1 AND id = $2""", user_id, memory_id, content, hash_, vector, model)
        except asyncpg.UniqueViolationError:
            await conn.execute("ROLLBACK TO SAVEPOINT decision_rewrite")
            return False
        await conn.execute("RELEASE SAVEPOINT decision_rewrite")
        return True

    async def forget(self, conn: asyncpg.Connection, ids: Sequence[UUID], user_id: str, reason: str) -> None:
        await conn.execute("UPDATE memories SET deleted_at = now(), deleted_reason = $3 "
                           "WHERE user_id = $1 AND id = ANY($2::uuid[])", user_id, list(ids), reason)

    async def restore(self, conn: asyncpg.Connection, memory_id: UUID, user_id: str) -> bool:
        """Bring one forgotten memory back; False (and nothing changed) if an identical live
        memory was written since. A savepoint keeps the caller's transaction usable."""
        await conn.execute("SAVEPOINT decision_restore")
        try:
            await conn.execute("UPDATE memories SET deleted_at = NULL, deleted_reason = NULL "
                               "WHERE user_id = $1 AND id = $2", user_id, memory_id)
        except asyncpg.UniqueViolationError:
            await conn.execute("ROLLBACK TO SAVEPOINT decision_restore")
            return False
        await conn.execute("RELEASE SAVEPOINT decision_restore")
        return True

    async def history(self, conn: asyncpg.Connection, user_id: str, rows: Sequence[tuple[UUID, str, Any, Any]], *,
                      actor: str, client: str | None, reason: str, request: str) -> None:
        await conn.executemany(
            """INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, client, request_id, reason)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
            [(user_id, mid, event, old, new, actor, client, request, reason) for mid, event, old, new in rows])

    async def job_rows(self, conn: asyncpg.Connection, p: Principal, job_id: int) -> list[asyncpg.Record]:
        """The history rows a decision wrote, in order."""
        return await conn.fetch(
            """SELECT * FROM memory_history WHERE user_id = $1 AND request_id = $2 ORDER BY seq""",
            p.user_id, request_id(job_id))

    async def job_of_history(self, conn: asyncpg.Connection, p: Principal, seq: int) -> int | None:
        """The decision job a history row belongs to (None: not a decision's row)."""
        rid = await conn.fetchval("SELECT request_id FROM memory_history WHERE user_id = $1 AND seq = $2",
                                  p.user_id, seq)
        return int(rid[4:]) if rid and rid.startswith("job:") else None

    async def last_job_touching(self, conn: asyncpg.Connection, p: Principal, memory_id: UUID) -> int | None:
        """The latest decision that changed this memory, or was made about it."""
        rid = await conn.fetchval(
            """SELECT request_id FROM memory_history WHERE user_id = $1 AND memory_id = $2 AND actor = $3
               AND request_id LIKE 'job:%' ORDER BY seq DESC LIMIT 1""", p.user_id, memory_id, PIPELINE_ACTOR)
        return int(rid[4:]) if rid else None
