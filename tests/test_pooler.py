"""The production topology: several stateless servers behind PgBouncer in transaction mode (Debian's
`pgbouncer`, started here with two server connections, so every client shares them) on one
PostgreSQL. Row-level security keyed on transaction-local settings, the role, advisory locks, job
leases, migrations and prepared statements must all hold through it; a server pointed at the
pooler without MCP_MEMORY_DB_POOLER=transaction refuses to start, saying so. Nothing in the
package uses LISTEN / NOTIFY (a test below keeps it so)."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.db.doctor import diagnose
from mcp_memory.db.migrate import available_migrations
from mcp_memory.db.warmup import warm_pages
from mcp_memory.decisions import provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.errors import NotFound, Unavailable
from mcp_memory.models import WriteItem
from mcp_memory.repository import jobs as queue
from mcp_memory.repository import sql
from mcp_memory.repository.graph_checks import inconsistencies
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.repository.memories import MemoryRepository
from mcp_memory.repository.transcripts import TranscriptRepository
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI
from .conftest import principal
from .exports import copied, exported_with_vectors
from .pgbouncer import BINARY, MISSING, Bouncer, pgbouncer
from .test_decisions import decisions_settings
from .test_graph_concurrency import live_values
from .test_graph_killed import item

pytestmark = pytest.mark.skipif(BINARY is None, reason=MISSING)

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_memory"
SERVERS = 3


@pytest.fixture(scope="module")
def bouncer(pg) -> Iterator[Bouncer]:
    with pgbouncer(pg.dsn("postgres"), pool_size=2) as b:
        yield b


def pooled(bouncer: Bouncer, db_url: str, tmp_path: Path, **over: Any) -> Settings:
    values = dict(database_url=bouncer.url(db_url), db_pooler="transaction", data_dir=tmp_path / "unused",
                  user="alice", agent="agent-a", project="proj-x", pool_min_size=0, pool_max_size=4)
    return Settings(**{**values, **over})


@pytest.fixture
async def servers(bouncer: Bouncer, db_url: str, tmp_path: Path) -> AsyncIterator[list[tuple[Database, MemoryService]]]:
    """Three servers' databases and services, all through the pooler onto one database."""
    s = pooled(bouncer, db_url, tmp_path)
    made: list[tuple[Database, MemoryService]] = []
    try:
        for _ in range(SERVERS):
            db = await open_database(s)
            made.append((db, await MemoryService.open(db, s)))
        yield made
    finally:
        for db, _ in made:
            await db.close()


async def advisory_locks(db_url: str) -> list[dict]:
    """Advisory locks held or awaited on the server, seen directly (not through the pooler)."""
    conn = await asyncpg.connect(db_url)
    try:
        return [dict(r) for r in await conn.fetch(
            "SELECT objid, granted FROM pg_locks WHERE locktype = 'advisory' AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())")]
    finally:
        await conn.close()


async def test_a_server_pointed_at_the_pooler_without_the_setting_refuses_naming_it(
        bouncer: Bouncer, db_url: str, tmp_path: Path) -> None:
    with pytest.raises(Unavailable) as caught:
        await open_database(pooled(bouncer, db_url, tmp_path, db_pooler="none"))
    message = str(caught.value)
    assert "\n" not in message and "MCP_MEMORY_DB_POOLER=transaction" in message
    assert message.startswith(f"the database at 127.0.0.1:{bouncer.port}/")
    assert "unsupported startup parameter: plan_cache_mode" in message


async def test_a_pooler_that_drops_the_role_is_refused_not_run_past_rls(pg, db_url: str, tmp_path: Path) -> None:
    """Told to ignore the session settings, PgBouncer would drop the role silently and every query
    would run as the owner, past row-level security: the server checks and refuses."""
    with pgbouncer(pg.dsn("postgres"), ignore="plan_cache_mode,jit,role") as dropping:
        with pytest.raises(Unavailable) as caught:
            await open_database(pooled(dropping, db_url, tmp_path, db_pooler="none"))
        assert await advisory_locks(db_url) == []
    message = str(caught.value)
    assert "\n" not in message and "not mcp_memory_app" in message and "MCP_MEMORY_DB_POOLER=transaction" in message


