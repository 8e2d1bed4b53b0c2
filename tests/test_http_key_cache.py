"""An HTTP server trusts an API key it verified for api_key_cache_s (one database transaction per
key and interval, not per call), never past the key's expiry, and not at all with 0."""

from __future__ import annotations

import asyncio

from mcp_memory.db import Database

from .http_server import http_server
from .test_http import make_key, status


async def revoke(db: Database, name: str) -> None:
    async with db.admin.acquire() as conn:
        await conn.execute("UPDATE api_keys SET revoked_at = now() WHERE name = $1", name)


async def test_a_verified_key_is_trusted_for_the_interval_then_asked_again(database: Database, db_url: str) -> None:
    kept = await make_key(database, "alice", name="kept")
    with http_server(db_url, env={"MCP_MEMORY_API_KEY_CACHE_S": "2"}) as base:
        assert status(base, kept).status_code == 200
        await revoke(database, "kept")
        assert status(base, kept).status_code == 200  # trusted: the database was not asked
        await asyncio.sleep(2.2)
        assert status(base, kept).status_code == 401


async def test_zero_asks_the_database_on_every_request(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice", name="asked")
    with http_server(db_url, env={"MCP_MEMORY_API_KEY_CACHE_S": "0"}) as base:
        assert status(base, key).status_code == 200
        await revoke(database, "asked")
        assert status(base, key).status_code == 401


async def test_a_key_is_never_trusted_past_its_expiry(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice", name="short")
    with http_server(db_url, env={"MCP_MEMORY_API_KEY_CACHE_S": "600"}) as base:
        async with database.admin.acquire() as conn:  # the server is up: its start takes seconds
            await conn.execute("UPDATE api_keys SET expires_at = now() + interval '2 seconds' WHERE name = 'short'")
        assert status(base, key).status_code == 200
        await asyncio.sleep(2.2)
        assert status(base, key).status_code == 401


async def test_a_refusal_is_not_remembered(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice", name="late")
    async with database.admin.acquire() as conn:
        await conn.execute("UPDATE api_keys SET revoked_at = now() WHERE name = 'late'")
    with http_server(db_url, env={"MCP_MEMORY_API_KEY_CACHE_S": "600"}) as base:
        assert status(base, key).status_code == 401
        async with database.admin.acquire() as conn:
            await conn.execute("UPDATE api_keys SET revoked_at = NULL WHERE name = 'late'")
        assert status(base, key).status_code == 200
