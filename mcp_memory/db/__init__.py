"""Database bootstrap: the embedded server or a given URL, migrations, and the asyncpg pool."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import anyio
import asyncpg
from pgvector.asyncpg import register_vector

from ..config import Settings
from ..encoding import to_json
from ..repository import catalog, sql
from .embedded import EmbeddedPostgres
from .migrate import migrate

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "mcp_memory"


@dataclass
class Database:
    """`pool` runs as the row-level-security application role (when the deployment has it);
    `admin` runs as the connecting owner, for cross-user maintenance only."""

    pool: asyncpg.Pool
    admin: asyncpg.Pool
    dsn: str
    embedded: EmbeddedPostgres | None = None
    applied: list[str] = field(default_factory=list)
    app_role: str | None = None

    async def close(self) -> None:
        await self.pool.close()
        await self.admin.close()
        if self.embedded is not None:
            await anyio.to_thread.run_sync(self.embedded.stop)




async def init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=to_json, decoder=json.loads, schema="pg_catalog")


async def _ensure_database(maintenance_dsn: str, name: str) -> None:
    conn = await asyncpg.connect(maintenance_dsn)
    try:
        await catalog.create_database(conn, name)
    finally:
        await conn.close()


async def locate(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    """The DSN to use, starting (or joining) the embedded server when no URL is set.
    The caller owns the returned embedded handle and must stop() it."""
    if settings.database_url:
        return settings.database_url, None
    embedded = EmbeddedPostgres(settings.data_dir)
    maintenance = await anyio.to_thread.run_sync(embedded.start)
    try:
        await _ensure_database(maintenance, EMBEDDED_DATABASE)
    except BaseException:
        await anyio.to_thread.run_sync(embedded.stop)
        raise
    return embedded.dsn(EMBEDDED_DATABASE), embedded


async def reset_connection(conn: asyncpg.Connection) -> None:
    """Before an application connection goes back to the pool: end a transaction an error left
    open. Application code keeps no session state (its settings are transaction-local), so the
    default reset's extra round trip (RESET ALL, UNLISTEN, unlocks) buys nothing."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def open_database(settings: Settings) -> Database:
    """Connect (starting the embedded server when no URL is set), migrate, and open the pool."""
    dsn, embedded = await locate(settings)
    pools: list[asyncpg.Pool] = []
    try:
        conn = await asyncpg.connect(dsn)
        try:
            applied = await migrate(conn)
            role = await _usable_role(conn, settings.db_app_role)
            if role is None and not sql.SCOPE_FILTER:
                raise RuntimeError("refusing to run with tenant isolation off: the scope filter is disabled and "
                                   "row-level security is not in force (no usable app role)")
            if embedded is not None:
                await _tune_embedded(conn)
        finally:
            await conn.close()
        # register_vector needs the extension, which the first migration creates.
        # Plan each search with its real values: the generic plan a prepared statement falls back to
        # after five runs cannot see the query vector or the scope and ran 3x slower (11 ms vs 3.6 ms
        # at LoCoMo scale). JIT compiling costs more than these short queries run.
        server_settings = {"plan_cache_mode": "force_custom_plan", "jit": "off",
                           "standard_conforming_strings": "on", **({"role": role} if role else {})}
        pools.append(await asyncpg.create_pool(
            dsn, min_size=settings.pool_min_size, max_size=settings.pool_max_size, init=init_connection,
            reset=reset_connection, server_settings=server_settings))
        pools.append(await asyncpg.create_pool(dsn, min_size=0, max_size=2, init=init_connection))
    except BaseException:
        for pool in pools:
            await pool.close()
        if embedded is not None:
            await anyio.to_thread.run_sync(embedded.stop)
        raise
    return Database(pool=pools[0], admin=pools[1], dsn=dsn, embedded=embedded, applied=applied, app_role=role)


async def _tune_embedded(conn: asyncpg.Connection) -> None:
    """The embedded server is ours to configure: let autovacuum look every 10 s instead of every
    minute, so a store that grows fast (an import, a benchmark's seeding) has statistics soon."""
    await catalog.autovacuum_naptime(conn, "10s")


async def _usable_role(conn: asyncpg.Connection, role: str) -> str | None:
    if not role:
        return None
    if not await catalog.role_usable(conn, role):
        log.warning("role %s is missing or not granted to %s: row-level security is not enforced for this "
                    "server (see the README, 'External PostgreSQL')", role, await catalog.current_user(conn))
        return None
    return role