async def test_users_stay_apart_through_shared_server_connections_by_rls_alone(
        servers: list[tuple[Database, MemoryService]], monkeypatch: pytest.MonkeyPatch) -> None:
    """alice and bob write, search, update and forget through three servers at once; the pooler has
    two server connections, so each of them serves both users in turn. With the scope filter off,
    only row-level security (the role and the user set in each transaction) keeps them apart."""
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    alice, bob = principal("alice"), principal("bob")

    async def life(n: int, who: Any) -> list[Any]:
        svc = servers[n % SERVERS][1]
        written = [(await svc.write(who, f"{who.user_id}'s zebra secret number {n}.{i}")).memory.id for i in range(4)]
        other = servers[(n + 1) % SERVERS][1]
        await other.update(who, written[0], content=f"{who.user_id}'s zebra secret {n}, changed")
        await servers[(n + 2) % SERVERS][1].forget(who, [written[1]])
        return written

    written = await asyncio.gather(*(life(n, who) for n in range(6) for who in (alice, bob)))
    mine = {"alice": set(), "bob": set()}
    for n, ids in enumerate(written):
        mine[("alice", "bob")[n % 2]].update(ids)
    for who, other in ((alice, "bob"), (bob, "alice")):
        for _, svc in servers:
            hits = (await svc.search(who, "zebra secret", limit=50)).hits
            listed = (await svc.list(who, limit=100)).memories
            seen = {h.id for h in hits} | {m.id for m in listed}
            assert seen and seen <= mine[who.user_id] and not seen & mine[other]
            with pytest.raises(NotFound):
                await svc.get(who, sorted(mine[other]))
    db = servers[0][0]
    async with sql.local_transaction(db.pool, {"mcp_memory.user_id": "bob", "mcp_memory.agent_id": "agent-a",
                                               "mcp_memory.project_id": "proj-x"}) as conn:
        assert await conn.fetchval("SELECT current_user") == db.app_role == "mcp_memory_app"
        assert await conn.fetchval("SELECT current_setting('jit')") == "off"
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = 'alice'") == 0
    # outside a transaction the pooler's connection is the owner's: no role, no user key left behind
    assert await db.pool.fetchval("SELECT current_user") != "mcp_memory_app"
    assert await db.pool.fetchval("SELECT current_setting('mcp_memory.user_id', true)") in (None, "")


async def test_the_same_statements_run_again_and_again_on_other_server_connections(
        servers: list[tuple[Database, MemoryService]], db_url: str) -> None:
    """asyncpg's statement cache would name a prepared statement on one server connection and use
    it on another ("prepared statement … does not exist"); through the pooler it is off."""
    alice = principal()
    await servers[0][1].write(alice, "The staging database moved to the second rack.")
    searches = [svc.search(alice, "staging database rack") for _ in range(10) for _, svc in servers]
    results = await asyncio.gather(*searches)
    assert all(r.hits for r in results)
    conn = await asyncpg.connect(db_url)
    try:
        backends = await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
    finally:
        await conn.close()
    assert backends <= 2 + 1  # the pooler's two, and this one: the servers really shared them


async def test_keyed_graph_writes_from_two_servers_at_once_leave_one_live_value(
        servers: list[tuple[Database, MemoryService]]) -> None:
    """The graph's per-name pg_advisory_xact_lock (repository/graph.py lock_names) through the pooler."""
    p = principal()

    def when(it: dict) -> datetime:
        return datetime.fromisoformat(it["occurred_at"])

    async def one(n: int) -> None:
        it = item(n)
        await servers[n % 2][1].write(p, it["content"], about=it["about"], key=it["key"], occurred_at=when(it))

    async def batch(n: int) -> None:
        await servers[(n // 4) % 2][1].write_many(p, [
            WriteItem(content=it["content"], about=it["about"], key=it["key"], occurred_at=when(it))
            for it in map(item, range(n, n + 4))])

    results = await asyncio.gather(*map(one, range(30)), *map(batch, range(30, 110, 4)), return_exceptions=True)
    failed = [f"{type(r).__name__}: {str(r).splitlines()[0]}" for r in results if isinstance(r, BaseException)]
    assert failed == []
    async with servers[2][0].admin.acquire() as conn:
        assert await inconsistencies(conn) == {name: 0 for name in await inconsistencies(conn)}
        heads = await live_values(conn)
    assert heads and [dict(r) for r in heads if r["live"] != 1] == []


