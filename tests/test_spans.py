"""A question about a span of time it names, or about what came before or after a value, nobody
passing keys (retrieval/then.py): the value that held then first, from the text alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.lexicon import Lexicon
from mcp_memory.models import Principal
from mcp_memory.retrieval import then
from mcp_memory.retrieval.dates import value_bounds
from mcp_memory.retrieval.query import ParsedQuery, parse_query
from mcp_memory.retrieval.then import asks_beside, asks_then, unspanned
from mcp_memory.retrieval.whose import MASK
from mcp_memory.service import MemoryService

from .counting_embedder import counting_service

MEMORIES = [
    ("Ines Moreau was born on 4 May 1991.", "2022-01-05"),
    ("Ines Moreau settled down in Oslo.", "2023-03-01"),
    ("Ines Moreau moved to Lisbon last month.", "2024-06-10"),
    ("Ines Moreau drives a Tesla.", "2024-11-15"),
    ("Ines Moreau lives in Porto now.", "2025-09-01"),
    ("Katarina Mbeki lives in Berlin these days.", "2025-10-01"),
]


def test_only_an_attribute_held_one_value_at_a_time_in_a_dated_span_is_asked_then() -> None:
    assert asks_then(parse_query("Where did Ines live in March 2024?")) is not None
    assert asks_then(parse_query("Who was Ines's manager before 2025?")) is not None
    # What happened then, a month of no year, or no span at all: not this rule's.
    for question in ("What did Ines paint in March 2024?", "Where did Ines live in March?",
                     "Where does Ines live now?", "When was Ines born in 2024?"):
        assert asks_then(parse_query(question)) is None, question
    assert unspanned(parse_query("Where did Ines live in March 2024?")).asked == "Where did Ines live?"


async def test_the_answer_written_last_before_the_span_ended_comes_first(service: MemoryService,
                                                                        alice: Principal) -> None:
    ids = {}
    for text, day in MEMORIES:
        ids[text] = (await service.write(
            alice, text, occurred_at=datetime.fromisoformat(day).replace(tzinfo=UTC))).memory.id

    async def hits(question: str, **update: object) -> list:
        if update:
            service.settings = service.settings.model_copy(update=update)
        try:
            return (await service.search(alice, question, explain=True)).hits
        finally:
            service.settings = service.settings.model_copy(update={"present_focus": True})

    said = ("settled down in Oslo", "moved to Lisbon last month", "lives in Porto now")
    oslo, lisbon, porto = (ids[f"Ines Moreau {words}."] for words in said)
    # Held in March 2024: Oslo, written a year before (the text alone puts Porto's "lives" first);
    # Lisbon, written after it, next.
    found = await hits("Where did Ines Moreau live in March 2024?")
    assert [h.id for h in found[:2]] == [oslo, lisbon]
    assert found[0].explain["answers_then"] and "answers_now" not in found[0].explain
    # The car, newer than Oslo and older than the span's end, answers nothing.
    assert ids["Ines Moreau drives a Tesla."] not in {h.id for h in found if h.explain.get("answers_then")}
    assert (await hits("Where did Ines Moreau live in March 2024?", present_focus=False))[0].id != oslo
    # Before 2025: Lisbon; in 2026, after every version: Porto.
    assert (await hits("Where did Ines Moreau live before 2025?"))[0].id == lisbon
    assert (await hits("Where did Ines Moreau live in 2026?"))[0].id == porto
    # A span before every answer: nothing says what held then, and the order is what the text gave.
    early = await hits("Where did Ines Moreau live in 2022?")
    assert [h.id for h in early] == [h.id for h in await hits("Where did Ines Moreau live in 2022?",
                                                                 present_focus=False)]
    assert not any(h.explain.get("answers_then") for h in early)
    # What a later memory replaced (the writer said so) is still what held before it.
    edinburgh = (await service.write(alice, "Ines Moreau is based in Edinburgh these days.", supersedes=[porto],
                                     occurred_at=datetime(2026, 2, 1, tzinfo=UTC))).memory.id
    assert (await hits("Where did Ines Moreau live in October 2025?"))[0].id == porto
    assert (await hits("Where did Ines Moreau live in March 2026?"))[0].id == edinburgh


async def test_a_new_question_about_a_span_is_embedded_with_itself_unnamed_in_one_call(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """What the focus compares (the question without its span and its subject) goes in the search's own
    call for the question, as for a question about now (tests/test_focus.py)."""
    counted, embedder = counting_service(database, service, settings)
    for text, day in MEMORIES:
        await counted.write(alice, text, occurred_at=datetime.fromisoformat(day).replace(tzinfo=UTC))
    embedder.query_calls.clear()
    found = await counted.search(alice, "Where did Ines Moreau live in March 2024?", explain=True)
    assert embedder.query_calls == [["Where did Ines Moreau live?", f"Where did {MASK} {MASK} live?"]]
    assert found.hits[0].explain["answers_then"]


def test_a_question_placing_what_it_asks_before_or_after_a_value() -> None:
    beside = asks_beside(parse_query("Who did I report to before Omar?"))
    assert beside is not None and (beside.bound.kind, beside.bound.word) == ("before", "omar")
    assert beside.asked.text == "Who did I report to?" and beside.asked.subject == ()  # Omar is no subject
    beside = asks_beside(parse_query("What car did Ines drive after the Tesla?"))  # the article passed over
    assert beside is not None and (beside.bound.kind, beside.bound.word) == ("after", "tesla")
    # A date is a span's (asks_then); "by" and "until" bound no value; a stop word names none; and an
    # attribute held many at a time, or none, is not asked so.
    for question in ("Where did Ines live before 2025?", "Who is managed by Signe?", "Where did Ines live before it?",
                     "What is Ines allergic to since Easter?", "What did Ines say after Omar?"):
        assert asks_beside(parse_query(question)) is None, question
    assert [b.word for b in value_bounds("before the Tesla, after Vim, until Friday")] == ["tesla", "vim"]



def test_a_question_of_many_bounds_is_parsed_again_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bound read parses the question again without it: a hostile question of 180 took 2 s."""
    parsed_again: list[str] = []

    def counting(question: str, lexicon: Lexicon) -> ParsedQuery:
        parsed_again.append(question)
        return parse_query(question, lexicon)

    then._beside.cache_clear()
    monkeypatch.setattr(then, "parse_query", counting)
    assert asks_beside(parse_query("What did Ines say " + "after lunch " * 180 + "?")) is None
    assert len(parsed_again) == then.BOUNDS_READ


