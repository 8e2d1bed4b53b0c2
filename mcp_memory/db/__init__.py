"""Database bootstrap: the embedded server or a given URL, migrations, and the asyncpg pool."""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
import asyncpg
from pgvector.asyncpg import register_vector

from ..config import StorageSettings
from ..encoding import to_json
from ..errors import Unavailable
from ..repository import catalog, sql
from .embedded import EmbeddedPostgres
from .migrate import migrate
from .pgdata import remaining

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
            # a start lock held by a stuck process must not hold this one's exit
            await anyio.to_thread.run_sync(functools.partial(self.embedded.stop, timeout=STOP_LOCK_WAIT_S))


STOP_LOCK_WAIT_S = 10.0


async def init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=to_json, decoder=json.loads, schema="pg_catalog")


async def _ensure_database(maintenance_dsn: str, name: str) -> None:
    conn = await asyncpg.connect(maintenance_dsn)
    try:
        await catalog.create_database(conn, name)
    finally:
        await conn.close()


async def locate(settings: StorageSettings,
                 start_timeout_s: float | None = None) -> tuple[str, EmbeddedPostgres | None]:
    """The DSN to use, starting (or joining) the embedded server when no URL is set, within
    `start_timeout_s` seconds (none: no limit). The caller owns the returned embedded handle and must
    stop() it. A store that cannot start raises `Unavailable` saying why and what to do."""
    if settings.database_url:
        return settings.database_url, None
    start_timeout_s = _within(start_timeout_s)
    deadline = None if start_timeout_s is None else time.monotonic() + start_timeout_s
    embedded = EmbeddedPostgres(settings.data_dir, settings.embedded_shared_buffers_mb)
    maintenance = await anyio.to_thread.run_sync(functools.partial(embedded.start, timeout=start_timeout_s))
    try:
        with anyio.fail_after(remaining(deadline)):
            await _ensure_database(maintenance, EMBEDDED_DATABASE)
    except BaseException as exc:
        with anyio.CancelScope(shield=True):  # a cancelled caller still gives the handle back
            await anyio.to_thread.run_sync(embedded.stop)
        if isinstance(exc, Exception) and (unavailable := as_unavailable(exc, settings, start_timeout_s)):
            raise unavailable from exc
        raise
    return embedded.dsn(EMBEDDED_DATABASE), embedded


def _within(limit: float | None) -> float | None:
    """`limit`, or less when the caller's cancel scope (`anyio.fail_after`) ends sooner: the start
    runs in a worker thread, which a cancel cannot interrupt."""
    left = anyio.current_effective_deadline() - anyio.current_time()
    if math.isinf(left):
        return limit
    return max(0.0, left) if limit is None else min(limit, max(0.0, left))


def describe(settings: StorageSettings) -> str:
    """Where the store is, for messages: never the URL itself, which may hold a password."""
    if not settings.database_url:
        return f"the embedded database in {settings.data_dir / 'pg'}"
    try:
        url = urlsplit(settings.database_url)
        host = url.hostname or parse_qs(url.query).get("host", ["localhost"])[0]
        return f"the database at {host}{f':{url.port}' if url.port else ''}{url.path or ''}"
    except ValueError:
        return "the database at MCP_MEMORY_DATABASE_URL"


def as_unavailable(exc: Exception, settings: StorageSettings, limit: float | None) -> Unavailable | None:
    """A failure to reach the store as one line with its fix; None for anything else (a bug)."""
    if isinstance(exc, Unavailable):
        return exc
    where = describe(settings)
    url_fix = ("check MCP_MEMORY_DATABASE_URL" if settings.database_url
               else f"see its log {settings.data_dir / 'pg' / 'log'}")
    if isinstance(exc, TimeoutError):
        return Unavailable(f"{where} did not answer within {limit or 0:g} s; check that it is up and not overloaded "
                           f"(or {url_fix})")
    if isinstance(exc, asyncpg.InvalidAuthorizationSpecificationError | asyncpg.InvalidPasswordError):
        fix = "check the user and password in MCP_MEMORY_DATABASE_URL"
    elif isinstance(exc, asyncpg.InvalidCatalogNameError):
        fix = "create that database, or check the database name in MCP_MEMORY_DATABASE_URL"
    elif "unsupported startup parameter" in str(exc):  # PgBouncer refusing the session settings
        return Unavailable(f"{where} refused a session setting ({str(exc).strip()[:120]}): it is a connection "
                           "pooler; set MCP_MEMORY_DB_POOLER=transaction (docs/operations.md, 'Behind PgBouncer')")
    elif isinstance(exc, OSError | asyncpg.PostgresConnectionError | asyncpg.CannotConnectNowError
                    | asyncpg.TooManyConnectionsError | asyncpg.ConnectionDoesNotExistError
                    # the connection lost in the middle of a command: the server shut down, or closed
                    # under it (another InterfaceError is a misuse: a bug, not an outage)
                    | asyncpg.AdminShutdownError | asyncpg.CrashShutdownError | asyncpg.InternalClientError) \
            or isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc):
        fix = f"start PostgreSQL, or {url_fix} (host and port)" if settings.database_url else url_fix
    else:
        return None
    # A connection lost in a transaction fails again as it closes: the first failure says why.
    while isinstance(exc.__context__, asyncpg.PostgresError | asyncpg.InterfaceError | OSError):
        exc = exc.__context__
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return Unavailable(f"{where} is not available ({reason}); {fix}")


