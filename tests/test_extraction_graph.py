"""Extraction uses the graph (issue 48 item 4, issue 49 items 6 and 8): a fact is derived_from its
source turns (an edge written with the fact), never a replacement of them; the model's `about` and
`key` go to the write, so a newer value of a one-at-a-time attribute replaces the older by
construction; a key the service refuses costs the fact its key, never the fact. Against a local
chat-completions server through the real `openai` SDK (tests/chat_api.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import pytest

from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.transcripts import parse_text
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import extracted_about, extraction, provider_from, subject_rules
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.graph.names import owned
from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI, answering, serving
from .test_decisions import decisions_settings, drain

SESSION = ("User: I switched my editor to Helix last month.\n"
           "Assistant: Noted, Helix it is.\n"
           "User: We decided to deploy the billing API on Fly.io.\n"
           "Assistant: Fly.io for the billing API, then.\n")
HELIX = "The user's editor is Helix."
FLY = "The team decided to deploy the billing API on Fly.io."
DANA = "Dana Whitfield prefers Helix too."

Turns = dict[str, str]  # label -> the episode's text, as the extraction prompt shows it


def turn(turns: Turns, words: str) -> str:
    (label,) = [label for label, text in turns.items() if words in text]
    return label


def helix_and_fly(turns: Turns) -> dict[str, Any]:
    """Helix: a preference about the user, keyed; Fly.io: a decision, without about or key (an
    answer of the older shape). Each from two turns: the user's and the reply to it."""
    return {"facts": [
        {"text": HELIX, "kind": "preference", "about": ["the user"], "key": "editor",
         "turns": [turn(turns, "Helix last month"), turn(turns, "Helix it is")]},
        {"text": FLY, "kind": "decision", "turns": [turn(turns, "We decided"), turn(turns, "Fly.io for")]}]}


