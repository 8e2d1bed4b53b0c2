"""Our own check on what a model may replace (issue 27 item 11): the scripted endpoint gives the
bad answers Qwen2.5-Coder-1.5B gave on the knowledge-update sets, and the store keeps its true
facts. With `decisions_guard` off (the code before the guard) the same answers replace them."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions import guard, provider_from, subject_rules, wording
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.limits import MAX_CONTENT_CHARS
from mcp_memory.models import Principal
from mcp_memory.retrieval import values
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI
from .http_server import SERVE
from .test_decisions import decisions_settings, drain, jobs_of, state

UPDATE_1 = {"action": "UPDATE", "ids": ["1"], "reason": "newer"}


async def decide(database: Database, settings: Settings, chat: ChatAPI, p: Principal, old: str, new: str,
                 answer: dict[str, Any], *, on: bool = True, **over: Any) -> tuple[Any, Any, dict[str, Any]]:
    first, second, job, asked = await written_in_turn(database, settings, chat, p, old, new, ("json", answer),
                                                      decisions_guard=on, **over)
    assert asked, "the model was not asked: the test would prove nothing"
    return first, second, result_of(job)


async def written_in_turn(database: Database, settings: Settings, chat: ChatAPI, p: Principal, old: str, new: str,
                          *steps: tuple[str, Any], old_as: dict[str, Any] | None = None,
                          new_as: dict[str, Any] | None = None, **over: Any
                          ) -> tuple[Any, Any, Any, list[dict[str, Any]]]:
    """`old` written and decided, then `new` decided by the scripted `steps`: both memories' rows
    after it, the new one's job, and the bodies of the requests its decision sent. `old_as`,
    `new_as`: what else each write passes (`about`, `key`, `occurred_at`)."""
    s = decisions_settings(settings, chat.url, **over)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    first = (await service.write(p, old, **(old_as or {}))).memory
    await drain(worker)
    second = (await service.write(p, new, **(new_as or {}))).memory
    chat.take()
    chat.script(*steps)
    await drain(worker)
    asked = [r["body"] for r in chat.take()]
    job = (await jobs_of(database))[-1]
    return await state(service, p, first.id), await state(service, p, second.id), job, asked


def result_of(job: Any) -> dict[str, Any]:
    return job["result"] if isinstance(job["result"], dict) else json.loads(job["result"])


@pytest.mark.parametrize(("old", "new"), [
    ("Bianca's birthday is on 5 January.", "Caleb's birthday is on 25 May."),
    ("Caleb has moved over to Emacs.", "Bianca has moved over to Emacs."),
    ("Odalys Pellegrini left Leipzig behind for Berlin.", "Katarina Nascimento visited Berlin for a conference."),
    # What two names own are two people's facts, whoever else both name.
    ("Yasmin Haddad is Leopold Kuznetsov's skip-level and direct manager.",
     "Adaeze Halvorsen's manager: Yasmin Haddad."),
    ("Adaeze Halvorsen's ThinkPad T14 died; loaner Dell XPS 13 for now.",
     "Update - Priya Mwangi's ThinkPad T14 died; loaner ThinkPad X1 Carbon for now."),
])
@pytest.mark.parametrize("on", [True, False])
async def test_a_replace_about_someone_else_is_refused(database: Database, settings: Settings, chat: ChatAPI,
                                                       alice: Principal, old: str, new: str, on: bool) -> None:
    first, _, result = await decide(database, settings, chat, alice, old, new, UPDATE_1, on=on)
    if not on:  # the code before the guard: the true fact is gone from view
        assert first["superseded_by"] is not None
        return
    assert first["superseded_by"] is None and first["deleted_at"] is None
    assert result["applied"] == [] and result["proposed"] == [str(first["id"])]
    assert result["skipped"][str(first["id"])].startswith("guard: about ")


async def test_another_attribute_of_the_same_person_is_a_suggestion(database: Database, db_url: str,
                                                                    settings: Settings, chat: ChatAPI,
                                                                    alice: Principal) -> None:
    first, _, result = await decide(database, settings, chat, alice, "Arjun is allergic to penicillin.",
                                    "Arjun uses Neovim every day now.", UPDATE_1)
    assert first["superseded_by"] is None
    assert list(result["suggested"]) == [str(first["id"])]
    assert "another attribute" in result["suggested"][str(first["id"])]
    # The user sees it in the queue.
    listed = jobs_list(db_url, alice)
    assert f"suggested, not applied: {first['id']}" in listed.stdout, listed.stdout + listed.stderr


async def test_a_delete_about_someone_else_forgets_nothing(database: Database, settings: Settings, chat: ChatAPI,
                                                           alice: Principal) -> None:
    first, _, _ = await decide(database, settings, chat, alice, "Bianca's birthday is on 5 January.",
                               "Caleb's birthday is on 25 May.", {"action": "DELETE", "ids": ["1"], "reason": "x"})
    assert first["deleted_at"] is None


async def test_a_duplicate_of_someone_else_does_not_hide_the_new_memory(database: Database, settings: Settings,
                                                                        chat: ChatAPI, alice: Principal) -> None:
    _, second, result = await decide(database, settings, chat, alice, "Caleb has moved over to Emacs.",
                                     "Bianca has moved over to Emacs.",
                                     {"action": "NONE", "ids": ["1"], "reason": "same"})
    assert second["superseded_by"] is None and result["applied"] == []


@pytest.mark.parametrize(("old", "new"), [
    ("Alice lives in Oslo, Norway.", "Alice lives in Lisbon, Portugal now."),
    ("Odalys Pellegrini has settled down in Quebec City.", "After Quebec City, Odalys Pellegrini ended up in Leipzig."),
    ("Kwame Larsen reports to Hana Dubois, the manager of the group.",
     "Diego Yilmaz took over from Hana Dubois as Kwame Larsen's manager."),
    ("I do cycling on weekends.", "User gave up cycling and took up yoga."),
    ("Hiroshi Lindqvist's manager: Rohan Mehta.", "Hiroshi's new manager is Helena Sousa (Rohan Mehta moved on)."),
])
async def test_a_right_update_still_applies(database: Database, settings: Settings, chat: ChatAPI,
                                            alice: Principal, old: str, new: str) -> None:
    first, second, result = await decide(database, settings, chat, alice, old, new, UPDATE_1)
    assert first["superseded_by"] == second["id"], result


@pytest.mark.parametrize(("keyed", "look"), [("both", "Yes"), ("both", "No"), ("neither", "Yes"),
                                             ("at one moment", "Yes")])
async def test_one_attribute_keyed_in_both_is_one_fact_however_unlike_their_texts(
        database: Database, settings: Settings, chat: ChatAPI, alice: Principal, keyed: str, look: str) -> None:
    """Under a local model's floor the two texts (masked .44 alike) are another attribute, a
    suggestion; keyed in both by the model as one attribute that holds one value, the later one
    replaces the earlier once the model's second look confirms it (its keys say which attribute a
    memory touches, not that it states a newer value). Two facts true since one moment (one
    turn's) are no versions of each other, however keyed."""
    at = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    old_as: dict[str, Any] = {"about": ["the user's tests"], "key": "testing framework", "occurred_at": at}
    new_as: dict[str, Any] = {"about": ["the user's team"], "key": "testing",
                              "occurred_at": at if keyed == "at one moment" else at + timedelta(days=9)}
    if keyed == "neither":
        old_as, new_as = {"occurred_at": at}, {"occurred_at": at + timedelta(days=9)}
    first, second, job, asked = await written_in_turn(
        database, settings, chat, alice, "The user's tests use unittest.", "The tests are switching to pytest.",
        ("json", UPDATE_1), ("text", look), old_as=old_as, new_as=new_as,
        decisions_guard_floor=guard.LOCAL_MODEL_FLOOR, decisions_second_look=True)
    result = result_of(job)
    if keyed == "both" and look == "Yes":
        assert first["superseded_by"] == second["id"], result
        assert len(asked) == 2, "the second look was not asked"
    else:
        assert first["superseded_by"] is None and list(result["suggested"]) == [str(first["id"])], result
        assert len(asked) == (2 if keyed == "both" else 1)


async def test_a_higher_floor_leaves_a_doubtful_update_to_the_user(database: Database, settings: Settings,
                                                                    chat: ChatAPI, alice: Principal) -> None:
    """MCP_MEMORY_DECISIONS_GUARD_FLOOR trades a small model's right updates for fewer wrong ones:
    the update the default floor applies (test above) is only suggested under a strict one."""
    first, _, result = await decide(database, settings, chat, alice, "Alice lives in Oslo, Norway.",
                                    "Alice lives in Lisbon, Portugal now.", UPDATE_1, decisions_guard_floor=0.95)
    assert first["superseded_by"] is None and result["applied"] == []
    assert "another attribute" in result["suggested"][str(first["id"])]
    assert "< 0.95" in result["suggested"][str(first["id"])]


@pytest.mark.parametrize(("base_url", "floor"), [
    ("http://127.0.0.1:8181/v1", guard.LOCAL_MODEL_FLOOR), ("http://localhost:11434/v1", guard.LOCAL_MODEL_FLOOR),
    ("http://[::1]:8000/v1", guard.LOCAL_MODEL_FLOOR), ("https://api.openai.com/v1", guard.ATTRIBUTE_FLOOR),
    (None, guard.ATTRIBUTE_FLOOR),
])
def test_a_model_on_this_machine_gets_the_stricter_floor(settings: Settings, base_url: str | None,
                                                         floor: float) -> None:
    """Small models run locally and replace whatever they are shown; the floor is theirs unless set."""
    s = settings.model_copy(update={"decisions_provider": "openai-compatible", "decisions_base_url": base_url,
                                    "decisions_model": "m", "decisions_guard_floor": None})
    assert guard.floor_for(s) == floor
    assert guard.floor_for(s.model_copy(update={"decisions_guard_floor": 0.3})) == 0.3
    assert guard.floor_for(s.model_copy(update={"decisions_provider": "sampling"})) == guard.ATTRIBUTE_FLOOR


async def test_a_local_model_s_doubtful_update_waits_for_the_user(database: Database, settings: Settings,
                                                                   chat: ChatAPI, alice: Principal) -> None:
    """Unset, the floor of a model on loopback is the stricter one: an update our check judges
    below it (applied at the floor of other models, test above) is only suggested."""
    first, _, result = await decide(database, settings, chat, alice, "Thandiwe Nascimento's editor is Vim.",
                                    "Thandiwe Nascimento switched over to IntelliJ.", UPDATE_1,
                                    decisions_guard_floor=None)
    assert first["superseded_by"] is None and result["applied"] == []
    assert f"< {guard.LOCAL_MODEL_FLOOR:.2f}" in result["suggested"][str(first["id"])]


async def test_the_place_a_note_opens_on_is_the_value_it_left_not_whom_it_is_about() -> None:
    """"After Quebec City, ..." opens on the value the note replaces: its subject is the person after
    it, and the value named beside a new one makes it the version of "settled down in Quebec City"
    at any floor. Read as about "Quebec City", it was another subject's note."""
    [judged] = await guard.judge("After Quebec City, Odalys Pellegrini ended up in Leipzig.",
                                 ["Odalys Pellegrini has settled down in Quebec City."], None, 0.95)
    assert judged.other_subject is None and judged.names_value and judged.earlier


def jobs_list(db_url: str, p: Principal) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_LOG_LEVEL": "WARNING"}
    return subprocess.run([SERVE, "jobs", "list", "--user", p.user_id, "--agent", str(p.agent_id),
                           "--project", str(p.project_id)], env=env, capture_output=True, text=True, timeout=60)


class Down:
    async def documents_or_none(self, texts: Any, batch: int = 32) -> None:
        return None


async def test_without_the_embedder_a_same_subject_replace_is_only_suggested() -> None:
    verdict = await guard.check("Arjun moved to Oslo.", [(1, "Arjun lives in Rome."), (2, "Caleb lives in Rome.")],
                                Down())
    assert verdict.allowed == [] and list(verdict.suggested) == [1] and list(verdict.refused) == [2]


@pytest.mark.parametrize(("old", "new"), [
    # Speaking of the user ("my", "me") does not make a note about a named person the user's.
    ("Eilidh Haverkamp laughed at my terrible pun during dinner.",
     "Soren Moreau laughed at my terrible pun during dinner."),
    ("Ines Olawale gave me a lift in their a Mazda MX-5.", "Jarek Olawale gave me a lift in their a Mazda MX-5."),
    # Someone in a named person's life is not that person.
    ("Kenji Chaudhry's phone number is +351 856 661 8209.",
     "Kenji Chaudhry's brother has the phone number +351 557 328 5623."),
    ("1:1 notes: Omar Kim's mentor prefers the IntelliJ IDEA editor.", "Omar Kim prefers Nano as an editor."),
    # A channel opening a note is its subject.
    ("#eng-core is busy at the moment because of an incident.",
     "#platform-help is busy at the moment because of an incident."),
])
async def test_two_people_alike_are_two_subjects(old: str, new: str) -> None:
    """Before, both counted as notes about the user, and the masked texts matched word for word."""
    verdict = await guard.check(new, [(1, old)], Down())
    assert list(verdict.refused) == [1] and verdict.allowed == [] and not verdict.suggested, verdict


async def test_a_notes_label_is_no_value_it_replaces() -> None:
    """Both "1:1 notes:": the "1:1" once counted as a value the new note named beside a new one."""
    judged = await guard.judge("1:1 notes: Oisin Esposito moved desks to Austin.",
                               ["1:1 notes: Oisin Esposito owns the Osprey roadmap."], Down())
    assert judged[0].other_subject is None and not judged[0].names_value, judged


async def test_hostile_text_does_not_stall_the_worker() -> None:
    """A memory at the content limit made of short names once took the guard 37 s (a pass per
    name, and the words before every name counted again); a decision worker must not stall."""
    hostile = "Ab:" * (MAX_CONTENT_CHARS // 3)
    started = time.monotonic()  # the guard's work is synchronous: no cancel scope could stop it
    verdict = await guard.check(hostile, [(1, hostile[:-3]), (2, "Ab is here.")], Down())
    assert time.monotonic() - started < 10  # ~0.2 s now; the bound is for a stall, not a speed target
    assert 1 in verdict.suggested  # the same subject, its attribute unjudged without the embedder


async def test_a_run_of_possessives_does_not_stall_the_worker() -> None:
    """Every possessive of one long run of capitalised words once counted as a name near the
    start, and two such memories had their names compared pairwise: 12 s for a pair."""
    mine, theirs = "Ab's " * (MAX_CONTENT_CHARS // 5), "Cd's " * (MAX_CONTENT_CHARS // 5)
    started = time.monotonic()
    verdict = await guard.check(mine, [(1, theirs)], Down())
    assert time.monotonic() - started < 1  # ~0.05 s now
    assert list(verdict.refused) == [1]  # Ab's and Cd's are two owners


async def test_the_same_relation_of_one_person_is_one_subject() -> None:
    verdict = await guard.check("Bastien Iwasaki's sister moved to Turin.",
                                [(1, "Bastien Iwasaki's sister lives in Bologna at present.")], Down())
    assert list(verdict.suggested) == [1] and not verdict.refused, verdict  # judged on its attribute


async def test_a_place_both_name_is_no_subject(database: Database, settings: Settings) -> None:
    """"ETH Zurich" among the first words of both once passed for their common subject, and with
    the place masked the two said the same thing: now the subject is unconfirmed, a suggestion."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Emeka Gunawardena studied at ETH Zurich.",
                                [(1, "Quinn Ostrowski studied at ETH Zurich.")], service.vectors)
    assert verdict.allowed == [] and list(verdict.suggested) == [1], verdict


async def test_a_first_name_is_the_full_name_it_opens(database: Database, settings: Settings) -> None:
    """"Nilufar left Growth for Payments" is about "Nilufar Pereira" (a note's opening word is
    no subject, but a name is) and names the squad she left: the update is allowed."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("From standup: Nilufar left Growth for Payments.",
                                [(1, "Heard today: Nilufar Pereira joined Growth squad."),
                                 (2, "Nilufar Pereira speaks Romanian natively.")], service.vectors)
    assert verdict.allowed == [1] and list(verdict.suggested) == [2], verdict


@pytest.mark.parametrize("merged", [True, False])
async def test_whom_a_memory_is_about_is_read_from_the_graph(database: Database, settings: Settings, chat: ChatAPI,
                                                             alice: Principal, merged: bool) -> None:
    """The guard asks the stored mentions whom a memory is about where the writer said it. A note
    naming no one, said to be about "Bob", whom a person merged into "Robert Smith" in the
    console, replaces Robert's old book (the text alone reads the book as its subject and refuses);
    unmerged, Bob is someone else, and nothing is replaced."""
    s = decisions_settings(settings, chat.url)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    old = (await service.write(alice, "Robert Smith is reading Dune on the train.")).memory
    await service.write(alice, "Had green tea with Bob today.")
    await drain(worker)
    if merged:
        robert = (await service.entities.profile(alice, "Robert Smith")).entity.id
        bob = (await service.entities.profile(alice, "Bob")).entity.id
        await service.entities.merge(alice, robert, bob, reason="Bob is Robert")
    new = (await service.write(alice, "Is reading Neuromancer on the train now.", about=["Bob"])).memory
    chat.take()
    chat.script(("json", UPDATE_1))
    await drain(worker)
    asked = chat.take()
    assert asked and str(old.content) in json.dumps(asked[0]["body"]), "the model was not shown the old memory"
    result = result_of((await jobs_of(database))[-1])
    first = await state(service, alice, old.id)
    if merged:
        assert first["superseded_by"] == new.id and str(old.id) in result["applied"], result
    else:
        assert first["superseded_by"] is None and result["applied"] == [], result


async def test_the_graph_and_the_text_disagreeing_on_who_leave_it_to_the_user() -> None:
    """Subjects a model said, apart where the text finds one person ("Nilufar" and "Nilufar
    Pereira" kept apart, as an ambiguous first name is): a suggestion, never applied. Subjects the
    rules alone read are the text's own reading: the text judges ("Alice lives in Oslo" is read as
    about Oslo, a sentence's opening word being unsure)."""
    from uuid import uuid4

    from mcp_memory.graph.subjects import Subjects
    nilufar, pereira, growth = uuid4(), uuid4(), uuid4()
    new, old = "Nilufar left Growth for Payments.", "Nilufar Pereira joined Growth squad."
    said = {1: Subjects(said={pereira: "Nilufar Pereira"}, read={}, named=frozenset({pereira, growth})),
            2: Subjects(said={nilufar: "Nilufar"}, read={}, named=frozenset({nilufar, growth}))}
    verdict = await guard.check(new, [(1, old)], Down(), stored=said, new_id=2)  # type: ignore[arg-type]
    assert list(verdict.suggested) == [1] and "not about the same subject" in verdict.suggested[1], verdict
    read = {1: Subjects(said={}, read={pereira: "Nilufar Pereira"}, named=frozenset({pereira, growth})),
            2: Subjects(said={}, read={growth: "Growth"}, named=frozenset({nilufar, growth}))}
    for stored in (read, None):  # the same person by the text, the value named: applied
        verdict = await guard.check(new, [(1, old)], Down(), stored=stored, new_id=2)  # type: ignore[arg-type]
        assert verdict.allowed == [1], verdict


async def test_a_description_said_about_is_no_name_and_a_person_of_the_users_is() -> None:
    """The local model said "the user's services" about "The user's services are written in Java"
    and "the user's team" about the Kotlin rewrite: two entities to the graph, so the right replace
    waited as a suggestion. A description of something of the user's is no name: the text judges
    (the same subject, the old value named beside the new). "my sister" and "my brother" are two
    people of the user's, whom only the graph tells apart: never applied."""
    from uuid import uuid4

    from mcp_memory.graph.subjects import Subjects
    services, team, user = uuid4(), uuid4(), uuid4()
    new = "The user's team is rewriting services in Kotlin instead of Java."
    old = "The user's services are written in Java."
    said = {1: Subjects(said={services: "the user's services"}, read={user: "the user"}, named=frozenset({services})),
            2: Subjects(said={team: "the user's team"}, read={user: "the user"}, named=frozenset({team}))}
    verdict = await guard.check(new, [(1, old)], Down(), stored=said, new_id=2)  # type: ignore[arg-type]
    assert verdict.allowed == [1], verdict
    sister, brother = uuid4(), uuid4()
    new, old = "My sister moved to Porto instead of Lisbon.", "My sister lives in Lisbon."
    said = {1: Subjects(said={brother: "my brother"}, read={}, named=frozenset({brother})),
            2: Subjects(said={sister: "my sister"}, read={}, named=frozenset({sister}))}
    verdict = await guard.check(new, [(1, old)], Down(), stored=said, new_id=2)  # type: ignore[arg-type]
    assert verdict.allowed == [] and 1 in (verdict.refused | verdict.suggested), verdict


async def test_a_friend_named_beside_the_user_is_refused_as_the_users_fact() -> None:
    """"Priya Raman, the user's friend, lives in Lisbon." names the user, whom the old memory is
    about, so by the graph the two share a subject; the text says the new one is about someone in
    the user's life: refused, not left to the embedder's closeness (here, no embedder: a
    suggestion before)."""
    from uuid import uuid4

    from mcp_memory.graph.subjects import Subjects
    priya, user = uuid4(), uuid4()
    new, old = "Priya Raman, the user's friend, lives in Lisbon.", "The user lives in Bristol now."
    said = {1: Subjects(said={user: "the user"}, read={}, named=frozenset({user})),
            2: Subjects(said={priya: "Priya Raman"}, read={}, named=frozenset({priya, user}))}
    verdict = await guard.check(new, [(1, old)], Down(), stored=said, new_id=2)  # type: ignore[arg-type]
    assert verdict.allowed == [] and "someone in their life" in verdict.refused[1], verdict


async def test_the_graphs_subject_is_what_is_masked_and_its_keys_tell_attributes_apart() -> None:
    """Where the graph has both memories about one subject, its names are the subject, not the
    text's reading: "The user dropped Jenkins; ..." reads as about Jenkins, which masked the value
    the change names beside the new one (the local model's right replace waited as a suggestion).
    Two of the lexicon's attributes keyed on one entity are never one fact: "Greta Ibarra is Tomás's
    manager at Acme Robotics" names Acme Robotics beside a new name but states his manager, not his
    employer (a wrong replace once Acme Robotics was no longer masked). A key in a model's own words
    ("change") tells nothing apart."""
    from uuid import uuid4

    from mcp_memory.graph.subjects import Subjects
    falcon, user = uuid4(), uuid4()
    new, old = "The user dropped Jenkins; Falcon's CI is GitHub Actions now.", "CI runs on Jenkins."
    about = {1: Subjects(said={falcon: "Falcon"}, read={}, named=frozenset({falcon}), keyed={falcon: "tool"}),
             2: Subjects(said={falcon: "Falcon"}, read={user: "the user"}, named=frozenset({falcon, user}),
                         keyed={falcon: "chang"})}
    assert (await guard.check(new, [(1, old)], Down(), stored=about, new_id=2)).allowed == [1]  # type: ignore[arg-type]
    verdict = await guard.check(new, [(1, old)], Down())  # type: ignore[arg-type]
    assert verdict.allowed == [], verdict  # the text's reading alone: not confirmed

    tomas, greta = uuid4(), uuid4()
    new, old = "Greta Ibarra is Tomás's manager at Acme Robotics.", "Tomás works for Acme Robotics."
    keyed = {1: Subjects(said={tomas: "Tomás Herrera"}, read={}, named=frozenset({tomas}),
                         keyed={tomas: "employer"}),
             2: Subjects(said={tomas: "Tomás Herrera"}, read={}, named=frozenset({tomas, greta}),
                         keyed={tomas: "manager"})}
    verdict = await guard.check(new, [(1, old)], Down(), stored=keyed, new_id=2)  # type: ignore[arg-type]
    assert verdict.allowed == [] and "states employer, the new memory manager" in verdict.suggested[1], verdict
    own_words = {**keyed, 2: Subjects(said={tomas: "Tomás Herrera"}, read={}, named=frozenset({tomas, greta}),
                                      keyed={tomas: "new rol"})}
    assert (await guard.check(new, [(1, old)], Down(), stored=own_words, new_id=2)).allowed == [1]  # type: ignore[arg-type]


@pytest.mark.parametrize(("new", "old", "ends", "opens"), [
    ("The scheduling pipeline exposes a GraphQL endpoint.", "The webhooks pipeline exposes a GraphQL endpoint.",
     True, False),
    ("Prod for the rosters pipeline sits in us-west-2.", "Prod for the geo pipeline sits in us-west-2.", True, False),
    ("Calendar: team vole check-in, 10:00.", "Calendar: team moraine check-in, 10:00.", True, False),
    ("Kasimir replaced the MacBook Pro 14 with a ThinkPad X1 Carbon.",
     "Priya replaced the MacBook Pro 14 with a ThinkPad T14.", False, True),
    ("Mom moved to Lisbon last spring.", "Dad moved to Porto last spring.", False, True),
    # Only the opening changed: it may be the value itself, an update.
    ("Rust is my main language.", "Python is my main language.", False, False),
    ("Rust is my main language now.", "Python is my main language.", False, False),
    # The value changed, the words around it did not: a version.
    ("The media worker uses Postgres version 16.", "The media worker uses Postgres version 14.", False, False),
    # A label that differs opens no other name.
    ("From standup: Nilufar left Growth for Payments.", "Heard today: Nilufar left Growth for Payments.",
     False, False),
    # Worded differently, or the same: the words say nothing.
    ("Coupons API failed over to eu-central-1 for good.", "Prod for the coupons API sits in eu-central-1.",
     False, False),
    ("The webhooks pipeline exposes a GraphQL endpoint.", "The webhooks pipeline exposes a GraphQL endpoint.",
     False, False),
    # A channel is a value as a region is.
    ("Questions for team Cinder -> #platform-help.", "Questions for team Vole -> #platform-help.", True, False),
])
def test_the_same_words_about_something_else(new: str, old: str, ends: bool, opens: bool) -> None:
    assert wording.ends_on_its_value(new, old) is ends
    assert wording.opens_on_another_name(new, old) is opens


async def test_the_same_fact_of_another_thing_is_only_a_suggestion(database: Database, settings: Settings) -> None:
    """Nothing names a person, so no name tells the two pipelines apart, and with nothing masked
    the two texts are one sentence: a model replacing one by the other (as Qwen did) was let
    through. A version naming the value it replaces, and named subjects, are judged as before."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("The scheduling pipeline exposes a GraphQL endpoint.",
                                [(1, "The webhooks pipeline exposes a GraphQL endpoint.")], service.vectors)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, verdict
    for new, old in [("The identity API is now deployed in the eu-west-1 region instead of ca-central-1.",
                      "The identity API is deployed to region ca-central-1."),
                     ("Amara Petrov took over from Yuki Yilmaz and now leads the Unity team.",
                      "Yuki Yilmaz leads the Unity team.")]:
        verdict = await guard.check(new, [(1, old)], service.vectors)
        assert verdict.allowed == [1], (new, verdict)
    verdict = await guard.check("Kasimir replaced the MacBook Pro 14 with a ThinkPad X1 Carbon.",
                                [(1, "Priya replaced the MacBook Pro 14 with a ThinkPad T14.")], service.vectors)
    assert verdict.allowed == [] and 1 in verdict.suggested, verdict


@pytest.mark.parametrize(("new", "old", "another"), [
    ("Storage for the wallets service: MySQL 8.", "Storage for the carts service: SQLite.", True),
    ("Moved the invoices API off eu-west-1; it runs in eu-north-1.",
     "Moved the uploads API off us-west-2; it runs in eu-west-1.", True),
    ("Escalations for the coupons API go to Priti Shah.", "Escalations for the payouts API go to Priti Shah.", True),
    # In that place a number, a version or a name is the value that changed.
    ("Sprint length for the Glacier team: four weeks.", "Sprint length for the Glacier team: three weeks.", False),
    ("The search gateway is deployed in the eu-central-1 region.",
     "The search gateway is deployed in the eu-north-1 region.", False),
    ("The shipping worker is written in the Ruby language.", "The shipping worker is written in the Go language.",
     False),
    # A possessive is the same word; worded differently, the words say nothing.
    ("The Onyx team standup is now at 8:00 am instead of 8:15 am.", "The Onyx team's standup is at 8:15 am.", False),
    ("User traded tennis for yoga.", "User plays tennis twice a week.", False),
])
def test_another_plain_word_before_a_shared_one_names_another_thing(new: str, old: str, another: bool) -> None:
    assert wording.qualifies_another_thing(new, old) is another


@pytest.mark.parametrize(("new", "old", "another"), [
    ("Cleaned up stale feature flags in payouts worker.", "Cleaned up stale feature flags in team Foxglove.", True),
    ("Infra note - badges API hosted in eu-north-1.", "Infra note - pricing worker hosted in eu-north-1.", True),
    ("Moved the thumbnails worker off eu-north-1; it runs in ca-central-1.",
     "Moved the badges API off eu-central-1; it runs in ca-central-1.", True),
    # Two words in common are enough when every other difference is a value.
    ("Infra note - audit service hosted in eu-central-1.", "Infra note - wallets API hosted in ca-central-1.", True),
    ("Cut-over done: pricing worker now in us-west-2.", "Cut-over done: sessions pipeline now in us-east-1.", True),
    # A capitalised word after a common noun both hold names another one of its kind; after a
    # verb it is the value.
    ("Cleaned up stale feature flags in team Lapwing.", "Cleaned up stale feature flags in team Foxglove.", True),
    ("Questions for team Ibis -> #kestrel-ops.", "Questions for team Skua -> #oncall.", True),  # and its value
    ("The team uses Linear.", "The team uses Jira.", False),
    ("The repo default branch: Main.", "The repo default branch: Trunk.", False),
    # One word against one at the end, a channel, a number: the value that changed.
    ("Lockfile is from bun.", "Lockfile is from pnpm.", False),
    ("Questions for team Dunlin -> #kestrel-ops.", "Questions for team Dunlin -> #incidents-live.", False),
    ("The ledger worker has 24 replicas in production.", "The ledger worker has 21 replicas in production.", False),
    # Worded differently besides: a paraphrase of one fact, not another thing.
    ("The Opal team moved from Slack channel #crew to #general.", "The Opal team uses the Slack channel #crew.",
     False),
    ("FYI: Ignatius off auth pager, now storage.", "FYI: Ignatius off edge network pager, now auth.", False),
])
def test_another_name_in_a_word_or_two_names_another_thing(new: str, old: str, another: bool) -> None:
    assert wording.names_another_thing(new, old) is another


async def test_another_thing_of_the_same_kind_is_only_a_suggestion(database: Database, settings: Settings) -> None:
    """A model replaced one service's storage by another's (Qwen did, on ops): nothing names a
    person, and masked the two texts are one sentence but for the service and its value. Named,
    the same change is a person's value ("added to storage on-call" / "added to streaming
    on-call") and is judged as before."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Storage for the wallets service: MySQL 8.",
                                [(1, "Storage for the carts service: SQLite.")], service.vectors)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, verdict
    verdict = await guard.check("Heard today: Jovan Ostrowski added to streaming on-call.",
                                [(1, "Heard today: Jovan Ostrowski added to storage on-call.")], service.vectors)
    assert verdict.allowed == [1], verdict


async def test_a_name_further_on_is_a_value_and_the_user_owns_their_things(database: Database,
                                                                            settings: Settings) -> None:
    """A person named at the end is the value, so the thing named first is still the subject
    (Qwen replaced the coupons API's escalations by the payouts API's), and a thing named in a word
    or two is another thing (Qwen replaced team Foxglove's clean-up by the payouts worker's); in a
    note about the user the word before a shared one is the user's value, not another thing:
    "coffee" replaces "tea" (the rule had kept that update from being applied). A name in two
    notes about the user is no subject to mask either: masked, "I switched from VS Code to Zed"
    named no value that "I use VS Code" holds, and was kept a suggestion at the local floor."""
    service = await MemoryService.open(database, settings)
    for new, old in [("Escalations for the coupons API go to Priti Shah.",
                      "Escalations for the payouts API go to Priti Shah."),
                     ("Cleaned up stale feature flags in payouts worker.",
                      "Cleaned up stale feature flags in team Foxglove.")]:
        verdict = await guard.check(new, [(1, old)], service.vectors)
        assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, (new, verdict)
    for new, old in [("I drink coffee every morning.", "I drink tea every morning."),
                     ("My team uses the wallets service daily.", "My team uses the carts service daily."),
                     # The name the user leaves is the value replaced, not their subject to mask.
                     ("I switched from VS Code to Zed.", "I use VS Code for everything."),
                     ("User replaced the Volvo XC40 with a Kia Niro.", "I drive a Volvo XC40.")]:
        verdict = await guard.check(new, [(1, old)], service.vectors, floor=guard.LOCAL_MODEL_FLOOR)
        assert verdict.allowed == [1], (new, verdict)


def test_a_label_that_uses_up_the_first_words_hides_no_name() -> None:
    """"1:1 notes: Congrats to Matteo Mwangi: ..." names no one in its first five words; Qwen
    replaced Maelle Ivanova's title by it. Matteo's own earlier title is still his."""
    new = "1:1 notes: Congrats to Matteo Mwangi: new title Principal Engineer."
    assert subject_rules.other_subject(new, "Congrats to Maelle Ivanova: new title Director of Engineering.")
    assert subject_rules.other_subject("Congrats to Maelle Ivanova: new title Director of Engineering.", new)
    assert subject_rules.other_subject(new, "Matteo Mwangi works as a Staff Engineer.") is None


def test_a_shared_number_is_no_shared_thing() -> None:
    """A note naming no one shares only a time with a named team's note: no common subject. A
    pair of words naming a thing still is one ("badges worker")."""
    assert not subject_rules.same_subject("The all-hands is at 10:15 these days.", "Team Wharf syncs daily at 10:15.")
    assert subject_rules.same_subject("The badges worker moved to eu-west-1.", "Team Wharf owns the badges worker.")


def test_long_texts_are_not_aligned_word_by_word() -> None:
    """Aligning these two memories at the content limit took 339 s; a fact is said in a sentence."""
    words = "alpha beta gamma delta x1 y2".split()
    long_a = " ".join(words[i * 7 % 6] for i in range(MAX_CONTENT_CHARS // 6))
    long_b = " ".join(words[i * 5 % 6] for i in range(MAX_CONTENT_CHARS // 6))
    started = time.monotonic()
    assert not wording.ends_on_its_value(long_a, long_b) and not wording.opens_on_another_name(long_a, long_b)
    assert not wording.qualifies_another_thing(long_a, long_b) and not wording.names_another_thing(long_a, long_b)
    assert time.monotonic() - started < 1


async def test_a_one_word_label_names_no_one(database: Database, settings: Settings) -> None:
    """"Calendar:" opening two teams' notes made them one subject, and "Rescheduled:" another
    subject than the team's call it moves (what Qwen replaced, and what it should, on ops)."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Calendar: team Whimbrel check-in, 15:30.",
                                [(1, "Calendar: team Wharf check-in, 13:45.")], service.vectors)
    assert verdict.allowed == [] and 1 in verdict.refused, verdict
    verdict = await guard.check("Rescheduled: team Heron sync is 11:00 from Monday.",
                                [(1, "Team Heron daily call: 14:00 sharp.")], service.vectors)
    assert verdict.allowed == [1], verdict


async def test_a_verb_before_an_acronym_names_no_one(database: Database, settings: Settings) -> None:
    """"Rotated TLS" opening two notes read as a full name, so both were about that someone and
    Qwen's replace of one team's rotation by a worker's was applied. A name ending the same way
    ("Ahmed Saleh") is still a name."""
    assert subject_rules.names("Rotated TLS certs for tokens worker.") == [("tls",)]
    assert subject_rules.names("Ahmed Saleh rotated the TLS certs.") == [("ahmed", "saleh"), ("tls",)]
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Rotated TLS certs for tokens worker.", [(1, "Rotated TLS certs for team Bittern.")],
                                service.vectors, floor=guard.LOCAL_MODEL_FLOOR)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, verdict


def test_a_name_after_a_label_and_nothing_else_is_its_value() -> None:
    """"Billing worker maintainer: Oskar Lund." is about the billing worker: read as a note about
    Oskar Lund, Qwen's replace of it by "New maintainer of the billing API is Oskar Lund." passed
    for one person's fact. A name the note goes on about after a label is its subject still."""
    assert subject_rules.names("Billing worker maintainer: Oskar Lund.") == [("billing",)]
    assert ("oskar", "lund") in subject_rules.names("Billing worker maintainer: Oskar Lund.", anywhere=True)
    assert subject_rules.names("Adaeze Halvorsen's manager: Yasmin Haddad.") == [("adaeze", "halvorsen")]
    assert subject_rules.names("Heard today: Nilufar Pereira joined Growth squad.")[0] == ("nilufar", "pereira")


@pytest.mark.parametrize(("new", "old", "another"), [
    # Another of one kind.
    ("New maintainer of the reviews API is Aurelio Conti.",
     "Oskar Lund rotated off the billing API; Aurelio Conti took it.", True),
    ("Owner of the pricing gateway: the Pulsar team owns it.", "The Pulsar team owns the analytics gateway.", True),
    # Another kind.
    ("Audit worker storage migration to MySQL 8 landed.", "Audit pipeline swapped ClickHouse for MySQL 8.", True),
    ("New maintainer of the billing API is Oskar Lund.", "Billing worker maintainer: Oskar Lund.", True),
    # After a verb opening the note, and where it opens again after its label.
    ("Moved the orders API off eu-west-1; it runs in us-east-1.",
     "Moved the orders service off ca-central-1; it runs in us-east-1.", True),
    ("Infra note - search API hosted in ap-south-1.", "Infra note - search worker hosted in eu-north-1.", True),
    # The same thing, said again or beside another; a verb is no kind, a name or a number no qualifier.
    ("The refunds pipeline moved prod to eu-west-1.", "Prod for the refunds pipeline sits in us-east-1.", False),
    ("Moved the refunds pipeline off us-east-1; the billing pipeline stays.",
     "Prod for the refunds pipeline sits in us-east-1.", False),
    ("Backend moved to Java.", "Backend runs Kotlin.", False),
    ("The team left the Amsterdam office.", "The team moved into the Dublin office.", False),
    ("The cluster runs 24 nodes now.", "The cluster runs on the 16 nodes we bought.", False),
    ("The reviews API " + "is fine and " * 40 + "done.", "The billing API is fine.", False),  # no fact is this long
    ("Daily driver: ThinkPad X1 Carbon.", "Daily driver: Framework 13.", False),  # a name after the label
])
def test_another_thing_of_a_kind_in_sentences_of_any_shape(new: str, old: str, another: bool) -> None:
    assert wording.another_thing_of_a_kind(new, old) is another


async def test_another_thing_of_a_kind_about_no_one_is_only_a_suggestion(database: Database,
                                                                          settings: Settings) -> None:
    """One team's gateway replaced by another's (the adversary's, on the generator's set) is a
    suggestion; about a person, the word qualifying is their value and the update applies."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Owner of the pricing gateway: the Pulsar team owns it.",
                                [(1, "The Pulsar team owns the analytics gateway.")], service.vectors)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, verdict
    # (Masked similarity 0.45: past the wording, only the floor decides; here the default one.)
    verdict = await guard.check("FYI: Tariq Pereira swapped onto the streaming rotation.",
                                [(1, "Tariq Pereira swapped onto the auth rotation.")], service.vectors)
    assert verdict.allowed == [1], verdict


@pytest.mark.parametrize(("new", "old", "another"), [
    ("Consent pipeline lives in ca-central-1.", "Consent pipeline maintainer: Yaw Boateng.", True),
    ("someone joined the company in 2016.", "someone joined Billing squad.", True),
    ("someone has 14 engineers.", "someone celebrated its 14th release.", True),  # the subject masked, as judged
    # One kind in common, a number after a word with a capital being a name, or no value at all.
    ("someone upgraded to an iPhone 15.", "someone uses a Sony Xperia 10.", False),
    ("Standup moved to 9:30.", "Standup is at 9 every day.", False),
    ("The backend is Kotlin.", "The backend moved to Java 21.", False),
    ("Sprint length: four weeks.", "Sprint length: 3 weeks.", False),
])
def test_values_of_another_kind_say_another_attribute(new: str, old: str, another: bool) -> None:
    assert values.values_of_another_kind(new, old) is another


async def test_values_of_another_kind_are_only_a_suggestion(database: Database, settings: Settings) -> None:
    """Qwen replaced a pipeline's maintainer by its region (ops): one subject, close once masked,
    but a person is no region. A value the new memory names beside the old one ("moved from
    ca-central-1 to ...") still replaces, whatever kinds the rest are."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Consent pipeline lives in ca-central-1.",
                                [(1, "Consent pipeline maintainer: Yaw Boateng.")], service.vectors)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_VALUES}"}, verdict
    verdict = await guard.check("Consent pipeline moved from ca-central-1 to Hetzner.",
                                [(1, "Consent pipeline lives in ca-central-1.")], service.vectors)
    assert verdict.allowed == [1], verdict


@pytest.mark.parametrize(("text", "bare"), [
    ("Rotated TLS certs for team Upland (noted again) (noted again).", "Rotated TLS certs for team Upland."),
    ("Bumped dependencies across maps pipeline (per Slack)", "Bumped dependencies across maps pipeline"),
    ("I live in Berlin (Kreuzberg) now.", "I live in Berlin (Kreuzberg) now."),  # not closing the note
    pytest.param("(a)" * 200, "(a)" * 200, id="longer than any note the rules read"),
])
def test_a_remark_closing_a_note_is_left_out(text: str, bare: str) -> None:
    assert wording.without_aside(text) == bare


async def test_a_closing_remark_or_a_things_acronym_hides_no_other_thing(database: Database,
                                                                         settings: Settings) -> None:
    """Qwen replaced one team's clean-up by a pipeline's, the older note said again "(noted
    again)", and one API's region by its pipeline's, "Webhooks API" read as someone's full name
    (ops, whole set): both about something else, so suggestions. The API's own new region still
    replaces its old one."""
    service = await MemoryService.open(database, settings)
    for new, old in [("Cleaned up stale feature flags in team Foxglove.",
                      "Cleaned up stale feature flags in feeds pipeline (noted again)."),
                     ("Webhooks pipeline traffic is served out of eu-north-1.",
                      "Webhooks API traffic is served out of eu-north-1.")]:
        verdict = await guard.check(new, [(1, old)], service.vectors, floor=guard.LOCAL_MODEL_FLOOR)
        assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, (new, verdict)
    verdict = await guard.check("Webhooks API traffic moved to us-east-1.",
                                [(1, "Webhooks API traffic is served out of eu-north-1.")], service.vectors,
                                floor=guard.LOCAL_MODEL_FLOOR)
    assert verdict.allowed == [1], verdict


@pytest.mark.parametrize(("new", "old", "another"), [
    ("The checkout worker's analytics replica uses Postgres version 17.", "The checkout worker uses Postgres 13.",
     True),
    ("The Kestrel team's alerts go to a separate Slack channel, #dev-alerts.",
     "The Kestrel team's Slack channel is #squad.", True),
    ("The Indigo team owns the profile pipeline's client library.", "The profile pipeline is owned by the Raven team.",
     True),
    # The part said in the other note too, or no part at all: a contraction, a verb after it.
    ("The Kelvin team now uses a sprint length of one week.", "The Kelvin team's sprint length is two weeks.", False),
    ("Slack channel of the Sierra team: #hq.", "The Sierra team's Slack channel is #crew.", False),
    ("It's Lisbon for the payments API now.", "The payments API runs in Porto.", False),
    ("Let's say the payments API runs in Lisbon.", "The payments API runs in Porto.", False),
    ("The team's moving the payments API to Lisbon.", "The payments API runs in Porto.", False),
    ("The team's now in Lisbon.", "The team is in Porto.", False),
    ("Mom drives a Kia now.", "Mom's car is a Volvo.", False),  # a name owns an attribute
    ("The orders API's disaster-recovery copy is in us-east-1.", "The orders API runs in us-east-2.", True),
])
def test_a_part_of_a_thing_is_another_subject(new: str, old: str, another: bool) -> None:
    assert wording.names_another_part(new, old) is another


async def test_a_part_of_a_thing_is_only_a_suggestion(database: Database, settings: Settings) -> None:
    """The adversary replaced a worker's database by its analytics replica's (dataset): one subject by
    the names, close once masked, but a part of the worker is not the worker. The worker's own
    part said again still replaces, and so does a person's possessive, which names their attribute."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("The checkout worker's analytics replica uses Postgres version 17.",
                                [(1, "The checkout worker uses Postgres 13.")], service.vectors,
                                floor=guard.LOCAL_MODEL_FLOOR)
    assert verdict.allowed == [] and verdict.suggested == {1: f"guard: {guard.OTHER_THING}"}, verdict
    for new, old in [("The Kelvin team now uses a sprint length of one week instead of two weeks.",
                      "The Kelvin team's sprint length is two weeks."),
                     ("Priya Fischer's manager is Aisha Esposito.",
                      "Priya Fischer reports to Zara Okafor, the manager of the group.")]:
        verdict = await guard.check(new, [(1, old)], service.vectors)  # the wording passes it; the floor decides
        assert verdict.allowed == [1], (new, verdict)


def test_a_note_opening_on_what_it_tells_of_a_name_is_about_that_name() -> None:
    assert subject_rules.names("Office for the Atlas team: based in Zurich.") == [("atlas",)]
    assert subject_rules.names("Sprint length for the Glacier team: four weeks.") == [("glacier",)]
    assert subject_rules.names("Job title of Chen Ortiz: Staff Engineer.")[0] == ("chen", "ortiz")
    # Opening on a name: it is one ("Nilufar"), whatever follows it.
    assert subject_rules.names("Nilufar left Growth for Payments.")[0] == ("nilufar",)


async def test_another_team_s_note_of_that_shape_is_refused(database: Database, settings: Settings) -> None:
    """"Office for the Argon team: ..." passed for a version of "Office for the Atlas team: ..."
    (their opening word, read as a name, was the subject of both), while the Delta team's own
    office in other words was another subject (dataset)."""
    service = await MemoryService.open(database, settings)
    verdict = await guard.check("Office for the Argon team: based in Dublin.",
                                [(1, "Office for the Atlas team: based in Zurich.")], service.vectors,
                                floor=guard.LOCAL_MODEL_FLOOR)
    assert verdict.allowed == [] and list(verdict.refused) == [1], verdict
    verdict = await guard.check("Office for the Delta team: based in Kyoto.",
                                [(1, "The Delta team is based at the Copenhagen office.")], service.vectors,
                                floor=guard.LOCAL_MODEL_FLOOR)
    assert verdict.allowed == [1], verdict