async def test_two_servers_claim_one_queue_through_the_pooler_without_overlap(
        bouncer: Bouncer, db_url: str, tmp_path: Path, chat: ChatAPI) -> None:
    s = decisions_settings(pooled(bouncer, db_url, tmp_path), chat.url, decisions_workers=2, decisions_poll_s=0.05)
    dbs = [await open_database(s), await open_database(s)]
    alice = principal()
    try:
        services = [await MemoryService.open(db, s) for db in dbs]
        for i in range(10):
            await services[i % 2].write(alice, f"Alice's favourite number is {i * 7 + 3}.")
        workers = [DecisionWorker(db.admin, svc, provider_from(s), s, name=f"server-{n}")
                   for n, (db, svc) in enumerate(zip(dbs, services, strict=True))]
        async with anyio.create_task_group() as tg:
            for w in workers:
                tg.start_soon(w.run_forever)
            with anyio.fail_after(120):
                while True:
                    rows = await dbs[0].admin.fetch("SELECT status FROM memory_jobs")
                    if len(rows) == 10 and all(r["status"] == "done" for r in rows):
                        break
                    await anyio.sleep(0.1)
            tg.cancel_scope.cancel()
        rows = await dbs[0].admin.fetch("SELECT attempts, locked_by FROM memory_jobs")
        assert all(r["attempts"] == 1 for r in rows)  # no job was taken twice
        assert len(chat.take()) == 9 and sum(w.processed for w in workers) == 9
        # a lease that ran out: another worker takes the job, and the first can no longer apply it
        await services[0].write(alice, "Alice's favourite number is 99.")
        first = await queue.claim(dbs[0].admin, "server-0/x", lease_s=0)
        assert first is not None
        again = await queue.claim(dbs[1].admin, "server-1/x", lease_s=60)
        assert again is not None and again.id == first.id and again.attempts == 2
        assert await queue.claim(dbs[0].admin, "server-0/y", lease_s=60) is None  # leased: nobody else
        async with dbs[0].admin.acquire() as conn, conn.transaction():
            assert not await queue.lock_own(conn, first, "server-0/x")
            assert await queue.lock_own(conn, again, "server-1/x")
    finally:
        for db in dbs:
            await db.close()


async def test_migrations_from_two_servers_at_once_and_locks_left_behind(
        bouncer: Bouncer, pg, make_db, tmp_path: Path) -> None:
    """Two servers migrate an empty database through the pooler at once; the capture lock is held by
    one server while another waits; ANALYZE's lock is taken once. No advisory lock outlives them
    (a session lock's unlock sent through the pooler can reach another server connection)."""
    db_url = await make_db()
    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await conn.close()
    s = pooled(bouncer, db_url, tmp_path)
    dbs = list(await asyncio.gather(open_database(s), open_database(s)))
    try:
        assert sorted(dbs[0].applied + dbs[1].applied) == [m.name for m in available_migrations()]
        assert await advisory_locks(db_url) == []

        alice = principal()
        holders = [TranscriptRepository(MemoryRepository(db.pool)) for db in dbs]
        order: list[str] = []
        leave = anyio.Event()

        async def hold(n: int) -> None:
            async with holders[n].locked(alice, "session-1.jsonl"):
                order.append(f"server-{n}")
                if n == 0:
                    await leave.wait()

        async def until(granted: bool) -> None:
            with anyio.fail_after(60):
                while True:  # (or until the second server is in: then the lock did not hold it)
                    if len(order) > 1 or [lock for lock in await advisory_locks(db_url) if lock["granted"] is granted]:
                        return
                    await anyio.sleep(0.05)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, 0)
            await until(granted=True)
            tg.start_soon(hold, 1)
            await until(granted=False)  # the second server waits for the first
            assert order == ["server-0"]
            leave.set()
        assert order == ["server-0", "server-1"]
        assert await advisory_locks(db_url) == []

        rows = await MaintenanceRepository(dbs[0].admin).analyze_once()
        assert rows is not None and await advisory_locks(db_url) == []
    finally:
        for db in dbs:
            await db.close()


