"""Retention with a clock we control: only time removes data, and only past its window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import Principal
from mcp_memory.retention import sweep
from mcp_memory.service import MemoryService


async def rows(db: Database, sql: str) -> int:
    async with db.admin.acquire() as conn:
        return await conn.fetchval(sql)


async def test_tombstones_go_only_after_the_window(service: MemoryService, alice: Principal,
                                                   database: Database, settings: Settings) -> None:
    gone = (await service.write(alice, "forget me")).memory
    kept = (await service.write(alice, "keep me")).memory
    await service.forget(alice, [gone.id])
    now = datetime.now(UTC)

    early = await sweep(database.admin, settings, now=now + timedelta(days=29))
    assert early.tombstones == 0
    assert (await service.restore(alice, [gone.id])).restored  # still restorable on day 29
    await service.forget(alice, [gone.id])

    dry = await sweep(database.admin, settings, now=now + timedelta(days=31), dry_run=True)
    assert dry.tombstones == 1 and dry.dry_run
    assert await rows(database, "SELECT count(*) FROM memories") == 2

    report = await sweep(database.admin, settings, now=now + timedelta(days=31))
    assert report.tombstones == 1 and not report.dry_run
    assert await rows(database, "SELECT count(*) FROM memories") == 1
    assert (await service.get_one(alice, kept.id)).content == "keep me"
    assert await rows(database, f"SELECT count(*) FROM memory_history WHERE memory_id = '{gone.id}' "
                                "AND event = 'PURGE' AND actor = 'system:retention'") == 1


async def test_history_tokens_and_keys_expire(service: MemoryService, alice: Principal, database: Database,
                                              settings: Settings) -> None:
    await service.write(alice, "tokened", idempotency_key="k1")
    await service.forget_preview(alice, query="tokened")
    now = datetime.now(UTC)
    soon = await sweep(database.admin, settings, now=now)
    assert (soon.history, soon.forget_tokens, soon.idempotency_keys) == (0, 0, 0)
    later = await sweep(database.admin, settings, now=now + timedelta(days=181))
    assert later.history == 1 and later.forget_tokens == 1 and later.idempotency_keys == 1
    assert await rows(database, "SELECT count(*) FROM memories") == 1  # live memories are never purged


async def test_stale_purge_is_off_by_default_and_soft(service: MemoryService, alice: Principal,
                                                      database: Database, settings: Settings) -> None:
    never = (await service.write(alice, "never read")).memory
    read = (await service.write(alice, "read lately")).memory
    pinned = (await service.write(alice, "pinned, never read", pinned=True)).memory
    async with database.admin.acquire() as conn:  # all three were written 400 days ago
        await conn.execute("UPDATE memories SET created_at = now() - interval '400 days', "
                           "updated_at = now() - interval '400 days'")
    await service.get(alice, [read.id])  # ... and one was read today
    assert (await sweep(database.admin, settings)).stale_forgotten == 0  # off by default

    stale = settings.model_copy(update={"stale_after_days": 365})
    report = await sweep(database.admin, stale)
    assert report.stale_forgotten == 1
    live = {m.id for m in (await service.list(alice)).memories}
    assert live == {read.id, pinned.id}
    assert (await service.restore(alice, [never.id])).restored  # soft: restorable (by the admin)


async def test_finished_decision_jobs_go_with_history(database: Database, settings: Settings,
                                                      alice: Principal) -> None:
    """Done, dead and cancelled jobs are deleted once past the history window; queued and running
    ones never, however old."""
    from mcp_memory.repository import jobs as queue
    from mcp_memory.repository.jobs import JobRepository

    from .chat_api import dead_url
    from .test_decisions import decisions_settings

    service = await MemoryService.open(database, decisions_settings(settings, dead_url()))
    for text in ("one", "two", "three", "four", "five"):
        await service.write(alice, f"Alice's note number {text}.")
    done, dead, running = [await queue.claim(database.admin, "worker", 60) for _ in range(3)]
    async with service.repo.transaction(alice) as conn:
        await queue.finish(conn, done, {"action": "none"}, 0)
    assert await queue.fail(database.admin, dead, "worker", "gave up", retry_in_s=None) == "dead"
    queued = await database.admin.fetchval("SELECT array_agg(id ORDER BY id) FROM memory_jobs WHERE status = 'queued'")
    assert await JobRepository(service.repo).cancel(alice, queued[:1]) == queued[:1]
    statuses = "SELECT string_agg(status, ',' ORDER BY status) FROM memory_jobs"
    assert await rows(database, statuses) == "cancelled,dead,done,queued,running"
    now = datetime.now(UTC)

    early = await sweep(database.admin, settings, now=now + timedelta(days=settings.history_days - 1))
    assert early.decision_jobs == 0
    dry = await sweep(database.admin, settings, now=now + timedelta(days=settings.history_days + 1), dry_run=True)
    assert dry.decision_jobs == 3 and await rows(database, "SELECT count(*) FROM memory_jobs") == 5
    later = await sweep(database.admin, settings, now=now + timedelta(days=settings.history_days + 1))
    assert later.decision_jobs == 3
    assert await rows(database, statuses) == "queued,running"
    assert running.id in [r["id"] for r in await database.admin.fetch("SELECT id FROM memory_jobs")]
    assert await rows(database, "SELECT count(*) FROM memories WHERE deleted_at IS NULL") == 5
