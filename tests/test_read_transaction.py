"""sql.read_transaction, the search's transaction: the caller gets its rows before the COMMIT is
answered, yet every connection goes back to the pool ended, with none of the caller's settings,
and a body that tries to write is refused and rolled back."""

from __future__ import annotations

import anyio
import asyncpg
import pytest

from mcp_memory.db import init_connection, reset_connection
from mcp_memory.repository.sql import read_transaction

SETTINGS = {"mcp_memory.user_id": "alice", "mcp_memory.agent_id": "", "mcp_memory.project_id": ""}


async def one_connection_pool(dsn: str) -> asyncpg.Pool:
    # as the app pool: no RESET ALL on release, so a setting left behind would show
    return await asyncpg.create_pool(dsn, min_size=1, max_size=1, init=init_connection, reset=reset_connection)


async def test_each_read_ends_and_leaves_nothing_set(database) -> None:
    pool = await one_connection_pool(database.dsn)
    try:
        with anyio.fail_after(30):  # a connection never given back would hang the next acquire
            for _ in range(20):
                async with read_transaction(pool, SETTINGS) as conn:
                    assert conn.is_in_transaction()
                    assert await conn.fetchval("SELECT current_setting('mcp_memory.user_id')") == "alice"
                async with pool.acquire() as conn:
                    assert not conn.is_in_transaction()
                    assert await conn.fetchval("SELECT current_setting('mcp_memory.user_id', true)") in (None, "")
    finally:
        with anyio.fail_after(10):
            await pool.close()


async def test_a_read_that_writes_is_refused_and_rolled_back(database) -> None:
    pool = await one_connection_pool(database.dsn)
    try:
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            async with read_transaction(pool, SETTINGS) as conn:
                await conn.execute("INSERT INTO meta (key, value) VALUES ('read-only?', '{}')")
        async with pool.acquire() as conn:
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT count(*) FROM meta WHERE key = 'read-only?'") == 0
    finally:
        with anyio.fail_after(10):
            await pool.close()
