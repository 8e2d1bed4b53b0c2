"""Decisions through the real `openai` SDK against a local chat-completions server with scripted
answers, and through MCP sampling with the SDK client's sampling callback: the exact state and
history each answer leaves."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from mcp import Client
from mcp_types import CreateMessageResult, TextContent

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import apply as applying
from mcp_memory.decisions import guard, provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.decisions.protocol import Candidate, Decision, InvalidAnswer, parse_decision
from mcp_memory.errors import Conflict, PermissionDenied
from mcp_memory.models import Principal
from mcp_memory.repository.decisions import DecisionRepository
from mcp_memory.repository.jobs import JobRepository
from mcp_memory.server import build_server
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI, dead_url
from .conftest import principal

OSLO = "Alice lives in Oslo, Norway."
LISBON = "Alice lives in Lisbon, Portugal now."


def decisions_settings(settings: Settings, url: str, **over: Any) -> Settings:
    # The scripted endpoint listens on loopback, where the guard's floor and its second look would
    # be a small local model's (decisions/guard.py floor_for, second_look.enabled); it stands for
    # any model here, so the usual floor and no second look.
    values = dict(decisions_provider="openai-compatible", decisions_base_url=url, decisions_model="judge-1",
                  decisions_max_attempts=2, decisions_retry_base_s=0, decisions_per_minute=0,
                  decisions_tokens_per_day=0, decisions_timeout_s=5, decisions_guard_floor=guard.ATTRIBUTE_FLOOR,
                  decisions_second_look=False)
    return settings.model_copy(update={**values, **over})


@pytest.fixture
async def setup(database: Database, settings: Settings, chat: ChatAPI
                ) -> AsyncIterator[tuple[MemoryService, DecisionWorker, Settings]]:
    s = decisions_settings(settings, chat.url)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    yield service, worker, s


async def drain(worker: DecisionWorker) -> int:
    n = 0
    while await worker.run_once():
        n += 1
    return n


async def two_versions(service: MemoryService, p: Principal, worker: DecisionWorker) -> tuple[Any, Any]:
    """Oslo, decided alone (no older memory: no model call), then Lisbon, queued."""
    old = (await service.write(p, OSLO)).memory
    assert await drain(worker) == 1
    new = (await service.write(p, LISBON)).memory
    return old, new


async def jobs_of(database: Database) -> list[asyncpg.Record]:
    return await database.admin.fetch("SELECT * FROM memory_jobs ORDER BY id")


async def decision_history(database: Database) -> list[asyncpg.Record]:
    return await database.admin.fetch(
        "SELECT * FROM memory_history WHERE actor = 'pipeline:decisions' ORDER BY seq")


async def state(service: MemoryService, p: Principal, memory_id: Any) -> Any:
    async with service.repo.transaction(p) as conn:
        return (await service.repo._fetch(conn, p, [memory_id], deleted=None))[0]


# --- the contract -------------------------------------------------------------------------------

def test_parse_decision_is_strict() -> None:
    assert parse_decision('{"action": "update", "ids": ["1"], "reason": "moved"}').action == "UPDATE"
    assert parse_decision('```json\n{"action": "ADD", "ids": [], "reason": "new"}\n```').action == "ADD"
    for bad in ("", "sure! UPDATE 1", "[1]", '{"action": "MERGE", "ids": [], "reason": "x"}',
                '{"action": "ADD", "ids": [], "reason": "x", "confidence": 1}', '{"action": "ADD", "ids": []}'):
        with pytest.raises(InvalidAnswer):
            parse_decision(bad)


def test_targets_are_checked_against_the_candidates() -> None:
    import uuid

    a, b = uuid.uuid4(), uuid.uuid4()
    cands = [Candidate(label="1", id=a, content="x", kind="fact", age="now", similarity=0.9),
             Candidate(label="2", id=b, content="y", kind="fact", age="now", similarity=0.8)]
    assert Decision(action="UPDATE", ids=["2", str(a).upper()], reason="r").targets(cands) == [b, a]
    # ADD keeps both memories: what it names is no target, known or not.
    assert Decision(action="ADD", ids=["1", "9"], reason="r").targets(cands) == []
    for action, ids in (("UPDATE", ["3"]), ("UPDATE", [str(uuid.uuid4())]), ("NONE", ["1", "2"]),
                        ("DELETE", [])):
        with pytest.raises(InvalidAnswer):
            Decision(action=action, ids=ids, reason="r").targets(cands)


# --- good decisions -------------------------------------------------------------------------------

async def test_update_supersedes_the_old_memory_with_history(setup, chat: ChatAPI, database: Database,
                                                             alice: Principal) -> None:
    service, worker, _ = setup
    old, new = await two_versions(service, alice, worker)
    assert chat.take() == []  # the first memory had nothing older to be compared with
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "Alice moved to Lisbon."}))
    assert await drain(worker) == 1
    (request,) = chat.take()
    body = request["body"]
    assert body["model"] == "judge-1" and body["response_format"]["type"] == "json_schema"
    assert OSLO in body["messages"][1]["content"] and LISBON in body["messages"][1]["content"]
    old_row = await state(service, alice, old.id)
    assert old_row["superseded_by"] == new.id and old_row["deleted_at"] is None
    (h,) = await decision_history(database)
    assert (h["memory_id"], h["event"], h["client"], h["request_id"]) == (old.id, "UPDATE", "openai-compatible/judge-1",
                                                                          f"job:{(await jobs_of(database))[1]['id']}")
    assert h["reason"] == "decision UPDATE by openai-compatible/judge-1: Alice moved to Lisbon."
    assert h["old"] == {"superseded_by": None} and h["new"] == {"superseded_by": str(new.id)}
    jobs = await jobs_of(database)
    assert [j["status"] for j in jobs] == ["done", "done"]
    assert jobs[1]["result"]["action"] == "UPDATE" and jobs[1]["result"]["applied"] == [str(old.id)]
    assert jobs[1]["tokens"] == 120 and jobs[1]["attempts"] == 1
    # A search now ranks the old version as superseded; the memory_history tool shows the row.
    hist = await service.history(alice, old.id)
    assert hist.entries[-1].actor == "pipeline:decisions"

    # Undo by memory id: the link is gone, the undo is in history, and it cannot be undone twice.
    done = await applying.undo(DecisionRepository(service.repo), JobRepository(service.repo), alice, str(old.id))
    assert done["reverted"] == [str(old.id)]
    assert (await state(service, alice, old.id))["superseded_by"] is None
    with pytest.raises(Conflict):
        await applying.undo(DecisionRepository(service.repo), JobRepository(service.repo), alice, str(old.id))
    last = (await service.history(alice, old.id)).entries[-1]
    assert (last.event, last.actor, last.new) == ("UPDATE", alice.actor, {"superseded_by": None})


async def test_delete_forgets_softly_and_undo_restores(setup, chat: ChatAPI, database: Database,
                                                       alice: Principal) -> None:
    service, worker, _ = setup
    old = (await service.write(alice, "Alice owns a red car.")).memory
    await drain(worker)
    new = (await service.write(alice, "Alice sold her red car and no longer owns a car.")).memory
    chat.script(("json", {"action": "DELETE", "ids": ["1"], "reason": "She no longer owns a car."}))
    assert await drain(worker) == 1
    row = await state(service, alice, old.id)
    assert row["deleted_at"] is not None and row["deleted_reason"].startswith("decision DELETE by openai-compatible")
    assert (await state(service, alice, new.id))["deleted_at"] is None
    (h,) = await decision_history(database)
    assert (h["event"], h["memory_id"]) == ("DELETE", old.id)
    # What the new memory says is no longer true is an edge on it.
    edges = (await service.get(alice, [new.id])).memories[0].edges
    assert [(e.kind, e.memory, e.direction) for e in edges] == [("contradicts", old.id, "out")]
    # Undo by the history row's number.
    done = await applying.undo(DecisionRepository(service.repo), JobRepository(service.repo), alice, str(h["seq"]))
    assert done["reverted"] == [str(old.id)]
    assert (await state(service, alice, old.id))["deleted_at"] is None
    assert (await service.history(alice, old.id)).entries[-1].event == "RESTORE"
    assert (await service.get(alice, [new.id])).memories[0].edges is None


async def test_none_links_the_duplicate_to_the_old_memory(setup, chat: ChatAPI, database: Database,
                                                          alice: Principal) -> None:
    service, worker, _ = setup
    old, new = await two_versions(service, alice, worker)
    chat.script(("json", {"action": "NONE", "ids": ["1"], "reason": "Same fact."}))
    await drain(worker)
    assert (await state(service, alice, new.id))["superseded_by"] == old.id
    assert (await state(service, alice, old.id))["superseded_by"] is None
    (h,) = await decision_history(database)
    assert (h["memory_id"], h["new"]) == (new.id, {"superseded_by": str(old.id)})


@pytest.mark.parametrize("ids", [[], ["1"]], ids=["naming-none", "naming-a-candidate"])
async def test_add_changes_nothing(setup, chat: ChatAPI, database: Database, alice: Principal, ids: list[str]) -> None:
    service, worker, _ = setup
    old, new = await two_versions(service, alice, worker)
    chat.script(("json", {"action": "ADD", "ids": ids, "reason": "Different facts."}))
    await drain(worker)
    for m in (old, new):
        row = await state(service, alice, m.id)
        assert row["superseded_by"] is None and row["deleted_at"] is None and row["version"] == 1
    assert await decision_history(database) == []
    job = (await jobs_of(database))[1]
    assert (job["status"], job["result"]["action"], job["result"]["reason"]) == ("done", "ADD", "Different facts.")
    assert (job["attempts"], job["result"]["targets"]) == (1, [])


async def test_plain_json_when_the_endpoint_has_no_structured_output(setup, chat: ChatAPI, alice: Principal) -> None:
    service, worker, _ = setup
    old, new = await two_versions(service, alice, worker)
    chat.structured = False
    chat.script(("text", '```json\n{"action": "UPDATE", "ids": ["1"], "reason": "moved"}\n```'))
    await drain(worker)
    first, second = chat.take()
    assert "response_format" in first["body"] and "response_format" not in second["body"]
    assert (await state(service, alice, old.id))["superseded_by"] == new.id


# --- bad answers and broken endpoints: nothing changes, the job retries, then is a dead letter ---

@pytest.mark.parametrize(("steps", "error", "attempts"), [
    ([("text", "I think UPDATE 1"), ("text", "{not json")], "invalid: the model's answer is not JSON", 2),
    ([("json", {"action": "UPDATE", "ids": ["7"], "reason": "x"})] * 2,
     "invalid: the decision names '7', which is not among the candidates (1)", 2),
    ([("refusal", "I can't help with that.")], "refused: the model refused: I can't help with that.", 1),
    ([("status", 500), ("status", 500)], "unavailable: the decisions endpoint", 2),
    ([("sleep", 1.5), ("sleep", 1.5)], "did not answer within 1 s", 2),
])
async def test_failures_leave_memories_untouched(database: Database, settings: Settings, chat: ChatAPI,
                                                 alice: Principal, steps: list, error: str, attempts: int) -> None:
    s = decisions_settings(settings, chat.url, decisions_timeout_s=1)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    old, new = await two_versions(service, alice, worker)
    chat.script(*steps)
    await drain(worker)
    job = (await jobs_of(database))[1]
    assert job["status"] == "dead" and job["attempts"] == attempts and error in job["last_error"]
    assert job["finished_at"] is not None and job["result"] is None
    for m in (old, new):
        row = await state(service, alice, m.id)
        assert (row["superseded_by"], row["deleted_at"], row["version"]) == (None, None, 1)
    assert await decision_history(database) == []
    # A dead letter is retried on request (a write: a read-only credential is refused and the job
    # stays dead), and then a good answer applies.
    with pytest.raises(PermissionDenied):
        await service.queue.retry(principal(permissions=frozenset({"read"})), [job["id"]])
    assert [j.id for j in await service.queue.list(alice, ["dead"])] == [job["id"]]
    assert await service.queue.retry(alice, [job["id"]]) == [job["id"]]
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "moved"}))
    await drain(worker)
    assert (await state(service, alice, old.id))["superseded_by"] == new.id


async def test_dead_endpoint_makes_jobs_wait(database: Database, settings: Settings, alice: Principal) -> None:
    """Unreachable is not the job's fault: it waits (uncounted) and looks again after 3 x the
    retry base, and the other jobs wait with it without asking the endpoint."""
    s = decisions_settings(settings, dead_url(), decisions_retry_base_s=10, decisions_max_attempts=3)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    await two_versions(service, alice, worker)
    assert await drain(worker) == 1  # one try; the next is not due for 30 s
    job = (await jobs_of(database))[1]
    assert job["status"] == "queued" and job["attempts"] == 0 and "unreachable" in job["waiting"]
    wait = (job["run_after"] - job["updated_at"]).total_seconds()
    assert 29 <= wait <= 31


# --- the agent's choices and pins win ------------------------------------------------------------

async def test_pinned_memories_are_never_changed(setup, chat: ChatAPI, database: Database, alice: Principal) -> None:
    service, worker, _ = setup
    old = (await service.write(alice, OSLO, pinned=True)).memory
    await drain(worker)
    (await service.write(alice, LISBON))
    chat.script(("json", {"action": "DELETE", "ids": ["1"], "reason": "moved"}))
    await drain(worker)
    row = await state(service, alice, old.id)
    assert (row["deleted_at"], row["superseded_by"], row["version"]) == (None, None, 1)
    assert "pinned" in chat.take()[0]["body"]["messages"][1]["content"]  # the model is told
    job = (await jobs_of(database))[1]
    assert job["status"] == "done" and job["result"]["skipped"] == {str(old.id): "pinned"}
    assert await decision_history(database) == []


async def test_explicit_supersedes_wins(setup, chat: ChatAPI, database: Database, alice: Principal) -> None:
    service, worker, _ = setup
    oslo = (await service.write(alice, OSLO)).memory
    bergen = (await service.write(alice, "Alice lives in Bergen, Norway.")).memory
    await drain(worker)
    chat.take()
    # The agent says Lisbon replaces Bergen; the model would rather it replaced Oslo and deleted Bergen.
    lisbon = (await service.write(alice, LISBON, supersedes=[bergen.id])).memory
    chat.script(("json", {"action": "DELETE", "ids": ["1"], "reason": "moved"}))
    await drain(worker)
    prompt = chat.take()[0]["body"]["messages"][1]["content"]
    assert "Bergen" not in prompt and "Oslo" in prompt  # what the agent decided is not put to the model
    assert (await state(service, alice, bergen.id))["superseded_by"] == lisbon.id
    assert (await state(service, alice, bergen.id))["deleted_at"] is None
    job = (await jobs_of(database))[-1]
    assert job["explicit"] == [bergen.id]
    # Even a decision naming the explicitly superseded memory leaves it as the agent set it.
    p = alice
    repo = DecisionRepository(service.repo)
    from mcp_memory.decisions.protocol import Answer
    from mcp_memory.repository import jobs as queue

    assert (await state(service, alice, oslo.id))["deleted_at"] is not None  # the model's own call on Oslo
    again = (await service.write(p, "Alice lives in Lisbon, Portugal, since May.", supersedes=[lisbon.id])).memory
    claimed = await queue.claim_one(database.admin, p.user_id, again.id, "test", 60)
    answer = Answer(decision=Decision(action="DELETE", ids=["x"], reason="r"), provider="t", model="m")
    result = await applying.apply(repo, claimed, "test", answer, [lisbon.id], [lisbon.id])
    assert result["skipped"] == {str(lisbon.id): "superseded explicitly by the agent"}
    row = await state(service, p, lisbon.id)
    assert (row["deleted_at"], row["superseded_by"]) == (None, again.id)


async def test_a_job_applied_twice_changes_nothing_twice(setup, chat: ChatAPI, database: Database,
                                                         alice: Principal) -> None:
    """A worker whose lease ran out while it waited for the model finds the job taken again and
    applies nothing; the second worker's decision stands alone."""
    service, worker, s = setup
    old, new = await two_versions(service, alice, worker)
    from mcp_memory.decisions.protocol import Answer
    from mcp_memory.repository import jobs as queue

    first = await queue.claim(database.admin, "w1", 0.01)
    await database.admin.execute("SELECT pg_sleep(0.05)")
    second = await queue.claim(database.admin, "w2", 60)  # the lease of w1 ran out
    assert first.id == second.id and second.attempts == 2
    answer = Answer(decision=Decision(action="UPDATE", ids=["1"], reason="moved"), provider="t", model="m")
    repo = DecisionRepository(service.repo)
    assert await applying.apply(repo, second, "w2", answer, [old.id], [old.id]) is not None
    assert await applying.apply(repo, first, "w1", answer, [old.id], [old.id]) is None
    assert len(await decision_history(database)) == 1
    assert (await state(service, alice, old.id))["version"] == 2


