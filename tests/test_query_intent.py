"""What a query says about time: recognised, taken out of the words matched, and steering the
ranking (tests/test_retrieval.py checks the steering on a real database)."""

from __future__ import annotations

import pytest

from mcp_memory.retrieval.query import TEMPORAL_PHRASES, parse_query


@pytest.mark.parametrize(("query", "text", "phrases"), [
    ("Which city is Ana based in these days?", "Which city is Ana based in?", ("these days",)),
    ("Who is Ana's manager CURRENTLY?", "Who is Ana's manager?", ("currently",)),
    ("What editor is Ana on at present?", "What editor is Ana on?", ("at present",)),
    ("Does Ana still live in Oslo", "Does Ana live in Oslo", ("still",)),
    ("where does ana work now?", "where does ana work?", ("now",)),
    ("Ana's latest phone number right now?", "Ana's phone number?", ("right now", "latest")),
    ("Is Ana at Globex anymore?", "Is Ana at Globex?", ("anymore",)),
    ("Right now, where does Ana work?", "where does Ana work?", ("right now",)),
])
def test_present(query: str, text: str, phrases: tuple[str, ...]) -> None:
    parsed = parse_query(query)
    assert parsed.tense == "present"
    assert parsed.text == text
    assert sorted(parsed.phrases) == sorted(phrases)


@pytest.mark.parametrize(("query", "text", "year"), [
    ("Where did Ana use to live? used to", "Where did Ana use to live?", None),
    ("Where did Ana live previously?", "Where did Ana live?", None),
    ("Who was originally Ana's manager.", "Who was Ana's manager.", None),
    ("What did Ana do last year?", "What did Ana do?", None),
    ("Where did Ana work before 2019?", "Where did Ana work?", 2019),
])
def test_past(query: str, text: str, year: int | None) -> None:
    parsed = parse_query(query)
    assert parsed.tense == "past"
    assert parsed.text == text
    assert parsed.year == year


@pytest.mark.parametrize("query", [
    "What is Ana's phone number?",
    "Knowledge of snowfall",       # 'now' inside a word is no time word
    "nowhere to be found",
    "the known issue with stillwater",
    "port 2019-style config",      # a number in an identifier is no year
])
def test_no_intent(query: str) -> None:
    parsed = parse_query(query)
    assert parsed.tense is None and parsed.year is None
    assert parsed.text == query


def test_both_times_state_no_single_intent() -> None:
    parsed = parse_query("Ana used to live in Oslo, where does she live now?")
    assert parsed.tense is None
    assert set(parsed.phrases) == {"used to", "now"}


def test_a_query_of_time_words_alone_keeps_them() -> None:
    assert parse_query("now").text == "now"


def test_a_year_alone_is_a_period_not_a_tense() -> None:
    parsed = parse_query("What did Ana start in 2023?")
    assert parsed.tense is None and parsed.year == 2023 and parsed.text == "What did Ana start?"
    assert parsed.period is not None and parsed.period.start is not None and parsed.period.start.year == 2023
    assert parse_query("Compare 2023 and 2024").year is None  # two years: no single one


def test_exclusions_survive() -> None:
    parsed = parse_query("editor -vim these days")
    assert parsed.excluded == ["vim"] and parsed.text == "editor" and parsed.tense == "present"


def test_the_phrase_table_is_data() -> None:
    assert {"present", "past"} <= TEMPORAL_PHRASES.keys()
    assert all(p == p.lower() for phrases in TEMPORAL_PHRASES.values() for p in phrases)


@pytest.mark.parametrize(("query", "subject"), [
    ("How does Pavel Jankowski keep fit currently?", ("Pavel", "Jankowski")),
    ("Who employs Gaia Gallagher's sister now?", ("Gaia", "Gallagher")),
    ("What did Jean-Luc say about the Oslo office?", ("Jean-Luc", "Oslo")),
    ("When did I move? Was it on a Monday in May?", ()),
    ("which region is billing-api deployed in now", ()),
    ("What is the staging database port", ()),
    # A word that opens a question only as a sentence does, or an abbreviation spelling a common word
    # ("his SO"), names no one: a memory had to name "According" (or "SO") too to count as theirs.
    ("According to Greta, where does Tom live now?", ("Greta", "Tom")),
    ("After the move, where does Ana Lima work?", ("Ana", "Lima")),
    ("When did Evan get back from a vacation with his SO?", ("Evan",)),
])
def test_the_names_a_question_is_about(query: str, subject: tuple[str, ...]) -> None:
    assert parse_query(query).subject == subject
