"""Composable SQL fragments: positional arguments and the scope rule every query applies."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import asyncpg

from ..models import MemoryFilter, Principal
from ..telemetry.logs import quiet

# What reaching PostgreSQL fails with while it restarts or is down (the socket file gone, refused,
# shutting down, the connection closed mid-query). asyncpg's pool logs each attempt to refill its
# minimum size with a traceback; these become one line each.
CONNECTION_FAULTS: tuple[type[BaseException], ...] = (
    OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.CannotConnectNowError,
    asyncpg.InternalClientError, asyncpg.AdminShutdownError, asyncpg.CrashShutdownError,
    asyncpg.TooManyConnectionsError)
quiet("asyncpg.pool", CONNECTION_FAULTS)


class Sql:
    """Collects positional arguments so fragments can be composed without counting `$n`."""

    def __init__(self) -> None:
        self.args: list[Any] = []

    def arg(self, value: Any) -> str:
        self.args.append(value)
        return f"${len(self.args)}"


def literal(value: str) -> str:
    """A SQL string literal (the pools run with standard_conforming_strings on, so only quotes
    need doubling; PostgreSQL text cannot hold NUL)."""
    return "'" + value.replace("\x00", "").replace("'", "''") + "'"


class PoolerConnection(asyncpg.Connection):
    """A connection through a pooler in transaction mode (MCP_MEMORY_DB_POOLER=transaction): the
    server connection under it may change after every transaction, so nothing can be set for the
    session. The settings a direct connection gets at its start (the row-level-security role,
    plan_cache_mode, jit) go instead with every transaction's BEGIN (`every_transaction`, set per
    pool by db.open_database), and a lock held across statements is taken inside a transaction."""

    every_transaction: Mapping[str, str] = {}


def through_pooler(conn: asyncpg.Connection | asyncpg.pool.PoolConnectionProxy) -> bool:
    """Whether `conn` (or the pool connection it proxies) goes through a transaction-mode pooler. Not
    by isinstance: asyncpg's Connection metaclass answers it True for every connection and any of its
    subclasses."""
    return PoolerConnection in type(getattr(conn, "_con", conn)).__mro__


def _begin(settings: Mapping[str, str], mode: str = "", conn: Any = None) -> str:
    """BEGIN and the transaction-local settings, as one simple query (one round trip); through a
    pooler the connection's session settings too, first (the role before the keys RLS reads)."""
    if conn is not None and through_pooler(conn):
        settings = {**getattr(conn, "every_transaction", {}), **settings}
    sets = ", ".join(f"set_config({literal(name)}, {literal(value)}, true)" for name, value in settings.items())
    return f"BEGIN{' ' + mode if mode else ''}; SELECT {sets}"


@asynccontextmanager
async def local_transaction(pool: asyncpg.Pool, settings: Mapping[str, str],
                           kept_plans: bool = False) -> AsyncIterator[asyncpg.Connection]:
    """A transaction whose first round trip also sets its transaction-local settings (row-level
    security keys on them): BEGIN and set_config go as one simple query. When the body fails or is
    cancelled (a session ending mid-call) the transaction is rolled back here, before the connection
    goes back: asyncpg logs "Resetting connection with an active transaction" at ERROR for every
    connection released inside one. On success it commits. `kept_plans`: its statements run on the
    generic plans they keep on the connection; never through a transaction-mode pooler, where
    nothing is kept and a generic plan would be made at every call."""
    async with pool.acquire() as conn:
        if kept_plans and not through_pooler(conn):
            settings = {**settings, "plan_cache_mode": KEPT_PLANS}
        try:
            await conn.execute(_begin(settings, conn=conn))
            yield conn
        except BaseException:
            await _rollback(conn)
            raise
        await conn.execute("COMMIT")


# The plan mode under which a prepared statement runs on the generic plan it keeps on its connection,
# planned at its first call there (the pools' session mode is force_custom_plan: db.open_database).
KEPT_PLANS = "force_generic_plan"
# The longest statement asyncpg keeps prepared on a connection (its max_cacheable_statement_size, set
# by db.open_database; its default of 15 KiB is below a search's statement in a store of many
# conversations, ~13 KiB without a filter). A longer one is prepared afresh at every call.
KEPT_STATEMENT_CHARS = 64 * 1024
# The statements whose generic plans each connection keeps (asyncpg's connections take no attributes).
_KEPT: weakref.WeakKeyDictionary[asyncpg.Connection, set[str]] = weakref.WeakKeyDictionary()


def _keeps(conn: asyncpg.Connection | asyncpg.pool.PoolConnectionProxy, sql: str, most: int) -> bool:
    """Whether `sql` runs on a plan `conn` keeps: it does already, or the connection keeps fewer than
    `most` (a statement asyncpg's cache let go and prepares again still counts, so they are at most
    that many). Never through a transaction-mode pooler, or for a statement longer than
    KEPT_STATEMENT_CHARS: nothing is kept there, and a generic plan would be made at every call."""
    if through_pooler(conn) or len(sql) > KEPT_STATEMENT_CHARS:
        return False
    kept = _KEPT.setdefault(getattr(conn, "_con", conn), set())
    if sql not in kept and len(kept) < most:
        kept.add(sql)
    return sql in kept