async def test_budgets_make_jobs_wait(database: Database, settings: Settings, chat: ChatAPI, alice: Principal) -> None:
    s = decisions_settings(settings, chat.url, decisions_tokens_per_day=100)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    old, new = await two_versions(service, alice, worker)
    chat.script(("json", {"action": "ADD", "ids": [], "reason": "x"}))
    await drain(worker)  # 120 tokens: the day's budget is spent after this one
    third = (await service.write(alice, "Alice lives in Lisbon, Portugal, near the river.")).memory
    assert await drain(worker) == 1
    job = (await database.admin.fetch("SELECT * FROM memory_jobs WHERE memory_id = $1", third.id))[0]
    assert job["status"] == "queued" and job["attempts"] == 0 and "tokens per day" in job["waiting"]
    assert len(chat.take()) == 1


# --- sync mode ------------------------------------------------------------------------------------

async def test_sync_mode_decides_within_the_write(database: Database, settings: Settings, chat: ChatAPI,
                                                  alice: Principal) -> None:
    s = decisions_settings(settings, chat.url, decisions_mode="sync", decisions_sync_budget_s=15)
    house = await compose(database, s, workers=True)  # the write tells the worker, as in a server
    service, worker = house.service, house.worker
    assert worker is not None
    old = (await service.write(alice, OSLO)).memory
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "moved"}))
    new = (await service.write(alice, LISBON)).memory
    assert (await state(service, alice, old.id))["superseded_by"] == new.id  # decided before write returned
    # Over the budget: the write returns, the job goes back to the queue unspent.
    chat.script(("sleep", 4), ("json", {"action": "ADD", "ids": [], "reason": "x"}))
    s2 = s.model_copy(update={"decisions_sync_budget_s": 0.5})
    worker.settings = s2
    third = (await service.write(alice, "Alice lives in Lisbon, Portugal, since 2026.")).memory
    job = (await database.admin.fetch("SELECT * FROM memory_jobs WHERE memory_id = $1", third.id))[0]
    assert (job["status"], job["attempts"]) == ("queued", 0)


