"""Server-wide secrets kept in the database, so every replica shares them."""

from __future__ import annotations

import asyncpg


async def cursor_secret(pool: asyncpg.Pool) -> bytes:
    value = await pool.fetchval("SELECT value FROM meta WHERE key = 'cursor_secret'")
    if value is None:
        raise RuntimeError("the database has no cursor secret: run `mcp-memory migrate`")
    return str(value).encode()
