"""What the server asks PostgreSQL about itself (not tenant data): its version, extensions,
roles, settings the embedded server tunes, databases to create, whether it answers, where the
memories table stores its vectors, and which of its pages to read into the page cache (no row's
content is read)."""

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


async def install_prewarm(conn: asyncpg.Connection) -> None:
    """pg_prewarm, where the server offers it (the embedded server: it is ours to configure). A
    server of the user's own gets it from a superuser (docs/operations.md). Every open asks, so the
    catalog first (0.17 ms; the available extensions are read from disk, 0.8)."""
    if await prewarm_installed(conn):
        return
    if "pg_prewarm" in await extensions(conn, ("pg_prewarm",)):
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        except asyncpg.UniqueViolationError:  # IF NOT EXISTS is no lock: another server opening it made it first
            pass


async def prewarm_installed(conn: asyncpg.Connection) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'"))


async def search_relations(conn: asyncpg.Connection) -> list[tuple[str, int]]:
    """(name, blocks) of what a search reads, most read first: the memories' vector indexes (every
    search walks one), the table (each row a walk visits is fetched for its scope and filters),
    then the table's other indexes, smallest first (the text indexes, the keys)."""
    rows = await conn.fetch(
        "SELECT c.oid::regclass::text AS name, pg_relation_size(c.oid) / current_setting('block_size')::int AS blocks, "
        "CASE WHEN c.oid = 'memories'::regclass THEN 1 WHEN a.amname = 'hnsw' THEN 0 ELSE 2 END AS rank "
        "FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam "
        "WHERE c.oid = 'memories'::regclass "
        "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'memories'::regclass) "
        "ORDER BY rank, blocks, name")
    return [(r["name"], int(r["blocks"])) for r in rows]


async def shared_buffer_blocks(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers'"))


async def prewarm(conn: asyncpg.Connection, relation: str, first: int, last: int) -> int:
    """Read blocks `first`..`last` of `relation` into shared_buffers; how many were read."""
    return int(await conn.fetchval("SELECT pg_prewarm($1::regclass, 'buffer', 'main', $2, $3)", relation, first, last))