def restates_its_turns(new: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
    """A decision model that takes the turns a fact was read from for earlier versions of it:
    UPDATE of every turn shown that says what the new fact says."""
    word = "Helix" if "Helix" in new else "Fly.io"
    ids = [label for label, text in candidates if word in text and text.startswith(("User:", "Assistant:"))]
    return {"action": "UPDATE" if ids else "ADD", "ids": ids, "reason": "the same thing said again"}


def adds(new: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
    return {"action": "ADD", "ids": [], "reason": "unrelated"}


class Model(ChatAPI):
    """Extraction requests answered by `extract(turns)`, decisions by `decide(new, candidates)`."""

    def __init__(self) -> None:
        super().__init__()
        self.extract: Callable[[Turns], dict[str, Any]] = helix_and_fly
        self.decide: Callable[[str, list[tuple[str, str]]], dict[str, Any]] = adds

    def handle(self, path: str, body: dict[str, Any]) -> Any:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        records = [json.loads(line) for line in user.splitlines() if line.startswith("{")]
        if "worth remembering" in system:
            answer = self.extract({r["label"]: r["text"] for r in records})
        else:
            new, _, existing = user.partition("EXISTING memories:")
            (text,) = [json.loads(line)["text"] for line in new.splitlines() if line.startswith("{")]
            answer = self.decide(text, [(json.loads(line)["label"], json.loads(line)["text"])
                                        for line in existing.splitlines() if line.startswith("{")])
        return answering(answer, body)


@pytest.fixture(scope="module")
def model_server() -> Iterator[Model]:
    with serving(Model()) as api:
        yield api


@pytest.fixture
def model(model_server: Model) -> Iterator[Model]:
    model_server.reset()
    model_server.extract, model_server.decide = helix_and_fly, adds
    yield model_server


async def setup(database: Database, settings: Settings, url: str, **over: Any
                ) -> tuple[MemoryService, DecisionWorker, Settings]:
    s = decisions_settings(settings, url, **over)
    service = await MemoryService.open(database, s)
    return service, DecisionWorker(database.admin, service, provider_from(s), s), s


async def capture(service: MemoryService, s: Settings, p: Principal, text: str = SESSION,
                  key: str = "cli:graph") -> None:
    await Capturer(service, s, "cli").capture(p, parse_text(text), key=key)


async def the_job(database: Database) -> Any:
    (job,) = await database.admin.fetch("SELECT * FROM memory_jobs WHERE kind = 'extract'")
    return job


async def extracted(database: Database, settings: Settings, model: Model, p: Principal) -> tuple[MemoryService, Any]:
    """The session captured for `p` and its extraction drained by a worker: the service and the
    extract job, done."""
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, p)
    await drain(worker)
    job = await the_job(database)
    assert job["status"] == "done", job["last_error"]
    return service, job


async def memory(database: Database, text: str) -> Any:
    (row,) = await database.admin.fetch("SELECT * FROM memories WHERE content = $1 AND deleted_at IS NULL", text)
    return row


def metadata(row: Any) -> dict[str, Any]:
    return row["metadata"] if isinstance(row["metadata"], dict) else json.loads(row["metadata"])


async def edges(database: Database) -> list[tuple[UUID, str, UUID, str]]:
    return [tuple(r) for r in await database.admin.fetch(
        "SELECT from_id, kind, to_id, source FROM memory_edges ORDER BY from_id, to_id")]


def shown(memory: Any) -> list[tuple[str, UUID, str]]:
    """A memory's edges as memory_get shows them: (kind, the other memory, direction), sorted."""
    edges = [e if isinstance(e, dict) else e.model_dump() for e in memory.edges or []]
    return sorted((e["kind"], UUID(str(e["memory"])), e["direction"]) for e in edges)


def episodes_of(job: Any, turns: Turns, *words: str) -> list[UUID]:
    return [job["sources"][int(turn(turns, w)) - 1] for w in words]


async def test_a_fact_is_derived_from_its_turns_which_stay_live(database: Database, settings: Settings,
                                                                 model: Model, alice: Principal) -> None:
    """Even a decision model that takes a fact's own turns for earlier versions of it never
    supersedes them: a fact's sources are not among its candidates. Each fact is derived_from each
    of its turns, and memory_get shows it; kinds, about and key are the model's."""
    model.decide = restates_its_turns
    service, job = await extracted(database, settings, model, alice)
    sources = await database.admin.fetch("SELECT id, content, superseded_by FROM memories WHERE id = ANY($1)",
                                         list(job["sources"]))
    assert len(sources) == 4 and all(r["superseded_by"] is None for r in sources), [dict(r) for r in sources]
    turns = {str(i): r for i, r in enumerate(
        [next(x["content"] for x in sources if x["id"] == e) for e in job["sources"]], 1)}
    helix, fly = await memory(database, HELIX), await memory(database, FLY)
    assert (helix["kind"], fly["kind"]) == ("preference", "decision")
    assert await edges(database) == sorted(
        [(helix["id"], "derived_from", e, "model") for e in episodes_of(job, turns, "Helix last", "Helix it is")]
        + [(fly["id"], "derived_from", e, "model") for e in episodes_of(job, turns, "We decided", "Fly.io for")])
    got = {m.id: m for m in (await service.get(alice, [helix["id"], fly["id"]])).memories}
    assert shown(got[helix["id"]]) == sorted(
        ("derived_from", e, "out") for e in episodes_of(job, turns, "Helix last month", "Helix it is"))
    assert shown(got[fly["id"]]) == sorted(
        ("derived_from", e, "out") for e in episodes_of(job, turns, "We decided", "Fly.io for"))
    assert (got[helix["id"]].about, got[helix["id"]].key) == (["the user"], "editor")
    said = await database.admin.fetch("SELECT source FROM memory_entities WHERE memory_id = $1 AND role = 'about' "
                                      "UNION ALL SELECT source FROM memory_facts WHERE memory_id = $1", helix["id"])
    assert [r["source"] for r in said] == ["model", "model"]  # who gave the about and the key
    (source,) = (await service.get(alice, episodes_of(job, turns, "Helix last month"))).memories
    assert shown(source) == [("derived_from", helix["id"], "in")]


async def test_no_turn_of_its_own_session_is_replaced_by_a_fact_read_from_it(database: Database, settings: Settings,
                                                                                model: Model, alice: Principal) -> None:
    """The model labels a fact's turns loosely (the local model gave the turn before the one that
    said it): a fact read from a session restates what that session's turns said at their moment,
    so none of them is a candidate, labelled or not ("Assistant: Will do: no peanuts." was
    superseded by "The user is allergic to peanuts.")."""
    model.extract = lambda turns: {"facts": [{**f, "turns": f["turns"][:1]} for f in helix_and_fly(turns)["facts"]]}
    model.decide = restates_its_turns
    _, job = await extracted(database, settings, model, alice)
    turns = await database.admin.fetch("SELECT content, superseded_by FROM memories WHERE id = ANY($1)",
                                       list(job["sources"]))
    assert len(turns) == 4 and [r["content"] for r in turns if r["superseded_by"] is not None] == []
    helix = await memory(database, HELIX)
    assert len(await database.admin.fetch("SELECT 1 FROM memory_edges WHERE from_id = $1", helix["id"])) == 1


async def test_its_turns_stay_live_whatever_the_decision_model_says(database: Database, settings: Settings,
                                                                     model: Model, alice: Principal) -> None:
    """The same with answers of the older shape (no about, no key): before, the decision on a fact
    listed the turn it was read from as a candidate, and a model calling the fact a newer version
    of it superseded the user's own turn (it then ranked lower while the fact stayed live)."""
    model.extract = lambda turns: {"facts": [{"text": f["text"], "kind": f["kind"], "turns": f["turns"]}
                                             for f in helix_and_fly(turns)["facts"]]}
    model.decide = restates_its_turns
    _, job = await extracted(database, settings, model, alice)
    decided = await database.admin.fetch("SELECT result FROM memory_jobs WHERE kind = 'decide'")
    assert len(decided) == 2  # each fact was decided, by the model
    turns = await database.admin.fetch("SELECT content, superseded_by FROM memories WHERE id = ANY($1)",
                                       list(job["sources"]))
    assert [r["content"] for r in turns if r["superseded_by"] is not None] == []
    assert len(await edges(database)) == 4


async def test_a_newer_editor_replaces_the_stored_one_by_its_key(database: Database, settings: Settings,
                                                                  model: Model, alice: Principal) -> None:
    """The user's editor, keyed 'editor' by the model, replaces the editor stored before when the
    fact is written: by construction, with a decision model that never replaces anything."""
    service, worker, s = await setup(database, settings, model.url)
    vim = (await service.write(alice, "The user's editor is Vim.", kind="preference", about=["me"],
                               key="editor")).memory
    await drain(worker)
    await capture(service, s, alice)
    claimed = await worker.run_once()  # the extraction alone: no decision has run for its facts yet
    assert claimed and (await the_job(database))["status"] == "done"
    helix = await memory(database, HELIX)
    assert (await memory(database, "The user's editor is Vim."))["superseded_by"] == helix["id"]
    assert await database.admin.fetchval("SELECT count(*) FROM memory_jobs WHERE kind = 'decide' AND status = 'done' "
                                         "AND memory_id = $1", helix["id"]) == 0
    await drain(worker)
    (old,) = (await service.get(alice, [vim.id])).memories
    assert old.superseded_by == helix["id"] and old.key == "editor"


async def test_a_key_the_service_refuses_costs_the_key_not_the_fact(database: Database, settings: Settings,
                                                                     model: Model, alice: Principal) -> None:
    """A key that names no attribute ("the") is left out and the fact written with its about; an
    about that is no name is left out, and the fact keeps its key about the name its text holds;
    a fact answered in full is written as answered."""
    def answer(turns: Turns) -> dict[str, Any]:
        label = turn(turns, "Helix last month")
        return {"facts": [
            {"text": HELIX, "kind": "preference", "about": ["the user"], "key": "the", "turns": [label]},
            {"text": DANA, "kind": "fact", "about": ["   "], "key": "editor", "turns": [label]},
            {"text": FLY, "kind": "decision", "about": "the billing API", "key": "deploy target",
             "turns": [turn(turns, "We decided")]}]}

    model.extract = answer
    service, job = await extracted(database, settings, model, alice)
    result = json.loads(job["result"]) if isinstance(job["result"], str) else job["result"]
    assert result["facts"] == 3, result
    assert [(x["fact"], x["left_out"]) for x in result["left_out"]] == [(0, "key"), (1, "about")]
    assert "names no attribute" in result["left_out"][0]["reason"]
    rows = [await memory(database, t) for t in (HELIX, DANA, FLY)]
    got = {m.id: m for m in (await service.get(alice, [r["id"] for r in rows])).memories}
    helix, dana, fly = (got[r["id"]] for r in rows)
    assert (helix.about, helix.key) == (["the user"], None)
    assert (dana.about, dana.key) == (["Dana Whitfield"], "editor")
    assert (fly.about, fly.key) == (["the billing API"], "deploy target")
    assert all(shown(m) for m in (helix, dana, fly))


async def test_a_retaken_job_adds_no_fact_and_no_edge(database: Database, settings: Settings, model: Model,
                                                       alice: Principal) -> None:
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    job = await the_job(database)
    before = await edges(database)
    assert len(before) == 4
    # The worker died after writing the facts, before the job was marked done: it is taken again.
    await database.admin.execute("UPDATE memory_jobs SET status = 'queued', result = NULL WHERE id = $1", job["id"])
    await drain(worker)
    assert (await the_job(database))["status"] == "done"
    assert await edges(database) == before
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE kind <> 'episode'") == 2


async def test_an_answer_without_about_or_key_still_works(database: Database, settings: Settings, model: Model,
                                                           alice: Principal) -> None:
    model.extract = lambda turns: {"facts": [{"text": HELIX, "kind": "preference",
                                              "turns": [turn(turns, "Helix last month")]}]}
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    helix = await memory(database, HELIX)
    (got,) = (await service.get(alice, [helix["id"]])).memories
    assert got.kind == "preference" and got.key is None and len(shown(got)) == 1


def test_the_prompt_names_each_kind_and_asks_about_and_key() -> None:
    """The kinds with their meanings (a preference is no decision), about and key, in few words:
    the model on this machine is a small one."""
    system = extraction.SYSTEM
    for words in ('"preference"', '"decision"', '"fact"', '"about"', '"key"', '"the user"'):
        assert words in system
    assert len(system) < 1600
    (fact,) = extraction.parse(json.dumps({"facts": [
        {"text": HELIX, "kind": "Preference", "about": "the user", "key": "editor", "turns": ["1"]}]}))
    assert (fact.kind, fact.about, fact.key) == ("preference", ["the user"], "editor")
    (old,) = extraction.parse('{"facts": [{"text": "x", "kind": "fact", "turns": ["1"]}]}')
    assert (old.about, old.key) == (None, None)


def test_the_worked_examples_are_answers_the_service_takes() -> None:
    """The worked examples shown before a delta (issue 49 item 8: the local model typed an editor a
    decision, and answered the attribute as the kind and the bare value as the text): each is an
    answer of the shape asked for, with each kind once, texts that name their subject, and keys the
    lexicon files under a known attribute; small talk gives no fact and no summary."""
    from mcp_memory.graph.keys import in_lexicon, key_of
    from mcp_memory.lexicon.english import ENGLISH

    (facts_q, facts_a), (talk_q, talk_a) = extraction.examples()
    answer = extraction.parse_answer(facts_a)
    assert sorted(f.kind for f in answer.facts) == ["decision", "fact", "fact", "preference"]
    for f in answer.facts:
        assert f.about and f.key and f.turns, f
        name = "user" if f.about == ["the user"] else f.about[0]
        assert name.lower() in f.text.lower(), f
        said = key_of(f.key, ENGLISH)
        assert said is not None and in_lexicon(said.attribute, ENGLISH), f.key
    assert answer.summary
    assert extraction.parse_answer(talk_a).facts == [] and extraction.parse_answer(talk_a).summary is None
    for question in (facts_q, talk_q):
        assert question.startswith("EXAMPLE turns") and question.endswith("Answer with the JSON object only.")


async def test_the_delta_is_asked_after_the_worked_examples(database: Database, settings: Settings,
                                                             model: Model, alice: Principal) -> None:
    """The examples go as earlier turns of the conversation, the delta last, as the only NEW turns."""
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice)
    await drain(worker)
    (asked,) = [r["body"]["messages"] for r in model.requests
                if "worth remembering" in r["body"]["messages"][0]["content"]]
    assert [m["role"] for m in asked] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in asked[1:5]] == [t for pair in extraction.examples() for t in pair]
    assert asked[-1]["content"].startswith("NEW turns:") and "Helix last month" in asked[-1]["content"]
    assert not any("Helix" in m["content"] for m in asked[1:5])
    assert (await memory(database, HELIX))["kind"] == "preference"


