"""What the server asks PostgreSQL about itself (not tenant data): its version, extensions,
roles, settings the embedded server tunes, databases to create, whether it answers, and where the
memories table stores its vectors (no row's content is read)."""

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


# A vector of up to this many dimensions fits a row of a page beside its text's pointer (6 kB of
# floats), so migration 024 keeps it in the row; a larger model's goes out of line by design.
INLINE_DIMENSIONS = 1536


async def vectors_out_of_line(conn: asyncpg.Connection, sample: int) -> tuple[int, int] | None:
    """(how many of the table's first `sample` embedded memories, its oldest rows, keep a vector
    that fits the row in the TOAST relation, how many were read); None before PostgreSQL 17, which
    cannot tell where a value is stored."""
    if conn.get_server_version().major < 17:  # asyncpg read it at connect: no round trip
        return None
    row = await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL "
        "AND vector_dims(embedding) <= $2) AS out, count(*) AS read "
        "FROM (SELECT embedding FROM memories WHERE embedding IS NOT NULL LIMIT $1) AS first_rows",
        sample, INLINE_DIMENSIONS)
    return int(row["out"]), int(row["read"])
