"""A server reads the search's pages into the page cache as it starts (db/warmup.py): after a
restart the vector index and the table are in shared_buffers again, on the embedded server and
on a PostgreSQL of the user's own with its default settings; without pg_prewarm, or with the
database away, nothing is read and nothing fails."""

from __future__ import annotations

from pathlib import Path

import anyio
import asyncpg
import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database, warmup
from mcp_memory.db.doctor import diagnose
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.db.warmup import chosen, warm_pages
from mcp_memory.models import WriteItem

from .conftest import principal, until_waiting
from .test_graph_external import own_server, users_own_database  # noqa: F401  (the module's own cluster)

NOTES = [f"Note {i}: the team moved the {topic} to the new cluster on day {i}"
         for i, topic in enumerate(["billing service", "search index", "nightly export", "staging database"] * 10)]


def test_a_relation_that_does_not_fit_is_passed_over_for_smaller_ones_after_it() -> None:
    relations = [("memories_hnsw", 50), ("memories", 100), ("memories_fts", 30), ("memories_trgm", 10)]
    assert chosen(relations, 90) == ([("memories_hnsw", 50), ("memories_fts", 30), ("memories_trgm", 10)],
                                     ["memories"])
    assert chosen(relations, 1000) == (relations, [])


async def cached_blocks(conn: asyncpg.Connection, relation: str) -> tuple[int, int]:
    """(blocks of `relation` in shared_buffers, its blocks)."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
    row = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM pg_buffercache b WHERE b.relfilenode = pg_relation_filenode($1::regclass) "
        "AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND b.relforknumber = 0) AS cached, "
        "pg_relation_size($1::regclass) / current_setting('block_size')::int AS blocks", relation)
    return int(row["cached"]), int(row["blocks"])


async def vector_index(conn: asyncpg.Connection) -> str:
    return str(await conn.fetchval(
        "SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'memories'::regclass AND a.amname = 'hnsw'"))


async def write_notes(db: Database, settings: Settings) -> None:
    service = (await compose(db, settings)).service
    await service.write_many(principal("alice"), [WriteItem(content=text) for text in NOTES])


async def test_a_restarted_embedded_store_has_its_vector_index_and_table_read_again(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, user="alice")
    db = await open_database(settings, start_timeout_s=120)
    try:
        await write_notes(db, settings)
    finally:
        await db.close()
    db = await open_database(settings, start_timeout_s=120)  # a new server: its shared_buffers empty
    try:
        async with db.admin.acquire() as conn:
            index = await vector_index(conn)
            before = {name: await cached_blocks(conn, name) for name in (index, "memories")}
        assert all(cached < blocks for cached, blocks in before.values()), before
        warmed = await warm_pages(db.admin)
        assert warmed.skipped is None and [name for name, _ in warmed.read][:2] == [index, "memories"]
        async with db.admin.acquire() as conn:
            for name in (index, "memories"):
                cached, blocks = await cached_blocks(conn, name)
                assert cached == blocks > 0, name
        assert db.embedded is not None
        db.embedded.stop()  # the database away while a server starts: the searches read their own pages
        away = await warm_pages(db.admin)
        assert away.read == [] and away.skipped is not None and away.skipped.startswith("stopped")
    finally:
        await db.close()


async def test_a_users_own_server_reads_them_once_a_superuser_installs_pg_prewarm(
        own_server: EmbeddedPostgres, tmp_path: Path) -> None:  # noqa: F811
    async with users_own_database(own_server, tmp_path) as (settings, db):
        await write_notes(db, settings)
        without = await warm_pages(db.admin)
        assert without.read == [] and without.skipped == "pg_prewarm is not installed"
        said = {c.name: c for c in await diagnose(settings)}["extension pg_prewarm"]
        assert said.ok and "available, not created" in said.detail and "CREATE EXTENSION pg_prewarm" in said.detail
        name = await db.admin.fetchval("SELECT current_database()")
        su = await asyncpg.connect(own_server.dsn(name))
        try:
            await su.execute("CREATE EXTENSION pg_prewarm")
            assert await su.fetchval("SHOW shared_buffers") == "128MB"  # PostgreSQL's default, not ours
            warmed = await warm_pages(db.admin)  # as the owner, no superuser
            index = await vector_index(su)
            assert warmed.skipped is None and [n for n, _ in warmed.read][:2] == [index, "memories"]
            for relation in (index, "memories"):
                cached, blocks = await cached_blocks(su, relation)
                assert cached == blocks > 0
            little = await warm_pages(db.admin, share=2 / 16384)  # two blocks of 128 MB
            assert "memories" in little.left_out and sum(b for _, b in little.read) <= 2
            said = {c.name: c for c in await diagnose(settings)}["extension pg_prewarm"]
            assert said.ok and said.detail.endswith("(installed)")
        finally:
            await su.close()


@pytest.mark.parametrize("on", [True, False])
async def test_a_server_reads_them_as_it_starts_unless_told_not_to(database: Database, settings: Settings,
                                                                   on: bool, caplog: pytest.LogCaptureFixture) -> None:
    async with database.admin.acquire() as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    house = await compose(database, settings.model_copy(update={"warm_pages": on}))
    caplog.set_level("INFO", logger="mcp_memory.db.warmup")

    def read() -> bool:
        return any("into the page cache" in r.getMessage() for r in caplog.records)

    async with anyio.create_task_group() as tg:
        house.start(tg)
        # Read within moments when on (a new store's few pages); given as long when off.
        with anyio.move_on_after(20 if on else 3):
            while not read():  # noqa: ASYNC110 (a log record has no event to wait on)
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert read() is on


async def test_the_pages_are_read_in_the_searches_quiet_moments(database: Database, settings: Settings,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A search and a bulk read share one disk: each chunk waits while the server's searches run
    (`Activity`), and under searches that never pause it still ends."""
    async with database.admin.acquire() as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    service = (await compose(database, settings)).service
    await service.write(principal(), "The staging database moved to the second rack.")
    assert not service.activity.busy(0)
    await service.search(principal(), "staging database")
    assert service.activity.running == 0 and service.activity.busy(60) and not service.activity.busy(0)

    searching = True

    async def stop_searching() -> None:
        nonlocal searching
        await anyio.sleep(0.5)
        searching = False

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_searching)
        waited = await warm_pages(database.admin, busy=lambda quiet_s: searching)
    assert waited.seconds >= 0.45 and "memories" in dict(waited.read)

    monkeypatch.setattr(warmup, "YIELD_AT_MOST_S", 0.05)
    endless = await warm_pages(database.admin, busy=lambda quiet_s: True)
    assert endless.skipped is None and "memories" in dict(endless.read)


async def test_two_servers_installing_pg_prewarm_at_once_both_open(make_db) -> None:
    """CREATE EXTENSION IF NOT EXISTS takes no lock: the second of two servers opening one store at
    once waits on the first's uncommitted row and then meets its key; it opens all the same."""
    import asyncio

    from mcp_memory.repository.catalog import install_prewarm, prewarm_installed

    url = await make_db()
    first, second = await asyncpg.connect(url), await asyncpg.connect(url)
    try:
        await first.execute("DROP EXTENSION IF EXISTS pg_prewarm")
        tx = first.transaction()
        await tx.start()
        await first.execute("CREATE EXTENSION pg_prewarm")
        opening = asyncio.create_task(install_prewarm(second))
        await until_waiting(first, "the second server never waited on the first")
        await tx.commit()
        await opening
        assert await prewarm_installed(second)
    finally:
        await first.close()
        await second.close()