def test_a_possessive_names_whose_attribute_a_fact_states() -> None:
    """"Sven Olsen is Tomás's manager": the local model gave Sven (or Sven and Tomás) as its about,
    filing the manager as Sven's own. The possessive before the key, or the attribute's name, says
    whose it is; a cue of the attribute further on, a name after it, two owners, or a key the
    lexicon does not know (whether it holds one value at a time is a guess) say nothing."""
    from mcp_memory.lexicon.english import ENGLISH

    def owner(text: str, key: str) -> str | None:
        return extracted_about.possessor(text, key, ENGLISH)

    assert owner("Sven Olsen is Tomás's manager.", "manager") == "Tomás"
    assert owner("Greta Ibarra is Tomás Herrera's manager at Acme Robotics.", "manager") == "Tomás Herrera"
    assert owner("Greta Ibarra is Tomás Herrera's manager.", "boss") == "Tomás Herrera"  # the attribute's name
    assert owner("Greta Ibarra is Tomás Herrera's boss.", "manager") is None  # neither
    assert owner("The user's new manager will be Oscar Lindqvist.", "manager") == "the user's"
    assert owner("Keiko Tanaka's current home city is Kyoto.", "home city") == "Keiko Tanaka"
    assert owner("The user dropped MySQL; Falcon's database is PostgreSQL now.", "database") == "Falcon"
    for text, key in (("The user lives in Leeds.", "home city"), ("The user's friend lives in Lisbon.", "home city"),
                      ("The user's brother Sam lives in Denver.", "home city"),
                      ("Priya Raman, the user's friend, lives in Lisbon.", "home city"),
                      ("Dana's manager is Tomás's manager.", "manager"),
                      ("Marcus Bell, the user's friend, leads the Falcon team.", "friend")):  # own words
        assert owner(text, key) is None, text
    # A typographic apostrophe is the lexicon's possessive too; the guard reads the same owners.
    assert owner("Sven Olsen is Tomás’s manager.", "manager") == "Tomás"
    assert subject_rules.owners("Sven Olsen is Tomás’s manager and Dana's mentor.") == [("tomás",), ("dana",)]
    assert subject_rules.owners("Adaeze Halvorsen's ThinkPad T14 and Mom's birthday") == [("adaeze", "halvorsen"),
                                                                                          ("mom",)]


