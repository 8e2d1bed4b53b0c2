"""A session's summary before the pile of its raw turns (issue 49). Where a summary and turns it
was derived from both answer a search, the summary takes the place of its best ranked turn, that
turn and the next `kept` - 1 of them keep their places after it, and the rest go to the end of the
list: the session is read in a few sentences first, its turns still there for the detail (an exact
command, a number). Results with no summary in them are left exactly as they were, and cost no
query: which turns a summary sums up is looked up only for the summaries found."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import asyncpg

from ..models import Principal, SearchHit
from ..repository.edges import linked

KIND = "session_summary"


async def sources_of(conn: asyncpg.Connection, p: Principal, rows: Sequence[Mapping[str, Any]]
                     ) -> dict[UUID, set[UUID]]:
    """For each summary among `rows` (with id and kind), the turns it was derived from that `p` sees."""
    ids = [r["id"] for r in rows if r["kind"] == KIND]
    if not ids:
        return {}
    found = await linked(conn, p, ids, "derived_from")
    return {s: {to for _, to, _ in edges} for s, edges in found.items()}


def covering(hits: Sequence[SearchHit], sources: Mapping[UUID, set[UUID]]) -> dict[UUID, UUID]:
    """Each raw turn among `hits` that a summary among them sums up, to that summary (the better
    ranked one when two do)."""
    turns = {h.id for h in hits if h.kind == "episode"}
    out: dict[UUID, UUID] = {}
    for h in hits:
        for turn in sources.get(h.id, ()):
            if turn in turns:
                out.setdefault(turn, h.id)
    return out


def summaries_first(hits: list[SearchHit], sources: Mapping[UUID, set[UUID]], kept: int) -> list[SearchHit]:
    """`hits` with each summary placed before its turns, `kept` of them after it, the rest last;
    every hit the score of its new place."""
    cover = covering(hits, sources)
    if not cover:
        return hits
    by_id = {h.id: h for h in hits}
    out: list[SearchHit] = []
    last: list[SearchHit] = []
    placed: set[UUID] = set()
    shown: dict[UUID, int] = {}
    for h in hits:
        if h.id in placed:
            continue
        summary = cover.get(h.id)
        if summary is None:
            out.append(h)
            placed.add(h.id)
            continue
        if summary not in placed:
            out.append(by_id[summary])
            placed.add(summary)
        placed.add(h.id)
        if shown.get(summary, 0) < kept:
            shown[summary] = shown.get(summary, 0) + 1
            out.append(h)
        else:
            last.append(h)
    moved = out + last
    if [h.id for h in moved] == [h.id for h in hits]:
        return hits
    # The scores of the places, as the other stages give them; an earlier stage's sql_score stays.
    places = sorted((h.score for h in hits), reverse=True)
    return [h if h.score == score else h.model_copy(update={
                "score": score, "explain": h.explain and {"sql_score": h.score, **h.explain}})
            for h, score in zip(moved, places, strict=True)]


__all__ = ["covering", "sources_of", "summaries_first"]
