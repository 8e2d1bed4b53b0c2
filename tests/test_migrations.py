"""Migrations: applied in order, recorded, idempotent, safe when processes race."""

from __future__ import annotations

import asyncio

import asyncpg

from mcp_memory.db.migrate import available_migrations, migrate, pending_migrations


async def test_fresh_database_migrates_once(make_db, pg) -> None:
    url = await make_db()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        assert [m.name for m in await pending_migrations(conn)] == [m.name for m in available_migrations()]
        first = await migrate(conn)
        assert first == [m.name for m in available_migrations()] and first[0] == "001_init.sql"
        assert await migrate(conn) == []
        assert await pending_migrations(conn) == []
        recorded = await conn.fetch("SELECT version, checksum FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["checksum"]) for r in recorded] == \
            [(m.version, m.checksum) for m in available_migrations()]
        extensions = {r["extname"] for r in await conn.fetch("SELECT extname FROM pg_extension")}
        assert {"vector", "pg_trgm"} <= extensions
    finally:
        await conn.close()


async def test_concurrent_migrations_apply_each_file_once(make_db) -> None:
    url = await make_db()
    setup = await asyncpg.connect(url)
    await setup.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    await setup.close()
    conns = [await asyncpg.connect(url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
        applied = [name for r in results for name in r]
        assert sorted(applied) == sorted(m.name for m in available_migrations())
    finally:
        for c in conns:
            await c.close()