async def test_the_answer_written_before_the_memory_naming_the_value_comes_first(service: MemoryService,
                                                                                alice: Principal) -> None:
    """Nobody passing keys: "before Omar" is the user's manager noted before the note that names Omar,
    however the text lists them (the note naming Omar matches his name and the question's words)."""
    texts = [("My manager is Dana Whitfield.", "2025-01-10"), ("I drive a 2016 Honda Civic.", "2025-02-10"),
             ("I had a long call about the roadmap.", "2025-02-01"),
             ("Dana left the company; my new manager is Omar Haddad.", "2025-06-15"),
             ("Sold the Civic, now I drive a Tesla Model 3.", "2025-09-01"),
             ("Omar moved our one-to-ones to Thursdays.", "2025-10-01")]
    ids = [(await service.write(alice, text, occurred_at=datetime.fromisoformat(day).replace(tzinfo=UTC))).memory.id
           for text, day in texts]
    dana, civic, omar, tesla = ids[0], ids[1], ids[3], ids[4]

    async def first(question: str, **update: object) -> tuple[object, dict]:
        service.settings = service.settings.model_copy(update={"present_focus": True, **update})
        hit = (await service.search(alice, question, explain=True)).hits[0]
        return hit.id, hit.explain

    found, explain = await first("What car did I drive before the Tesla?")
    assert found == civic and explain["answers_then"]
    assert (await first("What car did I drive before the Tesla?", present_focus=False))[0] == tesla
    assert (await first("Which car did I get after the Honda?"))[0] == tesla
    # "Omar" is named by two notes: the value held from the first of them, and before it Dana.
    assert (await first("Who did I report to before Omar?"))[0] == dana
    assert (await first("Who did I report to before Haddad?"))[0] == dana
    # Nothing noted before the value: the text's order, and nothing marked.
    found, explain = await first("What car did I drive before the Honda?")
    assert found == (await first("What car did I drive before the Honda?", present_focus=False))[0]
    assert "answers_then" not in explain
    assert omar != dana


async def test_the_users_notes_need_not_state_the_attribute_in_the_lexicons_words(service: MemoryService,
                                                                                 alice: Principal) -> None:
    """With no time word, two of the user's notes must state what is asked for the focus to compare
    them (tests/test_focus.py); a question asking what came before a value says itself that the
    attribute had values in turn."""
    vim = (await service.write(alice, "I use Vim for editing code.",
                               occurred_at=datetime(2024, 3, 1, tzinfo=UTC))).memory.id
    for text, day in [("I switched from Vim to VS Code.", "2025-04-01"),
                      ("I had a long call about the roadmap.", "2025-05-01")]:
        await service.write(alice, text, occurred_at=datetime.fromisoformat(day).replace(tzinfo=UTC))
    found = (await service.search(alice, "What editor did I use before VS Code?", explain=True)).hits[0]
    assert found.id == vim and found.explain["answers_then"]