async def fetch_on_kept_plan(conn: asyncpg.Connection, sql: str, *args: Any, most: int) -> list[asyncpg.Record]:
    """`sql`'s rows by the generic plan its prepared statement keeps on this connection: planned at
    its first call here, not at every call as the pools' force_custom_plan has it, for this statement
    alone (the transaction's others are planned as before). The first `most` statements a connection
    runs here keep their plans; any other is planned for its values, as are all where nothing is
    kept (`_keeps`)."""
    if not _keeps(conn, sql, most):
        return await conn.fetch(sql, *args)
    await conn.execute(f"SET LOCAL plan_cache_mode = {KEPT_PLANS}")
    rows = await conn.fetch(sql, *args)
    await conn.execute("SET LOCAL plan_cache_mode TO DEFAULT")
    return rows


# Read transactions still ending (read_transaction): held here so that none is collected unfinished.
_ENDING: set[asyncio.Task[None]] = set()


@asynccontextmanager
async def read_transaction(pool: asyncpg.Pool, settings: Mapping[str, str]) -> AsyncIterator[asyncpg.Connection]:
    """`local_transaction` for a body that only reads: its COMMIT, which changes nothing, is sent
    after the caller has its rows, the connection going back to the pool once it is answered. A
    search waited for that round trip (a tenth of a millisecond, ten under load at p95). The
    pool's close waits for the connection, so nothing is left open at shutdown."""
    conn = await pool.acquire()
    try:
        await conn.execute(_begin(settings, "READ ONLY", conn))
        yield conn
    except BaseException:
        try:
            await _rollback(conn)
        finally:
            with anyio.CancelScope(shield=True):
                await pool.release(conn)
        raise
    task = asyncio.ensure_future(_end(pool, conn))
    _ENDING.add(task)
    task.add_done_callback(_ENDING.discard)


async def _end(pool: asyncpg.Pool, conn: asyncpg.Connection) -> None:
    try:
        await conn.execute("COMMIT")
    except Exception:  # nothing was written: a connection that cannot commit is only closed
        conn.terminate()
    finally:
        await pool.release(conn)


async def _rollback(conn: asyncpg.Connection) -> None:
    """End the failed transaction; a connection that cannot (the server gone, the call cancelled
    mid-query) is closed instead, so the pool never gets it back inside a transaction."""
    if conn.is_closed() or not conn.is_in_transaction():
        return
    try:
        with anyio.CancelScope(shield=True), anyio.fail_after(5):
            await conn.execute("ROLLBACK")
    except Exception:
        conn.terminate()


# Every query carries the scope filter below as well as row-level security. Only the isolation
# tests turn it off (by setting this in their own process) to prove that RLS alone keeps users,
# agents and projects apart; no setting or environment variable reaches it, and a server with
# neither the filter nor RLS refuses to start (db.open_database).
SCOPE_FILTER = True


def visible(q: Sql, p: Principal, alias: str = "m") -> str:
    """The scope rule of DESIGN.md: NULL agent / project means shared with the whole user."""
    if not SCOPE_FILTER:
        return "TRUE"
    a = alias
    return (f"{a}.user_id = {q.arg(p.user_id)}"
            f" AND ({a}.agent_id IS NULL OR {a}.agent_id = {q.arg(p.agent_id)})"
            f" AND ({a}.project_id IS NULL OR {a}.project_id = {q.arg(p.project_id)})")


_LEVELS = {
    "user": "{a}.agent_id IS NULL AND {a}.project_id IS NULL",
    "project": "{a}.agent_id IS NULL AND {a}.project_id IS NOT NULL",
    "agent": "{a}.agent_id IS NOT NULL AND {a}.project_id IS NULL",
    "agent_project": "{a}.agent_id IS NOT NULL AND {a}.project_id IS NOT NULL",
}


def filtered(q: Sql, f: MemoryFilter | None, alias: str = "m") -> list[str]:
    if f is None:
        return []
    a = alias
    where = []
    if f.kinds:
        where.append(f"{a}.kind = ANY({q.arg(list(f.kinds))}::text[])")
    if f.tags:
        where.append(f"{a}.tags @> {q.arg(list(f.tags))}::text[]")
    if f.since is not None:
        where.append(f"{a}.occurred_at >= {q.arg(f.since)}")
    if f.until is not None:
        where.append(f"{a}.occurred_at < {q.arg(f.until)}")
    if f.scope is not None:
        where.append(_LEVELS[f.scope].format(a=a))
    return where


def successor(q: Sql, p: Principal, alias: str = "m") -> str:
    """The column `successor`: the memory that replaced `alias` (its `superseded_by`) where `p` may
    see it and it is not forgotten. A forgotten successor replaces nothing (the search ranks its
    predecessor as current again, retrieval/statement.py), so a read does not say it does: "Priya
    moved to Lisbon." showed `superseded_by` the Porto note its user had just forgotten, an id
    `memory_get` then could not find."""
    return (f"(SELECT s.id FROM memories s WHERE s.id = {alias}.superseded_by AND {visible(q, p, 's')} "
            f"AND s.deleted_at IS NULL) AS successor")


def live(q: Sql, p: Principal, f: MemoryFilter | None = None) -> list[str]:
    """The WHERE clauses of the memories `p` may see that are not forgotten and pass `f`: what a
    read, a count, a browse and a search start from (alias m)."""
    return [visible(q, p), "m.deleted_at IS NULL", *filtered(q, f)]


async def planner_rows(conn: asyncpg.Connection) -> float:
    """The planner's estimate of rows in memories (and so in its vector index); -1 when it was
    never analyzed."""
    return float(await conn.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass"))