def test_owners_are_read_in_one_pass_whatever_the_text() -> None:
    """A hostile text of thousands of possessives: the owners read in time linear in its length
    (each shorter run retried would be quadratic: seconds at this size), and a lexicon with no
    possessive ending (Portuguese says "o gerente do Kwame") finds none."""
    hostile = "Ab's " * 20_000 + "manager"
    assert len(list(owned(hostile))) == 20_000
    assert extracted_about.possessor(hostile, "manager", ENGLISH) is None  # read within its first 2,000 characters
    assert list(owned("O gerente do Kwame é a Greta.", PORTUGUESE)) == []


async def test_a_new_manager_said_first_by_name_replaces_the_old_one(database: Database, settings: Settings,
                                                                      model: Model, alice: Principal) -> None:
    """Two sessions, each naming Tomás's manager first by the manager's name, about as the local
    model gave it (the manager; then both): the newer replaces the older by its key, no decision
    model needed, and what the model said is kept in the fact's metadata."""
    def managers(turns: Turns) -> dict[str, Any]:
        if any("Greta" in t for t in turns.values()):
            return {"facts": [{"text": "Greta Ibarra is Tomás's manager.", "kind": "fact",
                               "about": ["Greta Ibarra"], "key": "manager", "turns": ["1"]}]}
        return {"facts": [{"text": "Sven Olsen is Tomás's manager.", "kind": "fact",
                           "about": ["Sven Olsen", "Tomás"], "key": "manager", "turns": ["1"]}]}

    model.extract = managers
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice, "User: Tomás reports to Greta Ibarra.\nAssistant: Noted.\n", key="cli:greta")
    await drain(worker)
    await capture(service, s, alice, "User: Tomás has a new manager, Sven Olsen.\nAssistant: Noted.\n",
                  key="cli:sven")
    await drain(worker)
    greta = await memory(database, "Greta Ibarra is Tomás's manager.")
    sven = await memory(database, "Sven Olsen is Tomás's manager.")
    assert greta["superseded_by"] == sven["id"]
    meta = metadata(sven)
    assert meta["about_said"] == ["Sven Olsen", "Tomás"]
    (got,) = (await service.get(alice, [sven["id"]])).memories
    assert got.about == ["Tomás"] and got.key == "manager"


