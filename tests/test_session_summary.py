"""Session summaries (issue 49): the model pass that extracts a captured delta's facts also sums
the delta up; the session's summary is one memory of kind session_summary per session, derived_from
its turns, its deltas' summaries in order, updated (with history) by later deltas; search and
recall put it before the raw turns it sums up. Without a model, or with one that gives no summary,
there is none. Against a local
chat-completions server through the real `openai` SDK (tests/chat_api.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.recall import prompt_context
from mcp_memory.capture.transcripts import Transcript, parse_text
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import extraction, provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.decisions.summaries import MAX_PART_CHARS, MAX_SUMMARY_CHARS, cleaned, composed
from mcp_memory.models import Principal, ScopeInfo, SearchHit, WriteItem
from mcp_memory.retrieval.summaries import summaries_first
from mcp_memory.service import MemoryService
from mcp_memory.validation import content_hash

from .chat_api import ChatAPI, answering, serving
from .test_decisions import decisions_settings, drain

SESSION_ID = "5e551011-aaaa-4000-8000-000000000049"
FIRST = ("User: The kestrel-7 staging cluster keeps failing its deploys with a timeout.\n"
         "Assistant: The kestrel-7 deploy timeout comes from the health check waiting 30 s.\n"
         "User: Raise the kestrel-7 health check timeout to 120 s then.\n"
         "Assistant: Done: the kestrel-7 health check now waits 120 s and the deploy passed.\n")
SECOND = ("User: Also move the kestrel-7 nightly backup to 03:00.\n"
          "Assistant: The kestrel-7 nightly backup now runs at 03:00.\n")
FACT = "The kestrel-7 staging cluster's health check timeout is 120 s."
SUMMARY_1 = ("The user debugged failing kestrel-7 staging deploys; the health check timeout was raised "
             "from 30 s to 120 s and the deploy passed.")
PART_2 = "The kestrel-7 nightly backup was then moved to 03:00."
SUMMARY_2 = f"{SUMMARY_1} {PART_2}"

Turns = dict[str, str]  # label -> the episode's text, as the extraction prompt shows it
Answer = Callable[[Turns], dict[str, Any]]


def with_summary(turns: Turns) -> dict[str, Any]:
    """A fact from the turn that raised the timeout, and a summary of the delta's turns."""
    (label,) = [k for k, v in turns.items() if "Raise" in v] or [next(iter(turns))]
    backup = any("backup" in v for v in turns.values())
    return {"facts": [{"text": FACT, "kind": "fact", "turns": [label]}], "summary": PART_2 if backup else SUMMARY_1}


def without_summary(turns: Turns) -> dict[str, Any]:
    return {"facts": with_summary(turns)["facts"]}


class Model(ChatAPI):
    """Extraction requests answered by `extract(turns)`; decisions are ADD."""

    def __init__(self) -> None:
        super().__init__()
        self.extract: Answer = with_summary
        self.shown: list[str] = []  # each extraction request's user message

    def handle(self, path: str, body: dict[str, Any]) -> Any:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if "worth remembering" not in system:
            return answering({"action": "ADD", "ids": [], "reason": "unrelated"}, body)
        self.shown.append(user)
        turns = {r["label"]: r["text"] for r in (json.loads(x) for x in user.splitlines() if x.startswith("{"))}
        return answering(self.extract(turns), body)


@pytest.fixture(scope="module")
def model_server() -> Iterator[Model]:
    with serving(Model()) as api:
        yield api


@pytest.fixture
def model(model_server: Model) -> Iterator[Model]:
    model_server.reset()
    model_server.extract, model_server.shown = with_summary, []
    yield model_server


async def setup(database: Database, settings: Settings, url: str, **over: Any
                ) -> tuple[MemoryService, DecisionWorker, Settings]:
    s = decisions_settings(settings, url, **over)
    service = await MemoryService.open(database, s)
    return service, DecisionWorker(database.admin, service, provider_from(s), s), s


def transcript(text: str, session: str | None = SESSION_ID) -> Transcript:
    t = parse_text(text)
    t.session_id = session
    return t


