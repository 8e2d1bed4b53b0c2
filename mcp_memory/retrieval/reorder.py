"""The Python stage after the SQL one: versions and on-topic memories re-ordered, rows made hits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple
from uuid import UUID

import asyncpg

from ..config import Settings
from ..models import ScopeInfo, SearchHit, human_age, memory_uri
from . import answering, focus, then
from .dates import Period
from .query import ParsedQuery
from .statement import Row
from .versions import newest_of_conflicts, successors_first


def _hit(row: asyncpg.Record, snippet_chars: int, explain: bool,
         on_topic: answering.Closeness | None = None, answers: str | None = None,
         other_history: bool = False) -> SearchHit:
    """`answers`: the explain flag of a memory that answers the question (`answers_now`, or
    `answers_then` for a question about a span); `other_history`: taken out of the answers as
    another attribute's history (answering.py `another_history`)."""
    content: str = row["content"]
    return SearchHit(
        id=row["id"],
        uri=memory_uri(row["id"]),
        title=row["title"],
        snippet=content[:snippet_chars],
        truncated=len(content) > snippet_chars,
        kind=row["kind"],
        tags=list(row["tags"]),
        scope=ScopeInfo.of(row["agent_id"], row["project_id"]),
        occurred_at=row["occurred_at"],
        age=human_age(row["occurred_at"]),
        score=round(row["score"], 6),
        superseded_by=row["successor"],  # live and visible: a forgotten successor replaces nothing
        explain={"vector": row["vec_rank"], "fulltext": row["fts_rank"], "trigram": row["trgm_rank"],
                 "fused": round(row["fused"], 6), "reply": round(row["reply"], 6),
                 "recency": round(row["recency"], 4), "subject": round(row["about"], 4),
                 "period": round(row["period"], 4),
                 **({"conversation": round(row["conversation"], 4)} if row["conversation"] != 1 else {}),
                 **({"on_topic": round(on_topic.question, 4), "linked": round(on_topic.link, 4)}
                    if on_topic is not None and on_topic.compared else {}),
                 **({"states_another_attribute": True} if on_topic is not None and on_topic.off else {}),
                 **({"states_asked_attribute": True} if on_topic is not None and on_topic.says_asked else {}),
                 **({"names_no_value": True} if on_topic is not None and on_topic.nameless else {}),
                 **({"another_history": True} if other_history else {}),
                 **({answers: True} if answers else {})}
        if explain else None,
    )


class Reordered(NamedTuple):
    """The Python stage's hits, and those of the subject's memories it found answering a question
    about the present (`answering.answers_of`; none for a question about a span or about what came
    before or after a value), which the graph's stage reads (keyed.py `newer_unsaid`)."""

    hits: list[SearchHit]
    answers: frozenset[UUID]


async def after_sql(rows: Sequence[Row], parsed: ParsedQuery, *, past: bool, conflict: float, settings: Settings,
                    explain: bool, vectors: focus.TextVectors | None, listing: bool = False) -> Reordered:
    """The whole Python stage after the SQL one: versions of one fact newest first (not for a
    question about the past), the subject's memories that answer a question about the present
    newest first, a successor above what it superseded, each hit the score of its place.
    `listing` (a forget preview: what matches) leaves the subject's memories in their order."""
    ordered = list(rows) if past else newest_of_conflicts(list(rows), conflict)
    on_topic: dict[UUID, answering.Closeness] = {}
    span = then.asks_then(parsed)
    when: Period | then.Beside | None = span if span is not None else then.asks_beside(parsed)
    if vectors is not None and settings.present_focus and not listing:
        # "Who is Ana's manager after Marco?" asks what came after Marco, not who it is now.
        if isinstance(when, then.Beside):
            on_topic = await focus.similarities(ordered, when.asked, vectors, conflict, sequence=True)
        elif focus.applies(parsed):
            on_topic = await focus.similarities(ordered, parsed, vectors, conflict)
        elif span is not None:
            on_topic = await focus.similarities(ordered, then.unspanned(parsed), vectors, conflict)
    return reorder(ordered, on_topic, settings.present_margin, settings.snippet_chars, explain, when)


def reorder(rows: list[Row], on_topic: dict[UUID, answering.Closeness], margin: float, snippet_chars: int,
            explain: bool, when: Period | then.Beside | None = None) -> Reordered:
    """The Python stage after the versions of one fact were put newest first: for a question
    about the present, the subject's memories that answer it newest first (`on_topic`: how
    close each is to the question and to the others, names masked; `explain` marks them
    `answers_now`); for one about a span it names (`when`), the one written last before it ended
    first, and for one about what came before or after a value, those written that way from the
    memory naming it (then.py; `answers_then`); otherwise a successor above what it superseded."""
    answers, other_history = answering.answers_of(rows, on_topic, margin)
    if isinstance(when, Period):
        rows, answers = then.held_first(rows, answers, when.end)
    elif when is not None:
        rows, answers = then.beside_first(rows, answers, on_topic.keys(), when)
        if not answers:  # nothing says what came that way: read as any other question
            when = None
    else:
        rows = answering.answers_first(rows, answers)
    flag = "answers_then" if when is not None else "answers_now"
    hits = [_hit(r, snippet_chars, explain, on_topic.get(r["id"]), flag if r["id"] in answers else None,
                 r["id"] in other_history) for r in rows]
    # What a newer memory replaced is what held before it: a question about another time keeps it
    # where its time put it.
    if when is not None:
        return Reordered(placed_scores(hits), frozenset())
    return Reordered(placed_scores(successors_first(hits)), frozenset(answers))


def placed_scores(hits: list[SearchHit]) -> list[SearchHit]:
    """Each hit carries the score of the place it holds: the SQL stage's scores, best first, given
    to the hits in their final order. A superseded memory moved below its successor, or an older
    version below the newest, showed its own score (0.80 under a 0.52): a caller cutting at a
    score, or reading one as confidence, was told the opposite of the order. `explain.sql_score`
    keeps the score the SQL stage gave it, where a later stage places the hits again (keyed.py) too."""
    places = sorted((h.score for h in hits), reverse=True)
    return [h.model_copy(update={"score": score, "explain": h.explain and {"sql_score": h.score, **h.explain}})
            if h.score != score or h.explain else h
            for h, score in zip(hits, places, strict=True)]
