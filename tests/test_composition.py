"""The composition root (mcp_memory/composition.py): the repository, the service and the
decisions worker are built complete, nothing is wired onto them afterwards; and the console's reads
go through the service's rules."""

from __future__ import annotations

import anyio
import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import runtime
from mcp_memory.errors import PermissionDenied
from mcp_memory.models import MOMENTS, Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.service import MemoryService, memory_repository

from .chat_api import ChatAPI, dead_url
from .conftest import principal
from .test_decisions import LISBON, OSLO, decisions_settings, drain


async def test_without_a_provider_there_is_no_worker_and_no_decision_job(database: Database, settings: Settings,
                                                                         alice: Principal) -> None:
    house = await compose(database, settings, workers=True)
    assert house.worker is None and house.service.decider is None
    await house.service.write(alice, OSLO)
    assert await database.admin.fetchval("SELECT count(*) FROM memory_jobs") == 0


async def test_the_repository_queues_the_jobs_the_settings_ask_for(database: Database, settings: Settings,
                                                                  alice: Principal) -> None:
    s = decisions_settings(settings, dead_url(), decisions_max_attempts=3, extraction=True)
    house = await compose(database, s)  # a command: its writes queue jobs for a server's workers
    assert house.worker is None and house.service.decider is None
    assert house.service.repo.undecided_kinds == MOMENTS
    note = (await house.service.write(alice, OSLO)).memory
    turn = (await house.service.write(alice, "user: where do I live again?", kind="episode")).memory
    jobs = await database.admin.fetch("SELECT memory_id, max_attempts FROM memory_jobs WHERE kind = 'decide'")
    assert [(j["memory_id"], j["max_attempts"]) for j in jobs] == [(note.id, 3)]
    assert turn.id not in {j["memory_id"] for j in jobs}


async def test_the_worker_counts_what_its_decisions_changed_for_the_planner(database: Database, settings: Settings,
                                                                           chat: ChatAPI, alice: Principal) -> None:
    house = await compose(database, decisions_settings(settings, chat.url, decisions_mode="async"), workers=True)
    service, worker = house.service, house.worker
    assert worker is not None and service.decider is worker and worker.service is service
    assert service.statistics is not None and worker.statistics is service.statistics
    await service.write(alice, OSLO)
    assert await drain(worker) == 1  # decided alone: no older memory, no change
    await service.write(alice, LISBON)
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "moved"}))
    before = service.statistics.pending
    assert await drain(worker) == 1
    assert service.statistics.pending == before + 1  # Oslo superseded by the decision


async def test_parts_built_for_other_settings_are_refused_at_construction(database: Database,
                                                                         settings: Settings) -> None:
    s = decisions_settings(settings, dead_url())
    with pytest.raises(ValueError, match="memory_repository"):
        MemoryService(MemoryRepository(database.pool), s)  # would write memories that no decision ever sees
    with pytest.raises(ValueError, match="memory_repository"):
        MemoryService(memory_repository(database.pool, s), settings)
    builder = runtime.workers_for(database.admin, s)
    assert builder is not None
    first = MemoryService(memory_repository(database.pool, s), s, decider=builder)
    assert first.decider is builder.worker
    with pytest.raises(RuntimeError, match="one service"):
        MemoryService(memory_repository(database.pool, s), s, decider=builder)


async def test_the_consoles_reads_follow_the_services_rules(service: MemoryService, alice: Principal) -> None:
    await service.write(alice, OSLO)
    await service.write(alice, "Alice's favourite tea is sencha.")
    found, total = await service.review.containing(alice, None, "oslo", "recent", 10, 0)
    assert total == 1 and [m.content for m in found] == [OSLO]
    assert await service.review.count(alice, None) == 2
    assert sum(n for _, n in await service.review.occurred_per_day(alice, 7)) == 2
    writer = principal(permissions=frozenset({"write"}))
    for read in (service.review.containing(writer, None, "oslo", "recent", 10, 0), service.review.count(writer, None),
                 service.review.occurred_per_day(writer, 7)):
        with pytest.raises(PermissionDenied):
            await read


async def test_background_work_that_fails_unforeseen_leaves_the_server_serving(
        database: Database, settings: Settings, alice: Principal, caplog: pytest.LogCaptureFixture) -> None:
    """In the server's task group a background failure would end the lifespan, and with it every
    later call; it is logged instead, and the service goes on."""
    house = await compose(database, settings, workers=True)
    assert house.service.statistics is not None

    async def broken() -> None:
        raise RuntimeError("a failure nobody foresaw")

    house.service.statistics.run_forever = broken  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        house.start(tg)
        await anyio.sleep(0.2)
        assert (await house.service.write(alice, OSLO)).memory.content == OSLO
        tg.cancel_scope.cancel()
    assert "planner statistics failed" in caplog.text and "a failure nobody foresaw" in caplog.text