async def capture(service: MemoryService, s: Settings, p: Principal, text: str = FIRST,
                  session: str | None = SESSION_ID) -> None:
    await Capturer(service, s, "cli").capture(p, transcript(text, session), key=f"cli:{session}")


async def summaries(database: Database) -> list[Any]:
    return await database.admin.fetch(
        "SELECT * FROM memories WHERE kind = 'session_summary' AND deleted_at IS NULL ORDER BY created_at")


async def derived_from(database: Database, memory: UUID) -> set[UUID]:
    return {r["to_id"] for r in await database.admin.fetch(
        "SELECT to_id FROM memory_edges WHERE from_id = $1 AND kind = 'derived_from'", memory)}


async def episodes(database: Database) -> list[UUID]:
    return [r["id"] for r in await database.admin.fetch(
        "SELECT id FROM memories WHERE kind = 'episode' AND deleted_at IS NULL ORDER BY occurred_at")]


async def test_one_pass_writes_the_facts_and_the_sessions_summary_linked_to_its_turns(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (job,) = await database.admin.fetch("SELECT * FROM memory_jobs WHERE kind = 'extract'")
    assert job["status"] == "done", job["last_error"]
    assert len(model.shown) == 1  # one model call for the facts and the summary
    (summary,) = await summaries(database)
    assert summary["content"] == SUMMARY_1 and summary["source"] == "extraction"
    assert await derived_from(database, summary["id"]) == set(await episodes(database)) == set(job["sources"])
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE content = $1", FACT) == 1
    result = json.loads(job["result"]) if isinstance(job["result"], str) else job["result"]
    assert result["summary"] == {"id": str(summary["id"]), "status": "created"}
    # A summary is no new version of anything: no decision job for it.
    assert await database.admin.fetchval("SELECT count(*) FROM memory_jobs WHERE memory_id = $1",
                                         summary["id"]) == 0
    (got,) = (await service.get(alice, [summary["id"]])).memories
    assert got.kind == "session_summary" and f"session:{SESSION_ID}" in got.tags


async def test_a_later_delta_updates_the_one_summary_and_keeps_its_history(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    await capture(service, s, alice, FIRST + SECOND)  # the session went on: a second delta
    await drain(worker)
    # The summary so far is not shown: a small model copies it into the facts.
    assert len(model.shown) == 2 and "kestrel-7 staging deploys" not in model.shown[1]
    (summary,) = await summaries(database)
    assert summary["content"] == SUMMARY_2 and summary["version"] == 2
    assert await derived_from(database, summary["id"]) == set(await episodes(database))
    assert len(await episodes(database)) == 6
    history = await service.history(alice, summary["id"])
    assert SUMMARY_1 in json.dumps(history.model_dump(mode="json"))
    # Retaken after a crash: the same summary, no second one, no new edge.
    edges = await derived_from(database, summary["id"])
    await database.admin.execute("UPDATE memory_jobs SET status = 'queued', result = NULL WHERE kind = 'extract'")
    await drain(worker)
    (again,) = await summaries(database)
    assert (again["id"], again["content"]) == (summary["id"], SUMMARY_2)
    assert await derived_from(database, summary["id"]) == edges


async def test_a_summary_the_user_pinned_keeps_its_text_and_gains_the_new_turns(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (summary,) = await summaries(database)
    await service.update(alice, summary["id"], pinned=True)
    await capture(service, s, alice, FIRST + SECOND)
    await drain(worker)
    assert [r["status"] for r in await database.admin.fetch(
        "SELECT status FROM memory_jobs WHERE kind = 'extract'")] == ["done", "done"]
    (kept,) = await summaries(database)
    assert kept["content"] == SUMMARY_1 and kept["pinned"]
    assert await derived_from(database, summary["id"]) == set(await episodes(database))


async def test_two_summaries_left_by_a_race_become_one(database: Database, settings: Settings, model: Model,
                                                       alice: Principal) -> None:
    """Two workers summed up the session's first deltas at once: the next delta keeps the oldest,
    derived from the turns of both, and forgets the other."""
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (first,) = await summaries(database)
    twin = (await service.write_many(alice, [
        WriteItem(content="A second summary of the kestrel-7 session, written at the same time.",
                             kind="session_summary", tags=[f"session:{SESSION_ID}"],
                             metadata={"session_id": SESSION_ID})])).memories[0].id
    await capture(service, s, alice, FIRST + SECOND)
    await drain(worker)
    (kept,) = await summaries(database)
    assert kept["id"] == first["id"] and all(t in kept["content"] for t in (SUMMARY_1, PART_2, "A second summary"))
    assert await database.admin.fetchval("SELECT deleted_at IS NOT NULL FROM memories WHERE id = $1", twin)
    assert await derived_from(database, kept["id"]) == set(await episodes(database))


@pytest.mark.parametrize("answer", [
    without_summary,
    lambda turns: {**without_summary(turns), "summary": None},
    lambda turns: {**without_summary(turns), "summary": ["not", "a", "text"]},
    lambda turns: {**without_summary(turns), "summary": "ok"},
], ids=["left out", "null", "a list", "too short"])
async def test_a_model_that_gives_no_summary_writes_none_and_its_facts_still_count(
        database: Database, settings: Settings, model: Model, alice: Principal, answer: Answer) -> None:
    model.extract = answer
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (job,) = await database.admin.fetch("SELECT * FROM memory_jobs WHERE kind = 'extract'")
    assert job["status"] == "done", job["last_error"]
    assert await summaries(database) == []
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE content = $1", FACT) == 1


async def test_without_a_model_nothing_is_summarised(database: Database, settings: Settings,
                                                     alice: Principal) -> None:
    service = await MemoryService.open(database, settings)
    assert settings.decisions_provider == "none"
    await capture(service, settings, alice)
    assert len(await episodes(database)) == 4
    assert await summaries(database) == []


async def test_a_transcript_without_a_session_gets_no_summary(database: Database, settings: Settings,
                                                              model: Model, alice: Principal) -> None:
    """A summary is of a session, one per session: a plain transcript without a session id has
    no session to keep one for (its facts are still extracted)."""
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice, session=None)
    await drain(worker)
    assert await summaries(database) == []
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE content = $1", FACT) == 1


async def test_search_where_both_answer_puts_the_summary_above_its_turns(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (summary,) = await summaries(database)
    turns = set(await episodes(database))
    for query in ("kestrel-7 deploy health check timeout", "why did the kestrel-7 staging deploys fail?"):
        hits = (await service.search(alice, query, limit=10)).hits
        ids = [h.id for h in hits]
        assert summary["id"] in ids and turns & set(ids), ids
        at = ids.index(summary["id"])
        assert at < min(ids.index(t) for t in turns if t in ids), [(h.kind, h.snippet[:40]) for h in hits]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # Turned off (no turn kept after it) the turns go below everything else that answered.
    s0 = s.model_copy(update={"summary_turns_kept": 0})
    service.settings = s0
    hits = (await service.search(alice, "kestrel-7 deploy health check timeout", limit=10)).hits
    kinds = [h.kind for h in hits if h.id == summary["id"] or h.id in turns]
    assert kinds[0] == "session_summary"
    others = [i for i, h in enumerate(hits) if h.id not in turns and h.id != summary["id"]]
    assert all(i < min(j for j, h in enumerate(hits) if h.id in turns) for i in others)


async def test_recall_shows_the_summary_for_the_turns_it_sums_up(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (summary,) = await summaries(database)
    found = await service.recall_search(alice, "What did we change on the kestrel-7 health check?", limit=20)
    assert set(found.summarised.values()) == {summary["id"]} and len(found.summarised) >= 2
    block = await prompt_context(service, s, alice, "What did we change on the kestrel-7 health check?",
                                 session_id="another-session")
    assert str(summary["id"]) in block
    assert not any(str(t) in block for t in await episodes(database)), block
    # The session's own summary is not recalled into it: its turns are in the context already.
    assert str(summary["id"]) not in await prompt_context(
        service, s, alice, "What did we change on the kestrel-7 health check?", session_id=SESSION_ID)


def test_the_summary_is_parsed_kindly_and_bounded() -> None:
    answer = extraction.parse_answer(json.dumps({"facts": [], "summary": "  The user set up   CI.  "}))
    assert (answer.facts, answer.summary) == ([], "The user set up CI.")
    assert extraction.parse_answer('{"facts": []}').summary is None
    assert extraction.parse_answer('{"facts": [], "summary": 3}').summary is None
    long = " ".join(f"Sentence {i} says what happened next in the session." for i in range(100))
    cut = cleaned(long)
    assert cut is not None and len(cut) <= MAX_PART_CHARS and cut.endswith("session.")
    assert "summary" in extraction.SYSTEM and len(extraction.SYSTEM) < 1600


def test_a_long_session_keeps_its_first_and_latest_deltas_summaries() -> None:
    parts = [{"job": j, "text": f"Delta {j} did one thing and then another thing on the kestrel-7 cluster."}
             for j in range(1, 61)]
    text, held, left_out = composed(parts[::-1])
    assert len(text) <= MAX_SUMMARY_CHARS and text.startswith("Delta 1 did") and text.endswith(parts[-1]["text"])
    assert " … Delta " in text and held[0]["job"] == 1 and left_out == 60 - len(held)
    # Kept in metadata are the parts the text holds; the next delta adds to them.
    again, _, more = composed([*held, {"job": 61, "text": "Delta 61 ended it."}], left_out)
    assert again.startswith("Delta 1 did") and again.endswith(" Delta 61 ended it.") and more >= left_out
    assert composed(parts[:2]) == (f"{parts[0]['text']} {parts[1]['text']}", parts[:2], 0)


def test_one_summary_per_session_even_in_the_same_words() -> None:
    text, kind = "The user greeted the assistant.", "session_summary"
    assert content_hash(text, kind, {"session_id": "a"}) != content_hash(text, kind, {"session_id": "b"})
    assert content_hash(text, kind, {"session_id": "a"}) == content_hash(text, kind, {"session_id": "a"})


def hit(kind: str, score: float) -> SearchHit:
    i = uuid4()
    return SearchHit(id=i, uri=f"memory://{i}", title=None, snippet=kind, kind=kind,  # type: ignore[arg-type]
                     scope=ScopeInfo.of(None, None), occurred_at=datetime.now(UTC), age="now", score=score)


def test_the_rule_summary_first_some_turns_after_it_the_rest_last() -> None:
    t1, other, t2, t3, summary, t4 = hits = [hit("episode", 0.9), hit("fact", 0.8), hit("episode", 0.7),
                                             hit("episode", 0.6), hit("session_summary", 0.5), hit("episode", 0.4)]
    sources = {summary.id: {t1.id, t2.id, t3.id, uuid4()}}
    out = summaries_first(hits, sources, kept=2)
    assert [h.id for h in out] == [summary.id, t1.id, other.id, t2.id, t4.id, t3.id]
    assert [h.score for h in out] == [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    assert summaries_first(hits, {}, kept=2) is hits  # no summary: untouched
    assert [h.id for h in summaries_first(hits, sources, kept=0)] == [summary.id, other.id, t4.id, t1.id, t2.id,
                                                                       t3.id]


async def test_two_sessions_summed_up_alike_are_two_sessions_not_versions(service) -> None:
    """A session's summary is what happened then, as a turn is: a later one saying much the same
    replaces nothing, is listed as related but never as an earlier version, and search leaves it in
    its place."""
    from .conftest import principal

    p = principal()
    text = "The user moved the staging cluster to kestrel-7 and fixed the flaky deploy test."
    first = await service.write(p, text, kind="session_summary", metadata={"session_id": "s-1"})
    second = await service.write(p, text.replace("fixed", "repaired"), kind="session_summary",
                                 metadata={"session_id": "s-2"})
    assert first.memory.id in [r.id for r in second.related]
    assert not any(r.earlier_version for r in second.related)
    # Nor is either an earlier version of a note saying the same: a fact restates a session, it
    # does not replace it.
    note = await service.write(p, text.replace("fixed", "repaired") + " (noted)")
    assert {r.id for r in note.related} & {first.memory.id, second.memory.id}
    assert not any(r.earlier_version for r in note.related)
