"""What a first load into an empty store does to its indexes, for the vector index
(embeddings.py) and the text indexes (maintenance.py) alike: drop them only while the store holds
no memory, and build them with the working memory the operator set."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

T = TypeVar("T")


async def in_empty_store(conn: asyncpg.Connection, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T | None:
    """`work` in a transaction of its own when the store holds no memory at all; None when it
    holds one, when the role may not do the work, or when a lock another session holds outlasts a
    moment (nothing done then)."""
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL lock_timeout = '2s'")
            if await conn.fetchval("SELECT EXISTS (SELECT 1 FROM memories)"):
                return None
            return await work(conn)
    except (asyncpg.InsufficientPrivilegeError, asyncpg.LockNotAvailableError):
        return None


async def build_memory(conn: asyncpg.Connection, memory_mb: int) -> None:
    """The working memory of the index builds in `conn`'s transaction (0: the server's own)."""
    if memory_mb:
        await conn.execute(f"SET LOCAL maintenance_work_mem = '{int(memory_mb)}MB'")
