"""A turn of a conversation the question's named speaker took no part in is taken down
(retrieval/conversations.py): in a store of two conversations, the other one's turn that shares the
question's words comes after the answer in her own; a store of one conversation, a name no turn is
spoken by, and a forget preview rank as without it."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.retrieval import statement
from mcp_memory.service import MemoryService

search_module = importlib.import_module("mcp_memory.retrieval.search")  # the package's `search` is its function

# Maria talks with John; the answer to a question about her travels is John's turn, which names
# nobody. Days later James talks with Priya about his own travels, in the question's words.
MARIA = [
    "Maria: I just got back from a solo trip last month.",
    "John: Spain and England, your favourite European countries, right?",
    "Maria: Yes, it was wonderful.", "John: I should travel more too.",
]
JAMES = [
    "James: I have visited two countries, Italy and Turkey.", "Priya: Which countries do you like best?",
    "James: Italy, for the food.", "Priya: I love travelling too.",
]
QUESTION = "What European countries has Maria visited?"


async def _talk(service: MemoryService, p: Principal, turns: list[str], days_ago: int, **kw: Any) -> list[Any]:
    start = datetime.now(UTC) - timedelta(days=days_ago)
    return [(await service.write(p, t, kind="episode", occurred_at=start + timedelta(minutes=i), **kw)).memory
            for i, t in enumerate(turns)]


def _with(database: Database, service: MemoryService, settings: Settings, **changes: Any) -> MemoryService:
    """A service with its own repository (its own minute of remembered counts)."""
    return MemoryService(MemoryRepository(database.pool), settings.model_copy(update=changes), service.vectors)


async def _ranked(service: MemoryService, p: Principal, question: str = QUESTION,
                  f: MemoryFilter | None = None) -> list[tuple[str, Any]]:
    result = await service.search(p, question, f, limit=10, explain=True)
    return [(h.snippet, h.explain.get("conversation")) for h in result.hits]


async def test_another_conversations_turn_comes_after_the_answer_in_hers(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    await _talk(service, alice, MARIA, days_ago=20)
    await _talk(service, alice, JAMES, days_ago=5)
    await service.write(alice, "European countries need a visa form for some visitors.")  # a note, not a turn
    on = await _ranked(_with(database, service, settings), alice)
    off = await _ranked(_with(database, service, settings, other_conversation=1.0), alice)
    answer, intruder = MARIA[1], JAMES[0]
    place = {s: i for i, (s, _) in enumerate(off)}
    assert place[intruder] < place[answer]  # without it, James's turn came first
    place_on = {s: i for i, (s, _) in enumerate(on)}
    assert place_on[answer] < place_on[intruder]
    factors = dict(on)
    # Each of James's conversation's turns is taken down by the factor; Maria's conversation's
    # turns (John's too) and the note are not.
    assert {factors[t] for t in JAMES if t in factors} == {settings.other_conversation}
    assert all(factors[t] is None for t in MARIA if t in factors)
    assert factors["European countries need a visa form for some visitors."] is None
    assert all(f is None for _, f in off)


async def test_a_question_naming_two_speakers_is_about_the_conversations_of_both(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    await _talk(service, alice, MARIA, days_ago=20)
    liv = ["John: Liv, I booked the flights to Spain.", "Liv: Great, England after that?"]
    await _talk(service, alice, liv, days_ago=8)
    searcher = _with(database, service, settings)
    # John speaks in both conversations: neither is another conversation of his.
    assert all(f is None for _, f in await _ranked(searcher, alice, "Which countries did John visit?"))
    both = dict(await _ranked(searcher, alice, "Which countries did John and Maria talk about?"))
    assert {both[t] for t in liv if t in both} == {settings.other_conversation}
    assert all(both[t] is None for t in MARIA if t in both)


async def test_her_conversations_turns_are_read_by_meaning_when_others_fill_the_walk(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """The vector list's first `search_candidates` of the whole scope are all James's turns, nearer
    the question than anything said in Maria's conversation: her conversation's turns are read by an
    exact sort of its own, so the answer there has a vector share; without speakers told apart (the
    factor off) it had none."""
    answer = "John: Spain and England, your favourite places, right?"
    await _talk(service, alice, ["Maria: I just got back from a solo trip last month.", answer,
                                 "Maria: Yes, it was wonderful."], days_ago=30)
    await _talk(service, alice, [f"James: Which European countries have I visited? {c}, sure."
                                 for c in ("Italy", "Turkey", "France", "Greece", "Austria", "Poland", "Spain",
                                           "Norway", "Croatia", "Portugal", "Belgium", "Ireland")], days_ago=5)
    narrow = {"search_candidates": 10}

    async def vector_rank(searcher: MemoryService) -> Any:
        hits = (await searcher.search(alice, QUESTION, limit=10, explain=True)).hits
        return next((h.explain["vector"] for h in hits if h.snippet == answer), None)

    assert await vector_rank(_with(database, service, settings, **narrow)) is not None
    assert await vector_rank(_with(database, service, settings, other_conversation=1.0, **narrow)) is None


async def test_under_a_filter_her_conversations_turns_are_read_by_meaning_and_checked_against_it(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """A window of her conversation is read by the time index alone and the filter checked on each
    turn (a tag's index entries ANDed with every window's cost 4.5 ms a window at a million): what
    the filter passes there has its vector share, what it does not is left out; a filter of other
    kinds than turns reads no window at all."""
    answer = "John: Spain and England, your favourite places, right?"
    untagged = "John: Spain again next year, and maybe England too?"
    await _talk(service, alice, ["Maria: I just got back from a solo trip last month.", answer],
                days_ago=30, tags=["travel"])
    await _talk(service, alice, [untagged], days_ago=30)
    await _talk(service, alice, [f"James: Which European countries have I visited? {c}, sure."
                                 for c in ("Italy", "Turkey", "France", "Greece", "Austria", "Poland", "Spain",
                                           "Norway", "Croatia", "Portugal", "Belgium", "Ireland")],
                days_ago=5, tags=["travel"])
    searcher = _with(database, service, settings, search_candidates=10)
    hits = (await searcher.search(alice, QUESTION, MemoryFilter(tags=["travel"]), limit=10, explain=True)).hits
    assert next(h.explain["vector"] for h in hits if h.snippet == answer) is not None
    assert untagged not in {h.snippet for h in hits}
    assert untagged in {h.snippet for h in (await searcher.search(alice, QUESTION, limit=10)).hits}
    original = statement.build_search

    async def reads_windows(kinds: list[str]) -> bool:
        built: list[str] = []

        def recorded(*args: Any, **kwargs: Any) -> Any:
            made = original(*args, **kwargs)
            built.append(made.sql if made is not None else "")
            return made
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(search_module, "build_search", recorded)
            await searcher.search(alice, QUESTION, MemoryFilter(kinds=kinds), limit=10)
        return "unnest(s.near)" in built[-1]  # the statement run, rebuilt once the speakers are known
    assert not await reads_windows(["note"])
    assert await reads_windows(["note", "episode"])


async def test_one_conversation_and_a_name_nobody_speaks_rank_as_without_it(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    await _talk(service, alice, MARIA, days_ago=20)
    await service.write(alice, "Priya Raman visited Portugal and European islands in May.")
    for question in (QUESTION, "Which European countries has Priya visited?"):
        on = await _ranked(_with(database, service, settings), alice, question)
        off = await _ranked(_with(database, service, settings, other_conversation=1.0), alice, question)
        assert on == off and on


async def test_her_turns_count_only_while_live_and_in_the_turns_scope(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    maria = await _talk(service, alice, MARIA, days_ago=20, scope="user")
    await _talk(service, alice, JAMES, days_ago=5, scope="user")
    # Forgotten, her turns no longer make John's hers: both conversations alike, taken down together
    # as soon as she speaks anywhere the session sees (here: in another project's scope only).
    preview = await service.forget_preview(alice, ids=[maria[0].id, maria[2].id])
    await service.forget_execute(alice, preview.token)
    elsewhere = alice.model_copy(update={"project_id": "travel"})
    await _talk(service, elsewhere, ["Maria: Portugal next, I hope."], days_ago=1)
    factors = dict(await _ranked(_with(database, service, settings), elsewhere))
    assert factors[MARIA[1]] == factors[JAMES[0]] == settings.other_conversation
    assert factors["Maria: Portugal next, I hope."] is None


async def test_as_of_before_she_joined_a_conversation_it_is_another_one(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    await _talk(service, alice, MARIA, days_ago=20)
    james = await _talk(service, alice, JAMES, days_ago=5)
    await _talk(service, alice, ["Liv: Spain was lovely in May.", "Omar: Italy next year."], days_ago=2)
    then = datetime.now(UTC)
    # Written later, dated within James's conversation: she took part in it, as the store stands now.
    await service.write(alice, "Maria: Turkey is on my list too!", kind="episode",
                        occurred_at=james[-1].occurred_at + timedelta(minutes=1))
    searcher = _with(database, service, settings)
    now = dict(await _ranked(searcher, alice))
    assert all(now[t] is None for t in JAMES if t in now) and JAMES[0] in now
    past = dict(await _ranked(searcher, alice, f=MemoryFilter(as_of=then)))
    assert {past[t] for t in JAMES if t in past} == {settings.other_conversation}
    assert "Maria: Turkey is on my list too!" not in past


async def test_a_forget_preview_matches_as_said(database: Database, service: MemoryService,
                                                settings: Settings, alice: Principal) -> None:
    await _talk(service, alice, MARIA, days_ago=20)
    await _talk(service, alice, JAMES, days_ago=5)
    on = await _with(database, service, settings).forget_preview(alice, query=QUESTION)
    off = await _with(database, service, settings, other_conversation=1.0).forget_preview(alice, query=QUESTION)
    assert [c.id for c in on.candidates] == [c.id for c in off.candidates] and on.candidates


def test_a_factor_of_nothing_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="other_conversation"):
        Settings(other_conversation=0)


async def test_a_speaker_of_more_turns_than_are_read_is_not_told_apart(
        database: Database, service: MemoryService, settings: Settings, alice: Principal,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    await _talk(service, alice, MARIA, days_ago=20)
    await _talk(service, alice, JAMES, days_ago=5)
    # Maria speaks two turns: read up to one, her conversations are not looked for.
    monkeypatch.setattr(importlib.import_module("mcp_memory.retrieval.search"), "SPEAKER_TURNS_READ", 1)
    assert all(f is None for _, f in await _ranked(_with(database, service, settings), alice))
    monkeypatch.setattr(importlib.import_module("mcp_memory.retrieval.search"), "SPEAKER_TURNS_READ", 2)
    assert settings.other_conversation in dict(await _ranked(_with(database, service, settings), alice)).values()


async def test_a_store_of_one_conversation_is_not_read_for_it_until_another_begins(
        database: Database, service: MemoryService, settings: Settings, alice: Principal,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every turn lies in the speaker's conversation: the statement reads no turns for it. Whether
    the scope holds another is looked at once a minute: a service that looked before James's
    conversation began still reads none; one that looks after it does."""
    import importlib

    search = importlib.import_module("mcp_memory.retrieval.search")
    statements: list[str] = []
    built = search.build_search

    def keep(*args: Any, **kwargs: Any) -> Any:
        statement = built(*args, **kwargs)
        statements.append(statement.sql)
        return statement

    monkeypatch.setattr(search, "build_search", keep)
    await _talk(service, alice, MARIA, days_ago=20)
    looked = _with(database, service, settings)
    await looked.search(alice, QUESTION)
    assert statements and not any("spoken_0" in sql for sql in statements)
    await _talk(service, alice, JAMES, days_ago=5)
    statements.clear()
    await looked.search(alice, QUESTION)
    assert not any("spoken_0" in sql for sql in statements)
    statements.clear()
    factors = dict(await _ranked(_with(database, service, settings), alice))
    assert "spoken_0" in statements[-1] and factors[JAMES[0]] == settings.other_conversation
