"""Extraction (issue 27 item 10): a captured session delta goes, redacted, as one job to the
model, whose facts are written and decided like any write, against a local chat-completions
server through the real `openai` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.transcripts import parse_text
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI, answering, serving
from .test_decisions import decisions_settings, drain, state

HEROKU = "The API runs on Heroku."
FLY = "The API now runs on Fly.io."
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
SESSION = (f"User: we moved the API to Fly.io last week; the deploy token is {TOKEN}.\n"
           "Assistant: Noted, I will deploy there.\n")


def sensible(system: str, user: str) -> dict[str, Any]:
    """Answers as a sensible model would: extraction requests get FLY from the turn naming
    Fly.io; a decision about FLY replaces the Heroku memory; everything else is ADD."""
    if "worth remembering" in system:
        labels = [json.loads(line)["label"] for line in user.splitlines()
                  if line.startswith("{") and "Fly.io" in json.loads(line)["text"]]
        return {"facts": [{"text": FLY, "kind": "fact", "turns": labels}] if labels else []}
    new, _, existing = user.partition("EXISTING memories:")
    heroku = [json.loads(line)["label"] for line in existing.splitlines()
              if line.startswith("{") and json.loads(line)["text"] == HEROKU]
    return ({"action": "UPDATE", "ids": heroku, "reason": "moved"} if FLY in new and heroku
            else {"action": "ADD", "ids": [], "reason": "unrelated"})


class Model(ChatAPI):
    """The sensible model behind a chat-completions endpoint."""

    def handle(self, path: str, body: dict[str, Any]) -> Any:
        answer = sensible(body["messages"][0]["content"], body["messages"][-1]["content"])
        return answering(answer, body)


@pytest.fixture(scope="module")
def model() -> Iterator[Model]:
    with serving(Model()) as api:
        yield api


async def setup(database: Database, settings: Settings, url: str, **over: Any) -> tuple[MemoryService, Any, Settings]:
    s = decisions_settings(settings, url, **over)
    service = await MemoryService.open(database, s)
    return service, DecisionWorker(database.admin, service, provider_from(s), s), s


async def extract_jobs(database: Database) -> list[Any]:
    return await database.admin.fetch("SELECT * FROM memory_jobs WHERE kind = 'extract' ORDER BY id")


async def memories_saying(database: Database, text: str) -> list[Any]:
    return await database.admin.fetch("SELECT * FROM memories WHERE content = $1 AND deleted_at IS NULL", text)


async def test_a_session_that_moved_the_api_supersedes_heroku(database: Database, settings: Settings, model: Model,
                                                              alice: Principal) -> None:
    model.reset()
    service, worker, s = await setup(database, settings, model.url)
    heroku = (await service.write(alice, HEROKU, kind="fact")).memory
    await drain(worker)
    transcript = parse_text(SESSION)
    await Capturer(service, s, "cli").capture(alice, transcript, key="cli:fly")
    await drain(worker)
    (job,) = await extract_jobs(database)
    result = json.loads(job["result"]) if isinstance(job["result"], str) else job["result"]
    assert job["status"] == "done" and result["facts"] == 1
    (fly,) = await memories_saying(database, FLY)
    episodes = [str(e) for e in job["sources"]]
    meta = json.loads(fly["metadata"]) if isinstance(fly["metadata"], str) else fly["metadata"]
    assert meta["extracted_from"] == [episodes[0]]
    assert (await state(service, alice, heroku.id))["superseded_by"] == fly["id"]
    # What left the machine: the turns redacted, never the token.
    bodies = json.dumps([r["body"] for r in model.take()])
    assert "Fly.io last week" in bodies and TOKEN not in bodies


async def decided_kinds(database: Database) -> set[str]:
    return {r["kind"] for r in await database.admin.fetch(
        "SELECT m.kind FROM memory_jobs j JOIN memories m ON m.id = j.memory_id WHERE j.kind = 'decide'")}


@pytest.mark.parametrize("extraction", [True, False])
async def test_with_extraction_on_the_turns_themselves_are_not_decided(
        database: Database, settings: Settings, model: Model, alice: Principal, extraction: bool) -> None:
    """A captured turn's facts are extracted and decided; deciding the turn too would spend a model
    call per turn (a 10-turn session: 10 calls before extraction runs). Without extraction, turns
    are decided like any write."""
    model.reset()
    service, worker, s = await setup(database, settings, model.url, extraction=extraction)
    await Capturer(service, s, "cli").capture(alice, parse_text(SESSION), key="cli:fly")
    await drain(worker)
    assert ("episode" in await decided_kinds(database)) is not extraction
    if extraction:
        assert await memories_saying(database, FLY)  # the fact is written, and decided
        assert "fact" in await decided_kinds(database)


async def test_a_delta_is_extracted_once_even_after_a_crash(database: Database, settings: Settings, model: Model,
                                                            alice: Principal) -> None:
    model.reset()
    service, worker, s = await setup(database, settings, model.url)
    transcript = parse_text(SESSION)
    capturer = Capturer(service, s, "cli")
    await capturer.capture(alice, transcript, key="cli:fly")
    await capturer.capture(alice, transcript, key="cli:fly")  # the same delta again: no new job
    await drain(worker)
    (job,) = await extract_jobs(database)
    # The worker died after writing the facts, before the job was marked done: it is taken again.
    await database.admin.execute("UPDATE memory_jobs SET status = 'queued', result = NULL WHERE id = $1", job["id"])
    await drain(worker)
    assert len(await memories_saying(database, FLY)) == 1
    assert (await extract_jobs(database))[0]["status"] == "done"


async def test_off_with_one_setting_the_trigger_patterns_stay(database: Database, settings: Settings, model: Model,
                                                              alice: Principal) -> None:
    model.reset()
    service, worker, s = await setup(database, settings, model.url, extraction=False)
    await Capturer(service, s, "cli").capture(alice, parse_text("User: I prefer tabs over spaces.\nAssistant: ok\n"),
                                              key="cli:tabs")
    await drain(worker)
    assert await extract_jobs(database) == []
    assert not any("worth remembering" in r["body"]["messages"][0]["content"] for r in model.take())
    facts = await database.admin.fetch("SELECT content FROM memories WHERE kind <> 'episode'")
    assert facts, "the trigger patterns found nothing: the fallback is not shown"


async def test_the_cap_per_session_falls_back_to_triggers(database: Database, settings: Settings, model: Model,
                                                          alice: Principal) -> None:
    model.reset()
    service, worker, s = await setup(database, settings, model.url, extraction_per_session=1)
    capturer = Capturer(service, s, "cli")
    text = "User: we moved the API to Fly.io.\nAssistant: ok\n"
    first = parse_text(text)
    first.session_id = "s1"
    await capturer.capture(alice, first, key="cli:cap")
    second = parse_text(text + "User: I prefer tabs over spaces.\nAssistant: ok\n")
    second.session_id = "s1"
    report = await capturer.capture(alice, second, key="cli:cap")
    assert len(await extract_jobs(database)) == 1
    assert report.facts >= 1  # the second delta went to the trigger patterns
    row = await database.admin.fetchrow("SELECT problems FROM transcript_cursors")
    assert "MCP_MEMORY_EXTRACTION_PER_SESSION" in str(row["problems"])


async def test_an_answer_of_the_wrong_shape_is_retried_not_written(database: Database, settings: Settings,
                                                                   chat: ChatAPI, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, chat.url)
    chat.default = ("text", "Sure! The user moved the API.")
    await Capturer(service, s, "cli").capture(alice, parse_text(SESSION), key="cli:bad")
    await drain(worker)
    (job,) = await extract_jobs(database)
    assert job["status"] == "dead" and "not of the shape" in job["last_error"]
    assert await database.admin.fetch("SELECT 1 FROM memories WHERE kind <> 'episode'") == []


# --- through MCP sampling ------------------------------------------------------------------------

def sampling_model(asked: list[Any]) -> Any:
    """A client's sampling callback: the sensible model behind it."""
    from mcp_types import CreateMessageResult, TextContent

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params)
        answer = sensible(params.system_prompt, params.messages[-1].content.text)  # after the worked examples
        return CreateMessageResult(role="assistant", model="client-model",
                                   content=TextContent(type="text", text=json.dumps(answer)))

    return sample