async def test_a_fact_about_an_attribute_and_no_one_else_is_the_users(database: Database, settings: Settings,
                                                                        model: Model, alice: Principal) -> None:
    """The local model gave "Standup is scheduled for 10:00 this week." as about "standup", keyed
    "schedule": an entity called standup, and the user's 9:30 standup stayed current. A one-word
    about that is an attribute of the lexicon, in a text about no one else, is the user's value of
    that attribute, and replaces the older one by its key; never an attribute whose values are
    people ("The manager approved the budget." is about a manager), nor where the text is someone's."""
    def routine(turns: Turns) -> dict[str, Any]:
        if any("9:30" in t for t in turns.values()):
            return {"facts": [{"text": "The user's daily standup is at 9:30.", "kind": "fact", "about": ["the user"],
                               "key": "standup time", "turns": ["1"]}]}
        return {"facts": [
            {"text": "Standup is scheduled for 10:00 this week.", "kind": "decision", "about": ["standup"],
             "key": "schedule", "turns": ["1"]},
            {"text": "The manager approved the budget.", "kind": "decision", "about": ["manager"],
             "key": "approval", "turns": ["1"]},
            {"text": "Greta Ibarra's standup is at 11:00.", "kind": "fact", "about": ["standup"],
             "key": "schedule", "turns": ["1"]}]}

    model.extract = routine
    service, worker, s = await setup(database, settings, model.url)
    await capture(service, s, alice, "User: My daily standup is at 9:30.\nAssistant: Noted.\n", key="cli:one")
    await drain(worker)
    await capture(service, s, alice, "User: Standup moved to 10:00 this week; the manager approved the budget; "
                  "Greta's standup is at 11:00.\nAssistant: Noted.\n", key="cli:two")
    await drain(worker)
    old = await memory(database, "The user's daily standup is at 9:30.")
    new = await memory(database, "Standup is scheduled for 10:00 this week.")
    assert old["superseded_by"] == new["id"]
    assert metadata(new)["about_said"] == ["standup"] and metadata(new)["key_said"] == "schedule"
    (got,) = (await service.get(alice, [new["id"]])).memories
    assert got.about == ["the user"] and got.key == "standup time"
    for text in ("The manager approved the budget.", "Greta Ibarra's standup is at 11:00."):
        assert "about_said" not in metadata(await memory(database, text)), text


