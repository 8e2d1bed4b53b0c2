"""A question about a span of time it names ("What was Benedikt's project in July 2025?"): of its
subject's memories, those that answer it as they would the same question about now (focus.py), and
of those the newest written before the span ended first, what held then; the later ones after it,
oldest first, then everything else in its order.

The period the question names lifts what was written in it (statement.py), which is right for what
happened then ("What did Mel paint in July 2023?") and wrong for what held then: the value held in
July was usually written down before July began. So only a question asking an attribute that
holds one value at a time (focus.py `changing`) is read this way; one whose subject has no answer
written before the span ended keeps the order it had. A writer's keyed facts say the same by their
validity (keyed.py); this is what the text alone gives.

A question placing what it asks before or after a value it names instead of a date ("Who did I report
to before Omar?", "Which editor did I use after Vim?") is read the same way: of the answers to the
question without that bound ("Who did I report to?"), those written before the one subject's memory
that names the value go first, the latest first (after it: the earliest first)."""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from ..lexicon import Lexicon
from .dates import Bound, Period, find_period, tidy, value_bounds
from .focus import changing, masked_question
from .query import ParsedQuery, parse_query


def asks_then(parsed: ParsedQuery) -> Period | None:
    """The span `parsed` names (bounded on at least one side) where it asks an attribute holding one
    value at a time; None otherwise."""
    period = parsed.period
    if period is None or not period.dated:
        return None
    return period if changing(parsed.asked or parsed.text, parsed.lexicon) else None


def unspanned(parsed: ParsedQuery) -> ParsedQuery:
    """`parsed` asked without the span's words: the subject's memories are compared with what is
    asked, not when (a date only blurs a sentence embedding, dates.py)."""
    return replace(parsed, asked=find_period(parsed.asked, parsed.lexicon)[1]) if parsed.asked else parsed


@dataclass(frozen=True)
class Beside:
    """A question asking what held before or after a value it names (`bound`), and that question
    without the bound (`asked`: "Who did I report to?"), as the focus compares the subject's
    memories with it."""

    bound: Bound
    asked: ParsedQuery


# A question places what it asks beside one value: the first bounds only are read, each parsed again
# without it (a hostile question of 180 bounds took 2 s read whole).
BOUNDS_READ = 2


def asks_beside(parsed: ParsedQuery) -> Beside | None:
    """The first bound before a value in a question naming no date (`dates.value_bounds`), where
    the question without it asks an attribute holding one value at a time; None otherwise. The
    question is read again without the bound, so the value ("Omar") is no subject of it."""
    return None if parsed.period is not None else _beside(parsed.asked or parsed.text, parsed.lexicon)


# A search asks it three times (the text embedded beside the question, whom it asks of, the order).
@functools.lru_cache(maxsize=256)
def _beside(question: str, lexicon: Lexicon) -> Beside | None:
    for bound in value_bounds(question, lexicon)[:BOUNDS_READ]:
        asked = parse_query(tidy(question[:bound.start] + question[bound.end:], question), lexicon)
        if changing(asked.text, lexicon):
            return Beside(bound, asked)
    return None


def whose_question(parsed: ParsedQuery) -> ParsedQuery:
    """`parsed` naming whom it asks of without a value it places what it asks beside: "What was Odalys's
    city before Berlin?" is about Odalys, and the subject factor (statement.py) lifted only the note
    naming both, so the focus found one memory of hers to compare."""
    beside = asks_beside(parsed)
    if beside is None:
        return parsed
    return replace(parsed, subject=beside.asked.subject, full_names=beside.asked.full_names)


def question_beside(parsed: ParsedQuery) -> str | None:
    """The question without its span (or its bound before a value) as the focus will embed it, its
    subject taken out, for one in the model's run with the question (focus.py `question_beside`);
    None where it asks nothing then."""
    if asks_then(parsed):
        return masked_question(unspanned(parsed))
    beside = asks_beside(parsed)
    return masked_question(beside.asked) if beside is not None else None


def held_first(rows: list[Any], answers: set[UUID], end: datetime | None) -> tuple[list[Any], set[UUID]]:
    """`rows` with the `answers` written before `end` first, newest first, the later answers after
    them, oldest first, and the rest in their order; and the answers so placed. Where none of them
    was written before `end`, nothing says what held in the span: `rows` as they were, and none."""
    before = sorted((r for r in rows if r["id"] in answers and (end is None or r["occurred_at"] < end)),
                    key=lambda r: r["occurred_at"], reverse=True)
    if not before:
        return rows, set()
    held = {r["id"] for r in before}
    after = sorted((r for r in rows if r["id"] in answers and r["id"] not in held), key=lambda r: r["occurred_at"])
    return before + after + [r for r in rows if r["id"] not in answers], answers


def beside_first(rows: list[Any], answers: set[UUID], judged: Collection[UUID],
                 beside: Beside) -> tuple[list[Any], set[UUID]]:
    """`rows` with the `answers` written before the first subject's memory (of `judged`) that names
    the bound's value first, the latest first (after or since it: those written after it, the
    earliest first), and the rest in their order; and the answers so placed. The value held from
    the first memory naming it: "Where was the API hosted before Fly.io?" is before "Migrated the
    API from Heroku to Fly.io.", whatever later notes say of Fly.io ("Fly.io had an outage"), and the
    value after Vim is the one the first note naming Vim gave way to. Where no memory names the
    value, or no answer lies that way, nothing says what the answer is: `rows` as they were, and none."""
    words = beside.asked.lexicon.words
    naming = [r["occurred_at"] for r in rows if r["id"] in judged and beside.bound.word in words(r["content"])]
    if not naming:
        return rows, set()
    placed = beside.bound.nearest_first((r for r in rows if r["id"] in answers), lambda r: r["occurred_at"],
                                        min(naming))
    if not placed:
        return rows, set()
    ids = {r["id"] for r in placed}
    return placed + [r for r in rows if r["id"] not in ids], ids