# --- MCP sampling ---------------------------------------------------------------------------------

async def test_sampling_through_the_client(database: Database, settings: Settings, alice: Principal) -> None:
    s = settings.model_copy(update=dict(decisions_provider="sampling", decisions_model="haiku",
                                        decisions_max_attempts=2, decisions_retry_base_s=0,
                                        decisions_per_minute=0, decisions_tokens_per_day=0, decisions_poll_s=0.1))
    asked: list[Any] = []

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", model="client-model-1", content=TextContent(
            type="text", text='{"action": "UPDATE", "ids": ["1"], "reason": "moved"}'))

    server = build_server(s)
    async with Client(server, mode="legacy", sampling_callback=sample) as client:
        old = (await client.call_tool("memory_write", {"content": OSLO})).structured_content["memory"]
        new = (await client.call_tool("memory_write", {"content": LISBON})).structured_content["memory"]
        for _ in range(100):
            rows = await database.admin.fetch("SELECT status FROM memory_jobs ORDER BY id")
            if [r["status"] for r in rows] == ["done", "done"]:
                break
            import anyio

            await anyio.sleep(0.1)
    assert len(asked) == 1
    params = asked[0]
    assert params.include_context == "none" and params.model_preferences.hints[0].name == "haiku"
    assert LISBON in params.messages[0].content.text
    row = await database.admin.fetchrow("SELECT superseded_by FROM memories WHERE id = $1::uuid", old["id"])
    assert str(row["superseded_by"]) == new["id"]
    (h,) = await decision_history(database)
    assert h["client"] == "sampling/client-model-1"


