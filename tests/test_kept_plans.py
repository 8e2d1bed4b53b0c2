"""A search no filter narrows runs on the generic plan its statement keeps on a connection, planned
at its first call there (MCP_MEMORY_SEARCH_KEPT_PLANS, retrieval/narrowing.py plan_kept); a
filtered search, one in a scope small beside the store, and every search with the setting off are
planned for their values. Either way the hits are the same, on a PostgreSQL with default settings
too. On a direct connection a transcript's capture lock is a session lock, held outside any
transaction (repository/transcripts.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.errors import Conflict
from mcp_memory.models import MemoryFilter, Principal, WriteItem
from mcp_memory.repository import sql
from mcp_memory.repository.transcripts import TranscriptRepository
from mcp_memory.service import MemoryService

from .conftest import principal
from .test_graph_external import own_server, users_own_database  # noqa: F401 (the fixture)

NOTES = [
    "Dana Ruiz moved from Porto to Lisbon in March.",
    "The billing service is migrating from MySQL to PostgreSQL.",
    "Kwame's manager is Priya; she runs the platform team.",
    "The nightly backups failed twice because the disk filled up.",
    "We decided to ship feature flags in the mobile app first.",
    "Greta is allergic to peanuts and shellfish.",
    "The staging database moved to the second rack.",
    "Carol decided to pause the data pipeline rewrite until June.",
]
QUESTIONS = ["Where does Dana live now?", "what is the billing service migrating to",
             "Who is Kwame's manager?", "why did the backups fail", "What is Greta allergic to?",
             "staging database rack", "what did Carol decide about the pipeline"]
# The search's statement, as pg_prepared_statements shows it (its fused lists' first CTE).
STATEMENT = "%WITH vec AS MATERIALIZED%"


@pytest.fixture
async def one_connection(settings: Settings) -> AsyncIterator[tuple[Database, Settings]]:
    """A database whose pool holds one connection, so every search prepares its statement there."""
    one = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1})
    db = await open_database(one)
    try:
        yield db, one
    finally:
        await db.close()


async def searcher(db: Database, settings: Settings, kept: int) -> MemoryService:
    return (await compose(db, settings.model_copy(update={"search_kept_plans": kept}))).service


async def plans(db: Database) -> tuple[int, int]:
    """(generic, custom) plans the search's statements ran by on the pool's one connection."""
    await asyncio.sleep(0)  # a search's COMMIT goes back after its rows (sql.read_transaction)
    async with db.pool.acquire() as conn:
        row = await conn.fetchrow("SELECT coalesce(sum(generic_plans), 0) AS g, coalesce(sum(custom_plans), 0) AS c "
                                  "FROM pg_prepared_statements WHERE statement LIKE $1", STATEMENT)
    return int(row["g"]), int(row["c"])


async def written(svc: MemoryService, who: Principal) -> None:
    for text in NOTES:
        await svc.write(who, text)


async def test_a_search_no_filter_narrows_is_planned_once_and_finds_what_a_planned_one_does(
        one_connection: tuple[Database, Settings], alice: Principal) -> None:
    db, settings = one_connection
    kept, planned = await searcher(db, settings, 32), await searcher(db, settings, 0)
    await written(kept, alice)
    for question in QUESTIONS:
        got = [(h.id, h.score) for h in (await kept.search(alice, question, limit=5)).hits]
        again = [(h.id, h.score) for h in (await kept.search(alice, question, limit=5)).hits]
        assert got and got == again
        assert [(h.id, h.score) for h in (await planned.search(alice, question, limit=5)).hits] == got
    generic, custom = await plans(db)
    assert generic == 2 * len(QUESTIONS) and custom == len(QUESTIONS)


async def test_a_filtered_search_and_the_setting_off_are_planned_for_their_values(
        one_connection: tuple[Database, Settings], alice: Principal) -> None:
    db, settings = one_connection
    kept = await searcher(db, settings, 32)
    await written(kept, alice)
    for f in (MemoryFilter(kinds=["note"]), MemoryFilter(since=datetime(2020, 1, 1, tzinfo=UTC)),
              MemoryFilter(as_of=datetime.now(UTC))):
        await kept.search(alice, "Where does Dana live now?", f, limit=5)
        await kept.search(alice, "Where does Dana live now?", f, limit=5)
    await (await searcher(db, settings, 0)).search(alice, "What is Greta allergic to?", limit=5)
    assert await plans(db) == (0, 7)


async def test_a_connection_keeps_the_plans_of_its_first_statements_only(
        one_connection: tuple[Database, Settings], alice: Principal) -> None:
    """Each kept plan holds ~0.6 MB of its backend's memory: past `search_kept_plans` statements a
    connection plans the rest for their values."""
    db, settings = one_connection
    kept = await searcher(db, settings, 1)
    await written(kept, alice)
    for question in ("Where does Dana live now?", "staging database rack", "Where does Dana live now?",
                     "staging database rack"):
        assert (await kept.search(alice, question, limit=5)).hits
    assert await plans(db) == (2, 2)


async def test_a_scope_small_beside_the_store_is_planned_for_its_values(
        one_connection: tuple[Database, Settings], alice: Principal) -> None:
    """Bob's 3,000 memories around alice's eight: her vector list sorts her own (narrowing.py), and a
    generic plan, made for the average scope, would walk the whole index instead."""
    db, settings = one_connection
    kept = await searcher(db, settings, 32)
    await written(kept, alice)
    async with db.admin.acquire() as conn:
        await conn.execute(
            """INSERT INTO memories (user_id, kind, content, content_hash, embedding, embedding_model)
               SELECT 'bob', 'note', 'Bob''s note ' || g, md5('bob' || g), m.embedding, m.embedding_model
               FROM generate_series(1, 3000) g, (SELECT embedding, embedding_model FROM memories LIMIT 1) m""")
        await conn.execute("ANALYZE memories")
    for _ in range(2):
        assert (await kept.search(alice, "Where does Dana live now?", limit=5)).hits
    assert await plans(db) == (0, 2)


async def test_a_writes_statements_run_on_kept_plans_and_the_connection_goes_back_planning_for_values(
        one_connection: tuple[Database, Settings], alice: Principal) -> None:
    """A write's transaction (repository/memory_store.py `writing`: storing, changing, forgetting,
    restoring) finds its rows by key, so its statements keep their plans; the mode is the
    transaction's own, so a failed write leaves the connection as it found it, and a filtered search
    after it is planned for its values."""
    db, settings = one_connection
    svc = await searcher(db, settings, 32)
    await written(svc, alice)
    moved = await svc.write(alice, "Dana Ruiz moved from Lisbon to Berlin in May.", about=["Dana Ruiz"],
                            key="home city", idempotency_key="dana-berlin")
    assert moved.status == "created"
    with pytest.raises(Conflict, match="idempotency_key"):
        await svc.write(alice, "Dana Ruiz moved to Madrid.", idempotency_key="dana-berlin")
    await svc.write_many(alice, [WriteItem(content="Greta now lives in Oslo."),
                                 WriteItem(content="Kwame's manager is now Tomas.")])
    await svc.update(alice, moved.memory.id, content="Dana Ruiz moved from Lisbon to Berlin in June.")
    await svc.forget(alice, [moved.memory.id])
    await svc.restore(alice, [moved.memory.id])
    async with db.pool.acquire() as conn:
        inserts = await conn.fetch("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                   "WHERE statement LIKE 'INSERT INTO memories %'")
        changes = await conn.fetch("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                   "WHERE statement LIKE 'UPDATE memories SET %'")
        assert await conn.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
    # The update's, the forget's and the restore's own statements, each on its kept plan.
    assert len(changes) >= 3 and all(r["generic_plans"] >= 1 and r["custom_plans"] == 0 for r in changes)
    assert len(inserts) == 2  # one memory's, a batch's
    # The notes, Dana's move and the batch (the refused write stops at its key, before the insert).
    assert sum(r["generic_plans"] for r in inserts) == len(NOTES) + 2 and sum(r["custom_plans"] for r in inserts) == 0
    await svc.search(alice, "Where does Dana live now?", MemoryFilter(kinds=["note"]), limit=5)
    assert await plans(db) == (0, 1)


async def test_a_transcripts_lock_on_a_direct_connection_holds_no_transaction_open(
        database: Database, settings: Settings, tmp_path: Path) -> None:
    """The capture's lock is held while turns are embedded: on a direct connection it is a session
    lock, so no transaction stays open meanwhile (through a pooler it is a transaction's,
    test_pooler.py). asyncpg's Connection metaclass answers isinstance True for every connection and
    any subclass, which once took every connection for a pooler's."""
    svc = (await compose(database, settings)).service
    transcripts = TranscriptRepository(svc.repo)
    async with database.pool.acquire() as conn:
        assert not sql.through_pooler(conn)
    async with transcripts.locked(principal(), str(tmp_path / "t.jsonl")):
        states = await database.admin.fetch(
            """SELECT a.state FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
               WHERE l.locktype = 'advisory' AND l.granted""")
    assert [r["state"] for r in states] == ["idle"]


