"""What the server asks PostgreSQL about itself (not tenant data): its version, extensions,
roles, settings the embedded server tunes, databases to create, and whether it answers."""

from __future__ import annotations

import asyncpg


async def ping(pool: asyncpg.Pool) -> None:
    await pool.fetchval("SELECT 1")


async def server_version(conn: asyncpg.Connection) -> str:
    return str(await conn.fetchval("SHOW server_version"))


async def current_user(conn: asyncpg.Connection) -> str:
    return str(await conn.fetchval("SELECT current_user"))


async def role_usable(conn: asyncpg.Connection, role: str) -> bool:
    """The role exists and the connecting user is a member of it (so it may SET ROLE)."""
    return bool(await conn.fetchval(
        "SELECT pg_has_role(current_user, oid, 'MEMBER') FROM pg_roles WHERE rolname = $1", role))


async def extensions(conn: asyncpg.Connection, names: tuple[str, ...]) -> dict[str, asyncpg.Record]:
    """name -> (default_version, installed_version) of the extensions the server can offer."""
    rows = await conn.fetch("SELECT name, default_version, installed_version FROM pg_available_extensions "
                            "WHERE name = ANY($1::text[])", list(names))
    return {r["name"]: r for r in rows}


async def create_database(conn: asyncpg.Connection, name: str) -> None:
    """CREATE DATABASE unless it exists; a race with another process is no error."""
    if await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
        return
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    except (asyncpg.DuplicateDatabaseError, asyncpg.UniqueViolationError):
        pass


async def autovacuum_naptime(conn: asyncpg.Connection, value: str) -> None:
    """Set autovacuum's interval server-wide (the embedded server only: it is ours to configure)."""
    if await conn.fetchval("SELECT current_setting('autovacuum_naptime')") != value:
        await conn.execute(f"ALTER SYSTEM SET autovacuum_naptime = '{value}'")
        await conn.execute("SELECT pg_reload_conf()")


async def page_cache(conn: asyncpg.Connection) -> tuple[int, int]:
    """(the bytes of the memories' vector indexes, the server's shared_buffers in bytes)."""
    row = await conn.fetchrow(
        "SELECT (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = 'memories'::regclass AND a.amname = 'hnsw')::bigint AS vector_index, "
        "(SELECT setting::bigint * current_setting('block_size')::bigint FROM pg_settings "
        "WHERE name = 'shared_buffers') AS shared_buffers")
    return int(row["vector_index"]), int(row["shared_buffers"])