@pytest.mark.parametrize("era", ["legacy without sampling", "2026 with sampling"])
async def test_sampling_without_the_capability_waits(database: Database, settings: Settings, era: str) -> None:
    """A client that did not declare sampling is never asked; nor is one on a 2026-era
    connection, which has no channel back to the client outside a request."""
    s = settings.model_copy(update=dict(decisions_provider="sampling", decisions_max_attempts=2,
                                        decisions_retry_base_s=60, decisions_per_minute=0,
                                        decisions_tokens_per_day=0, decisions_poll_s=0.1))
    server = build_server(s)

    async def never(context: Any, params: Any) -> CreateMessageResult:
        raise AssertionError("a client must not be asked to sample here")

    client_args: dict[str, Any] = ({"mode": "legacy"} if era.startswith("legacy")
                                   else {"mode": "auto", "sampling_callback": never})
    async with Client(server, **client_args) as client:
        old = (await client.call_tool("memory_write", {"content": OSLO})).structured_content["memory"]
        await client.call_tool("memory_write", {"content": LISBON})
        import anyio

        for _ in range(100):
            rows = await database.admin.fetch("SELECT * FROM memory_jobs ORDER BY id")
            if len(rows) == 2 and rows[1]["waiting"] and rows[1]["status"] == "queued":
                break
            await anyio.sleep(0.1)
    job = rows[1]
    assert job["status"] == "queued" and job["attempts"] == 0 and "offers sampling" in job["waiting"]
    row = await database.admin.fetchrow("SELECT superseded_by, deleted_at FROM memories WHERE id = $1::uuid",
                                        old["id"])
    assert (row["superseded_by"], row["deleted_at"]) == (None, None)