async def capture_fly(database: Database, settings: Settings, writer: Principal) -> None:
    """HEROKU stored, then the Fly.io session captured by a hook (no client to sample there): one
    extraction job queued, and no trigger facts."""
    s = sampling_settings(settings)
    service = await MemoryService.open(database, s)
    await service.write(writer, HEROKU, kind="fact")
    await Capturer(service, s, "cli").capture(writer, parse_text(SESSION), key="cli:fly")
    assert len(await extract_jobs(database)) == 1
    assert await database.admin.fetch("SELECT 1 FROM memories WHERE kind <> 'episode' AND content <> $1", HEROKU) == []


def sampling_settings(settings: Settings) -> Settings:
    return decisions_settings(settings, "http://127.0.0.1:9/v1", decisions_provider="sampling",
                              decisions_poll_s=0.1)


async def test_extraction_through_a_sampling_client_supersedes_heroku(database: Database, settings: Settings,
                                                                      alice: Principal) -> None:
    """The delta is answered by the connected client's model, and its fact is decided (through the
    same client) like any write: Fly.io supersedes Heroku. What the client saw is redacted."""
    from mcp import Client

    from mcp_memory.server import build_server

    from .test_jobs import wait_for

    await capture_fly(database, settings, alice)
    asked: list[Any] = []
    async with Client(build_server(sampling_settings(settings)), mode="legacy",
                      sampling_callback=sampling_model(asked)) as client:
        await client.call_tool("memory_list", {})  # the session (and its sampling) is known once it calls

        async def settled() -> bool:  # the extraction done, and every fact decided
            return await database.admin.fetchval(
                "SELECT bool_and(status = 'done') AND count(*) FILTER (WHERE kind = 'extract') = 1 "
                "AND count(*) = (SELECT count(*) FROM memories WHERE kind <> 'episode') + 1 FROM memory_jobs")

        await wait_for(settled)
    (job,) = await extract_jobs(database)
    result = json.loads(job["result"]) if isinstance(job["result"], str) else job["result"]
    assert (result["facts"], result["provider"]) == (1, "sampling")
    (fly,) = await memories_saying(database, FLY)
    (heroku,) = await database.admin.fetch("SELECT superseded_by FROM memories WHERE content = $1", HEROKU)
    assert heroku["superseded_by"] == fly["id"]
    assert sum("worth remembering" in params.system_prompt for params in asked) == 1
    extraction = next(params for params in asked if "worth remembering" in params.system_prompt)
    assert extraction.include_context == "none"
    assert "Fly.io last week" in extraction.messages[-1].content.text  # the delta, after the worked examples
    assert TOKEN not in json.dumps([m.content.text for params in asked for m in params.messages])


