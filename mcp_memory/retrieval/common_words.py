"""Which of a question's words are so common in the scope searched that full text's any-word list
must not list memories by them alone.

That list ranks at most `fulltext_scan` memories holding any of the question's words, those
holding the rarest first (retrieval/fulltext.py). A word in tens of thousands of them ("go",
"support" in a year of conversation) adds only an arbitrary few of those and costs the index a
bitmap of all of them (72,000 rows for one question in a million memories: 28 of a kind-filtered
search's 70 ms). Such a word is left out of the any-word list (Elasticsearch's cutoff_frequency
did the same); the every-word list still requires it, and its rarity still weighs it. How many
memories hold a word is the planner's estimate (its statistics of the column, EXPLAIN): the same on
any server, a round trip that reads no rows, made only where the store holds more memories than the
cut-off, nearly all of them the searching user's."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg

from ..lexicon import Lexicon
from ..models import Principal
from ..repository import Sql, live
from .narrowing import Remembered, estimated_rows

# Other users' memories may number at most this share of the cut-off where words are left out: the
# planner's statistics are the table's, and theirs must not decide which words a user's search
# leaves out (which `explain` shows; PostgreSQL hides a table's statistics from roles under
# row-level security for this reason). So few move no word's estimate by more than a tenth of it.
OTHERS_OF_CUTOFF = 0.1


def others_allowed(cutoff: int) -> int:
    """How many memories other users may hold where a search leaves common words out."""
    return int(cutoff * OTHERS_OF_CUTOFF)


# More words than this are not estimated: the rest are kept (a long text pasted as a query).
MOST_WORDS = 12


def words_of(text: str, lexicon: Lexicon) -> list[str]:
    """The words of a query that full text reads (stop words out), each once, in order."""
    return [word for word in dict.fromkeys(lexicon.words(text)) if word not in lexicon.stop_words]


def estimate(p: Principal, words: Sequence[str], config: str) -> tuple[str, list[Any]]:
    """EXPLAIN (FORMAT JSON) of, for each word, the memories of `p`'s scope holding it, in one
    statement: its top node's plans (one word: the node itself) carry the estimates in order."""
    q = Sql()
    where = " AND ".join(live(q, p))
    parts = [f"(SELECT 1 FROM memories m WHERE {where} AND m.fts @@ plainto_tsquery({config}, {q.arg(w)}))"
             for w in words]
    return "EXPLAIN (FORMAT JSON) " + " UNION ALL ".join(parts), q.args


def estimates(plan: str | list[Any], n: int) -> list[float]:
    """The row estimate of each of `estimate`'s `n` words, in order."""
    if n == 1:
        return [estimated_rows(plan)]
    top = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    return [float(node["Plan Rows"]) for node in top["Plans"]]


async def word_rows(conn: asyncpg.Connection, p: Principal, text: str, lexicon: Lexicon, config: str, *,
                    index_rows: float, cutoff: int, alone: Callable[[], Awaitable[bool]],
                    remembered: Remembered | None = None) -> dict[str, float]:
    """How many memories of `p`'s scope the planner expects to hold each word of `text`: none
    when the store, or the scope (its estimate `remembered` when given, as MemoryStore.counted
    keeps it a minute), holds no more than `cutoff`, when `cutoff` is 0, or unless `alone()` says
    the store is the user's, others holding at most `others_allowed(cutoff)` memories (in a store
    many share, a user's full-text list reads the user's own index entries anyway,
    memories_user_kind_fts). It is asked last of these, so a small store never asks."""
    if cutoff <= 0 or index_rows <= cutoff:
        return {}
    words = words_of(text, lexicon)[:MOST_WORDS]
    if not words or not await alone():
        return {}
    q = Sql()
    scope_sql = f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {' AND '.join(live(q, p))}"

    async def scope() -> float:
        return estimated_rows(await conn.fetchval(scope_sql, *q.args))
    if await (remembered((scope_sql, repr(q.args)), scope) if remembered is not None else scope()) <= cutoff:
        return {}
    sql, args = estimate(p, words, config)
    return dict(zip(words, estimates(await conn.fetchval(sql, *args), len(words)), strict=True))


def too_common(rows: dict[str, float], cutoff: int) -> list[str]:
    """The words (of `word_rows`) the planner expects in more than `cutoff` memories."""
    common = [w for w, n in rows.items() if n > cutoff]
    if common and len(common) == len(rows):
        # Every word past it: the rarest still lists by, or full text would rank only what holds
        # them all, often nothing (a million memories, cut-off 1,000: R@10 .357 -> .249).
        common.remove(min((n, w) for w, n in rows.items())[1])
    return common
