"""Planner statistics follow bursts of writes on a PostgreSQL with default autovacuum settings
(the test server is one: only the embedded server started by `serve` is tuned)."""

from __future__ import annotations

import anyio

from mcp_memory.db import Database
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService


async def analyze_count(database: Database) -> int:
    async with database.admin.acquire() as conn:
        return await conn.fetchval(
            "SELECT analyze_count + autoanalyze_count FROM pg_stat_user_tables WHERE relname = 'memories'")


async def planner_rows(database: Database) -> float:
    async with database.admin.acquire() as conn:
        return await conn.fetchval("SELECT reltuples FROM pg_class WHERE relname = 'memories'")


async def eventually(check, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while True:
            if await check():
                return
            await anyio.sleep(0.05)


async def test_a_burst_of_writes_is_analyzed_in_the_background(service: MemoryService, database: Database,
                                                              alice: Principal) -> None:
    stats = service.statistics
    assert stats is not None
    stats.min_writes = 40
    async with anyio.create_task_group() as tg:
        tg.start_soon(stats.run_forever)
        async def analyzed_at_start() -> bool:  # the fresh table was never analyzed
            return stats.analyzed > 0

        await eventually(analyzed_at_start)
        before = await analyze_count(database)
        for i in range(39):
            await service.write(alice, f"burst memory number {i} about topic {i % 7}")
        await anyio.sleep(0.3)
        assert await analyze_count(database) == before  # below the threshold: nothing yet
        await service.write(alice, "the fortieth write")
        async def analyzed_again() -> bool:
            return await analyze_count(database) > before

        await eventually(analyzed_again)  # autovacuum with default settings would take a minute
        assert await planner_rows(database) >= 40
        assert stats.pending == 0 and stats.threshold == 40  # a tenth of 40 rows is less than the minimum
        tg.cancel_scope.cancel()
