"""A question about a span of time it names ("What was Benedikt's project in July 2025?"): of its
subject's memories, those that answer it as they would the same question about now (focus.py), and
of those the newest written before the span ended first, what held then; the later ones after it,
oldest first, then everything else in its order.

The period the question names lifts what was written in it (statement.py), which is right for what
happened then ("What did Mel paint in July 2023?") and wrong for what held then: the value held in
July was usually written down before July began. So only a question asking an attribute that
holds one value at a time (focus.py `changing`) is read this way; one whose subject has no answer
written before the span ended keeps the order it had. A writer's keyed facts say the same by their
validity (keyed.py); this is what the text alone gives."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

from .dates import Period, find_period
from .focus import changing, masked_question
from .query import ParsedQuery


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


def question_beside(parsed: ParsedQuery) -> str | None:
    """The question without its span as the focus will embed it, its subject taken out, for one in
    the model's run with the question (focus.py `question_beside`); None where it asks nothing then."""
    return masked_question(unspanned(parsed)) if asks_then(parsed) else None


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