async def test_sampling_declined_by_the_user_is_final(database: Database, settings: Settings) -> None:
    from mcp_types import ErrorData

    s = settings.model_copy(update=dict(decisions_provider="sampling", decisions_max_attempts=3,
                                        decisions_retry_base_s=0, decisions_per_minute=0,
                                        decisions_tokens_per_day=0, decisions_poll_s=0.1))
    calls = 0

    async def decline(context: Any, params: Any) -> ErrorData:
        nonlocal calls
        calls += 1
        return ErrorData(code=-1, message="User rejected sampling request")

    server = build_server(s)
    async with Client(server, mode="legacy", sampling_callback=decline) as client:
        await client.call_tool("memory_write", {"content": OSLO})
        await client.call_tool("memory_write", {"content": LISBON})
        import anyio

        for _ in range(100):
            rows = await database.admin.fetch("SELECT * FROM memory_jobs ORDER BY id")
            if len(rows) == 2 and rows[1]["status"] == "dead":
                break
            await anyio.sleep(0.1)
    assert rows[1]["status"] == "dead" and rows[1]["attempts"] == 1 and "declined" in rows[1]["last_error"]
    assert calls == 1


async def test_auto_mode_goes_async_after_a_slow_decision(database: Database, settings: Settings, chat: ChatAPI,
                                                          alice: Principal) -> None:
    import time

    s = decisions_settings(settings, chat.url, decisions_mode="auto", decisions_sync_budget_s=1.5)
    house = await compose(database, s, workers=True)
    service, worker = house.service, house.worker
    assert worker is not None
    worker.provider._sdk()  # the SDK imported and its client built: the budget is the model's alone
    await service.write(alice, OSLO)
    chat.script(("sleep", 4), ("json", {"action": "ADD", "ids": [], "reason": "x"}))
    started = time.monotonic()
    await service.write(alice, LISBON)
    assert time.monotonic() - started < 3.5  # the write did not wait for the model
    assert worker._async_until > time.monotonic()  # it overran: auto turned async for a while
    chat.take()
    third = (await service.write(alice, "Alice lives in Lisbon, Portugal, in Alfama."))
    assert len(chat.take()) == 0  # async now: the write only queued its job
    job = await database.admin.fetchrow("SELECT * FROM memory_jobs WHERE memory_id = $1", third.memory.id)
    assert (job["status"], job["attempts"]) == ("queued", 0)


