"""Recovery in seconds and clean failures (issue 29): the breaker probes soon after opening and
backs off; a healed embedder is found without traffic within seconds; a transaction that fails or
is cancelled goes back to the pool rolled back; a restart's asyncpg errors are the outage answer."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio
import asyncpg
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from mcp_memory.breaker import Breaker
from mcp_memory.db import Database
from mcp_memory.errors import NotFound
from mcp_memory.repository.memory_store import MemoryStore
from mcp_memory.server.errors import UNAVAILABLE, tool_errors

from .conftest import principal
from .test_embeddings import EmbeddingsAPI


@pytest.fixture
async def loop_errors() -> Any:
    """What asyncpg reports through the loop's exception handler ("Resetting connection with an
    active transaction" is one: logged at ERROR by asyncio's default handler)."""
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(str(context.get("message"))))
    yield seen
    loop.set_exception_handler(old)


async def _released_clean(database: Database, seen: list[str]) -> None:
    await anyio.sleep(0.05)  # the release runs in the pool's own task
    assert not [m for m in seen if "active transaction" in m], seen
    for _ in range(database.pool.get_size()):
        async with database.pool.acquire() as conn:
            assert not conn.is_in_transaction()


async def test_a_failed_transaction_is_rolled_back_before_the_pool_gets_it(database: Database,
                                                                           loop_errors: list[str]) -> None:
    """`mcp-memory decisions undo` run twice, a refused capture batch: an error raised inside the
    transaction (NotFound here) released the connection mid-transaction."""
    store = MemoryStore(database.pool)
    with pytest.raises(NotFound):
        async with store.transaction(principal()) as conn:
            await conn.fetchval("SELECT count(*) FROM memories")
            raise NotFound("no such decision to undo")
    await _released_clean(database, loop_errors)


async def test_a_cancelled_transaction_is_rolled_back_before_the_pool_gets_it(database: Database,
                                                                              loop_errors: list[str]) -> None:
    """A stdio session ending mid-call cancels the call inside its transaction."""
    store = MemoryStore(database.pool)
    entered = anyio.Event()

    async def call() -> None:
        async with store.transaction(principal()) as conn:
            await conn.fetchval("SELECT 1")
            entered.set()
            await conn.fetchval("SELECT pg_sleep(10)")

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await entered.wait()
        await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    assert time.monotonic() - started < 5
    await _released_clean(database, loop_errors)


def test_the_breaker_probes_after_a_second_then_backs_off_to_its_cooldown(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    breaker = Breaker(threshold=2, cooldown_s=30, first_probe_s=1.0)
    breaker.failed()
    assert breaker.allows() and not breaker.open
    breaker.failed()
    assert breaker.open and not breaker.allows()
    waits = []
    for _ in range(11):
        wait = breaker.next_probe_in()
        now[0] += wait - 0.01
        assert not breaker.allows()  # not yet
        now[0] += 0.01
        assert breaker.allows()  # this call probes...
        assert not breaker.allows()  # ...and only this one
        breaker.failed()
        waits.append(round(wait, 2))
    assert waits == [1.0, 1.5, 2.25, 3.38, 5.06, 7.59, 11.39, 17.09, 25.63, 30.0, 30.0]
    now[0] += breaker.next_probe_in()
    assert breaker.allows()
    assert breaker.succeeded() and not breaker.open
    breaker.failed(), breaker.failed()
    assert breaker.next_probe_in() == 1.0  # a new outage starts from the short wait again


@pytest.fixture(scope="module")
def embeddings_api():
    server = EmbeddingsAPI()
    server.start()
    yield server
    server.close()


async def test_a_healed_embedder_is_found_in_seconds_not_a_cooldown(embeddings_api: EmbeddingsAPI, settings,
                                                                    database: Database) -> None:
    """The issue's fault run: with the 30 s cooldown, nothing written after the embedder healed had
    a vector 15 s later. Now the server's own probe finds it within seconds and backfills."""
    from mcp_memory.service import MemoryService

    service = await MemoryService.open(database, settings.model_copy(update={
        "embedding_provider": "openai", "embedding_model": "text-embedding-3-small", "embedding_api_key": "sk-test",
        "embedding_base_url": embeddings_api.url("openai"), "embedding_timeout_s": 0.3,
        "embedding_breaker_failures": 1, "embedding_breaker_cooldown_s": 30.0}))
    embeddings_api.delay = 2.0  # hangs past the timeout
    try:
        for i in range(3):
            await service.write(principal(), f"stored while the embedder hangs {i}")
        assert service.vectors.breaker.open
    finally:
        embeddings_api.delay = 0.0
    healed_at = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.vectors.heal_forever)
        with anyio.fail_after(8):
            while True:
                async with database.admin.acquire() as conn:
                    if not await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL"):
                        break
                await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    assert time.monotonic() - healed_at < 8
    assert not service.vectors.breaker.open
    written = await service.write(principal(), "written after the embedder healed")
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT embedding IS NOT NULL FROM memories WHERE id = $1", written.memory.id)


@pytest.mark.parametrize("fault", [asyncpg.InternalClientError("cannot switch to state 12; another operation "
                                                               "(13) is in progress"),
                                   FileNotFoundError(2, "No such file or directory"),
                                   asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of "
                                                                       "operation")])
async def test_a_restart_mid_call_is_the_outage_answer_not_an_internal_error(fault: Exception,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    @tool_errors
    async def memory_write() -> None:
        raise fault

    with pytest.raises(ToolError) as raised:
        await memory_write()
    assert str(raised.value) == UNAVAILABLE
    assert not [r for r in caplog.records if r.exc_info], "no traceback for an expected fault"


async def test_the_pool_refilling_while_postgres_is_down_logs_lines_not_tracebacks(
        tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    """The issue's FileNotFoundError tracebacks: asyncpg's pool logs each attempt to restore its
    minimum size with exc_info while the server restarts (the Unix socket is gone)."""
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database
    from mcp_memory.db.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres(tmp_path / "own")
    await anyio.to_thread.run_sync(pg.start)
    db = await open_database(Settings(database_url=pg.dsn("postgres"), data_dir=tmp_path / "unused",
                                      pool_min_size=2))
    try:
        with caplog.at_level(logging.WARNING, logger="asyncpg.pool"):
            await anyio.to_thread.run_sync(pg.stop)
            with anyio.fail_after(20):
                while True:
                    if [r for r in caplog.records if r.name == "asyncpg.pool"]:
                        break
                    await anyio.sleep(0.2)
        refills = [r for r in caplog.records if r.name == "asyncpg.pool"]
        assert all(r.exc_info is None for r in refills), [r.exc_info for r in refills]
        assert any("FileNotFoundError" in r.getMessage() or "Error" in r.getMessage() for r in refills)
    finally:
        await db.close()