async def test_a_fact_is_typed_by_the_attribute_it_states_not_by_the_models_reading(
        database: Database, settings: Settings, model: Model, alice: Principal) -> None:
    """A small model types by the sentence's shape: "switched" reads as a decision, a tool the user
    names as a fact. The attribute stated says what it is; a key of no agreed kind, or of its own
    words, keeps the model's."""
    def mistyped(turns: Turns) -> dict[str, Any]:
        label = turn(turns, "Helix last month")
        return {"facts": [
            {"text": "The user switched editors to Helix.", "kind": "decision", "about": ["the user"],
             "key": "editor", "turns": [label]},
            {"text": "Dana Whitfield works at Globex.", "kind": "preference", "about": ["Dana Whitfield"],
             "key": "employer", "turns": [label]},
            {"text": FLY, "kind": "decision", "about": ["billing API"], "key": "hosting", "turns": [label]},
            {"text": "The billing API is written in Go.", "kind": "decision", "about": ["billing API"],
             "key": "language", "turns": [label]}]}

    model.extract = mistyped
    await extracted(database, settings, model, alice)
    said = {}
    for text, kind in [("The user switched editors to Helix.", "preference"),
                       ("Dana Whitfield works at Globex.", "fact"),
                       (FLY, "decision"), ("The billing API is written in Go.", "decision")]:
        row = await memory(database, text)
        assert row["kind"] == kind, text
        said[text] = metadata(row).get("kind_said")
    assert said == {"The user switched editors to Helix.": "decision", "Dana Whitfield works at Globex.": "preference",
                    FLY: None, "The billing API is written in Go.": None}