async def test_sync_write_with_a_dead_endpoint_still_succeeds(database: Database, settings: Settings,
                                                              alice: Principal) -> None:
    s = decisions_settings(settings, dead_url(), decisions_mode="sync", decisions_retry_base_s=60)
    house = await compose(database, s, workers=True)  # the write tells the worker, as in a server
    service, worker = house.service, house.worker
    assert worker is not None
    await service.write(alice, OSLO)
    result = await service.write(alice, LISBON)
    assert result.status == "created"
    job = await database.admin.fetchrow("SELECT * FROM memory_jobs WHERE memory_id = $1", result.memory.id)
    assert (job["status"], job["attempts"]) == ("queued", 0) and "unreachable" in job["waiting"]


def test_a_request_still_sleeping_does_not_take_a_later_script(chat: ChatAPI) -> None:
    """The fake endpoint itself: a timed-out request that wakes after the next test scripted its
    answers must not take them (a DELETE answered with the default ADD made a later test flaky)."""
    def ask() -> dict:
        request = urllib.request.Request(f"{chat.url}/chat/completions", data=json.dumps({"model": "m"}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.loads(json.loads(reply.read())["choices"][0]["message"]["content"])

    chat.script(("sleep", 0.5), ("json", {"action": "UPDATE", "ids": ["1"], "reason": "same test"}))
    early: list[dict] = []
    sleeper = threading.Thread(target=lambda: early.append(ask()))
    sleeper.start()
    time.sleep(0.1)
    chat.script(("json", {"action": "DELETE", "ids": ["1"], "reason": "later test"}))
    sleeper.join()
    assert early == [chat.default[1]]
    assert ask()["action"] == "DELETE"