async def test_extraction_waits_for_a_client_that_may_read_the_episodes(database: Database,
                                                                         settings: Settings) -> None:
    """A session captured in project p1 is never shown to a client confined to another project:
    its job waits, visibly and uncounted, and that client's model is not asked."""
    from mcp import Client

    from mcp_memory.server import build_server

    from .test_jobs import wait_for

    writer = Principal(user_id="alice", agent_id="agent-a", project_id="p1", actor="local:alice")
    await capture_fly(database, settings, writer)
    asked: list[Any] = []
    async with Client(build_server(sampling_settings(settings)), mode="legacy",  # project proj-x
                      sampling_callback=sampling_model(asked)) as client:
        await client.call_tool("memory_list", {})

        async def waiting() -> Any:
            (job,) = await extract_jobs(database)
            return job if job["waiting"] else None

        job = await wait_for(waiting)
    assert job["status"] == "queued" and job["attempts"] == 0 and "may read these memories" in job["waiting"]
    assert asked == []
    assert await memories_saying(database, FLY) == []


async def test_two_sessions_ending_alike_are_each_extracted(database: Database, settings: Settings, model: Model,
                                                            alice: Principal) -> None:
    model.reset()
    service, worker, s = await setup(database, settings, model.url)
    capturer = Capturer(service, s, "cli")
    for key, text in (("cli:a", "User: we moved the API to Fly.io.\nAssistant: Noted.\n"),
                      ("cli:b", "User: the API on Fly.io now has 3 machines.\nAssistant: Noted.\n")):
        await capturer.capture(alice, parse_text(text), key=key)
    await drain(worker)
    jobs = await extract_jobs(database)
    assert len(jobs) == 2 and all(j["status"] == "done" for j in jobs)


async def test_an_extraction_job_is_listed_to_whoever_may_read_its_episodes(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    """Visible in jobs (issue 27 item 10): listed to its user, as `mcp-memory jobs list` shows it,
    and not to a credential confined to another project."""
    from mcp_memory.repository.jobs import JobRepository

    model.reset()
    service, _, s = await setup(database, settings, model.url)
    await Capturer(service, s, "cli").capture(alice, parse_text(SESSION), key="cli:listed")
    (job,) = await extract_jobs(database)
    jobs = JobRepository(service.repo)
    assert job["id"] in [j.id for j in await jobs.list(alice)]
    assert (await jobs.get(alice, job["id"])) is not None
    elsewhere = alice.model_copy(update={"project_id": "elsewhere"})
    assert job["id"] not in [j.id for j in await jobs.list(elsewhere)]
