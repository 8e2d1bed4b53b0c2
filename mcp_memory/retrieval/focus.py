"""A question about the present: which of its subject's memories answer it, and the newest of
those first.

Every memory about Odalys shares her name, and in a sentence embedding the name weighs more than
what is said of her: "What town is Odalys in now?" comes out closer to "Odalys owns a Nissan Leaf"
than to "Odalys left Leipzig behind for Berlin". With the names taken out of both sides what is
left is the question's predicate, and the subject's memories closest to it are the versions of the
fact it asks about ("someone settled down in Quebec City", "someone left Leipzig behind for
Berlin"), however differently each was phrased. Those within `margin` of the closest go first,
newest first; other facts about the subject (and stable ones, which no newer version
contradicts) and everything else follow in their order.

A question that names nobody ("What is the coupons pipeline persisting to these days?") is about
the longest run of its words that at least two of the results share ("coupons pipeline"), masked
the same way.

Measured on the knowledge-update dev sets (margin 0.15): newest-first life .59 -> .75, ops .62 ->
.72; newest@1 life .25 -> .60, ops .28 -> .45; the generator's own set and LoCoMo unchanged. The
masked texts are embedded once and kept in the embedding cache."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol
from uuid import UUID

import asyncpg
import numpy as np

from .query import ParsedQuery, phrases_of

# The subject's memories among this many top results are the ones compared: the answer is
# near the top already, and each one compared is a text to embed the first time.
WINDOW = 10
MASK = "someone"


class TextVectors(Protocol):
    async def query(self, text: str) -> list[float] | None: ...

    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None: ...


def applies(parsed: ParsedQuery) -> bool:
    """Only a question about now, and no year ("what did Mel paint in her latest project in July
    2023" is about July 2023, not about now)."""
    return parsed.tense == "present" and parsed.year is None


def _whole(words: str, flags: int = 0) -> re.Pattern[str]:
    """`words` as whole words, any white space between them, with a possessive."""
    return re.compile(r"(?<![\w'-])" + r"\s+".join(map(re.escape, words.split())) + r"(?:'s)?(?![\w'-])", flags)


def without_names(text: str, names: Sequence[str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = _whole(name).sub(MASK, text)
    return text


def subject_positions(rows: Sequence[asyncpg.Record],
                      parsed: ParsedQuery) -> tuple[list[int], Callable[[str], str]]:
    """Positions within the window of the memories about the question's subject, and how to take
    the subject out of a text. The subject is the names the question names (the memories the
    subject factor lifted) or else its longest run of words at least two of them share. Episodes
    aside: an episode is what happened at its moment, and a later one does not replace it (in a
    conversation every turn names its speaker; newest-first among them only reshuffles what was
    said)."""
    window = [i for i, r in enumerate(rows[:WINDOW]) if r["kind"] != "episode"]
    if parsed.subject:
        return [i for i in window if rows[i]["about"] > 1], lambda text: without_names(text, parsed.subject)
    for run in phrases_of(parsed.text):
        pattern = _whole(run, re.IGNORECASE)
        positions = [i for i in window if pattern.search(rows[i]["content"])]
        if len(positions) >= 2:
            return positions, partial(pattern.sub, MASK)
    return [], str


async def similarities(rows: Sequence[asyncpg.Record], parsed: ParsedQuery,
                       vectors: TextVectors) -> dict[UUID, float]:
    """Cosine between the question and each subject memory in the window, the subject masked on
    both sides; empty when fewer than two are there or the embedder is not answering."""
    positions, unnamed = subject_positions(rows, parsed)
    if len(positions) < 2:
        return {}
    # The time words stay: among one subject's memories they are no decoys, and a statement of a
    # changed present says so ("now works for", "these days", "latest car"): newest first life
    # .71 -> .75, ops .66 -> .68 against the question without them.
    question = await vectors.query(unnamed(parsed.asked or parsed.text))
    if question is None:
        return {}
    documents = await vectors.documents_or_none([unnamed(rows[i]["content"]) for i in positions])
    if documents is None:
        return {}
    cosines = np.asarray(documents) @ np.asarray(question)
    return {rows[i]["id"]: float(c) for i, c in zip(positions, cosines, strict=True)}


def newest_on_topic_first(rows: list[asyncpg.Record], similarity: dict[UUID, float],
                          margin: float) -> list[asyncpg.Record]:
    """The subject's memories within `margin` of the closest answer the question: they go first,
    newest first, and everything else follows in its order (a memory that does not name the
    person asked about is no answer about them now: life newest@1 .54 -> .60, ops unchanged)."""
    judged = [r for r in rows if r["id"] in similarity]
    if len(judged) < 2:
        return rows
    best = max(similarity.values())
    answers = {r["id"] for r in judged if similarity[r["id"]] >= best - margin}
    newest_first = sorted((r for r in rows if r["id"] in answers), key=lambda r: r["occurred_at"], reverse=True)
    return newest_first + [r for r in rows if r["id"] not in answers]