async def test_a_server_reads_the_search_pages_through_the_pooler(
        servers: list[tuple[Database, MemoryService]], db_url: str) -> None:
    """db/warmup.py's reads go through the pooler's shared connections, a chunk a transaction."""
    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    finally:
        await conn.close()
    db, service = servers[0]
    await service.write(principal(), "The staging database moved to the second rack.")
    warmed = await warm_pages(db.admin)
    assert warmed.skipped is None and "memories" in dict(warmed.read), warmed


async def test_doctor_through_the_pooler(bouncer: Bouncer, db_url: str, tmp_path: Path) -> None:
    checks = {c.name: c for c in await diagnose(pooled(bouncer, db_url, tmp_path))}
    for name in ("database", "schema", "row-level security", "extension vector", "extension pg_trgm"):
        assert checks[name].ok, checks[name]


def sql_strings(path: Path) -> Iterator[str]:
    """The string constants of a module that are not docstrings, and its attribute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value
        elif isinstance(node, ast.Attribute):
            yield node.attr


def test_nothing_uses_listen_notify_or_a_session_lock_outside_the_pooler_aware_code() -> None:
    """LISTEN does not work through a transaction-mode pooler (the notification goes to whichever
    client holds the server connection then), and a session-level advisory lock is only sound where
    the code takes a transaction-level one through a pooler instead (repository/transcripts.py)."""
    listen = re.compile(r"\b(LISTEN|NOTIFY)\b|pg_notify\(|^add_listener$")
    session_lock = re.compile(r"pg_(try_)?advisory_lock(_shared)?\(")
    found_listen, found_locks = set(), set()
    for path in PACKAGE.rglob("*.py"):
        for text in sql_strings(path):
            if listen.search(text):
                found_listen.add(str(path.relative_to(PACKAGE)))
            if session_lock.search(text):
                found_locks.add(str(path.relative_to(PACKAGE)))
    assert found_listen == set()
    assert found_locks == {"repository/transcripts.py"}


async def test_an_export_moves_in_through_the_pooler_with_its_vectors_and_names(
        servers: list[tuple[Database, MemoryService]], tmp_path: Path) -> None:
    """An import of our export copies its batches into temporary tables and reads the names alongside
    on a second connection: both through the pooler's two server connections, in transactions."""
    import json

    from mcp_memory.backlog import Backlog
    from mcp_memory.importers import import_paths

    (db, source), (db2, target) = servers[0], servers[1]
    alice, bob = principal(), principal("bob")
    await source.write_many(alice, [WriteItem(content=f"Greta Ibarra reviewed release {i} of the billing service.")
                                    for i in range(60)])
    header, *lines = (await exported_with_vectors(source, db.admin, alice.user_id)).splitlines()
    records = [copied(json.loads(line)) for line in lines]  # bob's copy: ids of its own
    dump = tmp_path / "export.jsonl"
    dump.write_text("\n".join([header, *map(json.dumps, records)]) + "\n")

    async def moved():
        return await import_paths(target, MaintenanceRepository(db2.admin), bob, [dump], progress=False)

    report, unread = await Backlog(db2.admin, target.structure).alongside(moved)
    assert report.created == 60 and unread is None and "took the export's vectors for" in report.embedding[0]
    async with db2.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM graph_backlog") == 0
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = 'bob' AND embedding IS NOT NULL") > 0
        assert await conn.fetchval("SELECT count(DISTINCT memory_id) FROM memory_entities WHERE user_id = 'bob'") == 60
        assert not any((await inconsistencies(conn)).values())