async def test_one_kept_plan_serves_two_users_by_row_level_security_alone_on_an_external_server(
        own_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """On a PostgreSQL with default settings and no LEAKPROOF marks (test_graph_external.py), with the
    scope filter off: alice's and bob's searches are one statement, so one generic plan on the one
    connection serves both, and row-level security, read at each run, keeps them apart."""
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    async with users_own_database(own_server, tmp_path) as (settings, _):
        one = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1})
        db = await open_database(one)
        try:
            kept, planned = await searcher(db, one, 32), await searcher(db, one, 0)
            alice, bob = principal("alice"), principal("bob")
            theirs = {}
            for who in (alice, bob):
                theirs[who.user_id] = {(await kept.write(who, f"{who.user_id}: {text}")).memory.id for text in NOTES}
            for question in QUESTIONS[:3]:
                for who in (alice, bob, alice, bob):
                    got = [(h.id, h.score) for h in (await kept.search(who, question, limit=5)).hits]
                    assert got and {i for i, _ in got} <= theirs[who.user_id]
                    assert got == [(h.id, h.score) for h in (await planned.search(who, question, limit=5)).hits]
            assert await plans(db) == (12, 12)
            async with db.pool.acquire() as conn:  # a question's statement is the same whoever asks it
                assert await conn.fetchval("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE $1",
                                           STATEMENT) <= 3
        finally:
            await db.close()