async def reset_connection(conn: asyncpg.Connection) -> None:
    """Before an application connection goes back to the pool: end a transaction an error left
    open. Application code keeps no session state (its settings are transaction-local), so the
    default reset's extra round trip (RESET ALL, UNLISTEN, unlocks) buys nothing."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def open_database(settings: StorageSettings, *, start_timeout_s: float | None = None) -> Database:
    """Connect (starting the embedded server when no URL is set), migrate, and open the pool.
    Starting and connecting take at most `start_timeout_s` seconds (default `db_start_timeout_s`;
    less when the caller's cancel scope ends sooner); migrations, which may rightly take long on
    a big store, only the caller's scope. A store that cannot be reached or started raises
    `Unavailable` with one line saying why and what to do."""
    limit = _within(settings.db_start_timeout_s if start_timeout_s is None else start_timeout_s)
    try:
        return await _open(settings, limit)
    except Exception as exc:
        if unavailable := as_unavailable(exc, settings, limit):
            raise unavailable from exc
        raise


async def _open(settings: StorageSettings, limit: float | None) -> Database:
    deadline = None if limit is None else time.monotonic() + limit
    dsn, embedded = await locate(settings, limit)
    pools: list[asyncpg.Pool] = []
    try:
        # asyncpg's own timeout covers a server that accepts and never answers the handshake
        pooled = settings.db_pooler == "transaction"
        conn = await asyncpg.connect(dsn, timeout=60.0 if deadline is None else max(0.1, deadline - time.monotonic()),
                                     **_pooler_args(pooled, {}))
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
        # Plan each statement with its real values: the generic plan a prepared statement falls back
        # to after five runs is made for the average scope. Beside a scope of 100,000 memories it
        # walked the big scope's HNSW graph for a small one and returned other rows for 55 of 80
        # LoCoMo questions, and a big scope's "last 30 days" took 64 ms instead of 23
        # (bench/plan_modes.py). A search that no filter narrows asks for its kept plan itself
        # (sql.fetch_on_kept_plan). JIT compiling costs more than these short queries run.
        session = {"plan_cache_mode": "force_custom_plan", "jit": "off", **({"role": role} if role else {})}
        if pooled:  # a pooler keeps no session setting: each transaction carries them (sql.PoolerConnection)
            app_args = _pooler_args(True, session)
            server_settings = {"standard_conforming_strings": "on"}
        else:
            app_args, server_settings = {}, {**session, "standard_conforming_strings": "on"}
        pools.append(await asyncpg.create_pool(
            dsn, min_size=settings.pool_min_size, max_size=settings.pool_max_size, init=init_connection,
            reset=reset_connection, server_settings=server_settings,
            max_cacheable_statement_size=sql.KEPT_STATEMENT_CHARS, **app_args))
        admin_args = {"reset": reset_connection, **_pooler_args(True, {})} if pooled else {}
        pools.append(await asyncpg.create_pool(dsn, min_size=0, max_size=2, init=init_connection, **admin_args))
        if role and not pooled:
            await _check_role(pools[0], role)
    except BaseException:
        with anyio.CancelScope(shield=True):  # a cancelled caller still gives the handle back
            for pool in pools:
                await pool.close()
            if embedded is not None:
                await anyio.to_thread.run_sync(embedded.stop)
        raise
    return Database(pool=pools[0], admin=pools[1], dsn=dsn, embedded=embedded, applied=applied, app_role=role)


def _pooler_args(pooled: bool, session: dict[str, str]) -> dict:
    """asyncpg arguments for a connection through a transaction-mode pooler: no prepared-statement
    cache (a named statement lives on one server connection, and the next transaction may get
    another; PgBouncer before 1.21 does not track them), and the session settings `session` sent
    with every BEGIN instead of at the start (sql.PoolerConnection)."""
    if not pooled:
        return {}
    connection = type("AppPoolerConnection", (sql.PoolerConnection,), {"every_transaction": dict(session)})
    return {"statement_cache_size": 0, "connection_class": connection}


async def _check_role(pool: asyncpg.Pool, role: str) -> None:
    """The role set at connect is in force: a pooler that drops session settings (PgBouncer with
    them in ignore_startup_parameters) would run every query as the owner, past row-level security."""
    user = await pool.fetchval("SELECT current_user")
    if user != role:
        raise Unavailable(f"queries run as {user}, not {role}: a connection pooler dropped the session's role; "
                          "set MCP_MEMORY_DB_POOLER=transaction (docs/operations.md, 'Behind PgBouncer')")


async def _tune_embedded(conn: asyncpg.Connection) -> None:
    """The embedded server is ours to configure: let autovacuum look every 10 s instead of every
    minute, so a store that grows fast (an import, a benchmark's seeding) has statistics soon; and
    install pg_prewarm, with which a server reads the search's pages as it starts (db/warmup.py)."""
    await catalog.autovacuum_naptime(conn, "10s")
    await catalog.install_prewarm(conn)


async def _usable_role(conn: asyncpg.Connection, role: str) -> str | None:
    if not role:
        return None
    if not await catalog.role_usable(conn, role):
        log.warning("role %s is missing or not granted to %s: row-level security is not enforced for this "
                    "server (see the README, 'External PostgreSQL')", role, await catalog.current_user(conn))
        return None
    return role
