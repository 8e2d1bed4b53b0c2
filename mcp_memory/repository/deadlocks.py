"""Work PostgreSQL stopped to break a deadlock goes again from its start: two transactions that
take the same rows in other orders (an import's batches holding one memory twice, an update or a
key fix beside a write of the same subject) wait on each other until PostgreSQL stops one, and
nothing of that one was kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

T = TypeVar("T")

ATTEMPTS = 3  # tries in all: the first and two more


async def again_if_stopped(work: Callable[[], Awaitable[T]], attempts: int = ATTEMPTS) -> T:
    """`work()`, again where PostgreSQL stopped it to break a deadlock, at most `attempts` times."""
    for attempt in range(attempts):
        try:
            return await work()
        except asyncpg.DeadlockDetectedError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
