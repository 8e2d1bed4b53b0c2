"""Whether a filter leaves so few memories that the vector list sorts them all by distance
instead of walking the HNSW graph past the ones the filter drops, and the word lists read them
before matching their words."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import asyncpg

from ..models import MemoryFilter, Principal
from ..repository import Sql, live
from ..repository.embeddings import model_literal

# Below this many memories passing a filter, sorting them beats the graph. At 100,000 memories in
# one scope (bench/scale.py's store; the statement's p50 / p95 by the graph, then sorted): last 30
# days, 4,200 memories, 38 / 54 ms and 23 / 31; a tag on 5,000, 34 / 67 and 25 / 38; a kind on
# 20,000, 28 / 43 and 111 / 150.
EXACT_BELOW = 6000
# How that crossing moves with the index's size. A walk collecting c candidates where a share s of
# the index passes visits about c / s rows (a heap fetch each, to check scope and filter); a sort
# reads the r passing rows once. Their costs meet at r^2 = WALK_PER_SORTED_ROW x c x N for an index
# of N rows: 3.6 puts the crossing at EXACT_BELOW where it was measured (100 candidates, 100,000
# rows), and a visit cost ~21 us against ~6 us a sorted row at a million rows of 100 users.
WALK_PER_SORTED_ROW = 3.6
# Memories passing a filter are read before the full-text and trigram lists match their words,
# instead of the word's whole index entry ANDed with the filter's, where they are fewer than both
# of these. A word's entry costs in proportion to the memories of the whole store holding it
# ("Terraform", last 30 days, a user's 452 of a million memories over 100 users: the trigram
# bitmap of 107,014 rows 76 ms, ~0.7 us a row; full text's of 71,119 15 ms twice, ~0.2 us); read
# first, a row costs ~20 us of trigram similarity and ~1.5 us of full-text match. So reading first
# pays where the filter leaves fewer rows than about a thirtieth of a common word's matches: a
# thousandth of the store (a word in 3% of it), never more than 1,000 rows (~20 ms at worst).
FENCE_BELOW = 1000
FENCE_SHARE = 0.001
# A word held by few memories is read by its own index entries and the filter checked on each of its
# rows, rather than its entries combined with the filter's, which read the filter's entries however
# rare the word. A row fetched and checked costs ~2 us (a word's 339 rows 0.6 ms, 3,553 rows 7.4 ms;
# a million memories in one scope, every page in memory). A tag's or a period's entries are a bitmap
# ANDed with the word's, ~0.06-0.14 us an entry (the last 30 days' 41,484: 2.6-5.6 ms), so a word is
# read by its rows where it is held by at most a tenth as many memories as pass; a kind is read inside
# the word's own entries (memories_user_kind_fts, with the user's), ~0.02 us an entry (~3.5 ms for a
# kind's 200,000 and the user's million whatever the word), so there at most a hundredth.
ENTRIES_PER_ROW = 10
KIND_ENTRIES_PER_ROW = 100


@dataclass(frozen=True)
class Narrowing:
    exact: bool  # the vector list sorts the memories passing the filter by distance
    fenced: bool = False  # the word lists read those memories first (FENCE_BELOW, FENCE_SHARE)
    # Words the planner expects in at most this many memories are read by their own index entries, the
    # filter checked on each row (ENTRIES_PER_ROW); None where no filter narrows.
    by_rows_below: float | None = None

    def by_rows(self, word_rows: dict[str, float]) -> list[str]:
        """Which of the words the planner estimated (`word_rows`: word -> memories holding it) full
        text reads by their own index entries."""
        if self.by_rows_below is None or self.fenced:
            return []
        return [word for word, rows in word_rows.items() if rows <= self.by_rows_below]


def crossing(index_rows: float, candidates: int) -> float:
    """How many passing memories a sort and a walk to `candidates` of them cost the same at, in an
    index of `index_rows`."""
    return math.sqrt(WALK_PER_SORTED_ROW * candidates * index_rows)


def exact_below(index_rows: float, candidates: int) -> float:
    """Fewer memories passing a filter than this are sorted rather than walked to: EXACT_BELOW, as
    measured, up to 100,000 rows; the crossing beyond."""
    return max(EXACT_BELOW, crossing(index_rows, candidates))


def narrows(f: MemoryFilter | None) -> bool:
    return f is not None and bool(f.kinds or f.tags or f.since is not None or f.until is not None)


def estimate(p: Principal, f: MemoryFilter | None, model: str) -> tuple[str, list[Any]]:
    """The plan (EXPLAIN, JSON) of selecting the memories `p`'s search reads that pass `f`'s
    narrowing fields (kinds, tags, a time range), if any: its top node's "Plan Rows" is the
    planner's estimate of how many do. Counting them took as long as the walk it would spare (~10
    ms for 6,000)."""
    q = Sql()
    where = " AND ".join(live(q, p, f))
    return f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {where} AND m.embedding_model = " \
           f"{model_literal(model)}", q.args


def estimated_rows(plan: str | list[Any]) -> float:
    """The row estimate of an EXPLAIN (FORMAT JSON) result's top node."""
    return float((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"])


T = TypeVar("T")


class Remembered(Protocol):
    """What a count gave for a key less than a minute ago, or the count (MemoryStore.counted)."""

    def __call__(self, key: Hashable, count: Callable[[], Awaitable[T]], /) -> Awaitable[T]: ...


async def narrowing(conn: asyncpg.Connection, p: Principal, f: MemoryFilter | None, model: str, *,
                    index_rows: float, candidates: int, remembered: Remembered | None = None) -> Narrowing:
    """Exact where the planner expects fewer than `exact_below` of the memories the search reads to
    pass: `f`'s, or with no filter the scope's own, where it is a small part of a big index (a user
    of a team's store: 10,000 of 100 users' million, p50 272-311 ms walked, 160-188 sorted); fenced
    where fewer than FENCE_BELOW and a FENCE_SHARE of the store do. A scope's estimate is `remembered`
    (MemoryStore.counted) when given: asking for it costs an unfiltered search in one person's
    store 2 ms it gains nothing from."""
    filtered = narrows(f)
    # A scope alone is sorted only below the crossing itself: in a store of a few users, a user's
    # 5,000 of 20,000 memories are a quarter of the index, which a walk reads little of.
    below = exact_below(index_rows, candidates) if filtered else crossing(index_rows, candidates)
    if not filtered and index_rows < below:  # a small index: a walk reads little whatever the scope
        return Narrowing(exact=False)
    sql, args = estimate(p, f, model)

    async def count() -> float:
        return estimated_rows(await conn.fetchval(sql, *args))
    passing = await (remembered((sql, repr(args)), count) if remembered is not None and not filtered else count())
    return Narrowing(exact=passing < below, fenced=passing < min(FENCE_BELOW, FENCE_SHARE * index_rows),
                     by_rows_below=passing / entries_per_row(f) if filtered else None)


def plan_kept(f: MemoryFilter | None, narrowed: Narrowing) -> bool:
    """Whether a search may run on the generic plan its statement keeps (repository.sql.fetch_on_kept_plan):
    where no value narrows what it reads (a scope level is a clause without one) and the vector list
    walks the graph. A generic plan is made for an average of the values: a filter's share of the
    scope, or a scope small beside the index, would be planned as average (a kind's and the last 30
    days' searches of a 100,000-memory scope 1.4x and 2.4x slower, a small scope's sorted list 1.3x;
    docs/benchmarks.md "Kept plans for searches no filter narrows"), so those searches are planned
    for their values; the text of their statements differs, so no plan of theirs is kept."""
    return not narrows(f) and (f is None or f.as_of is None) and not narrowed.exact and not narrowed.fenced


def entries_per_row(f: MemoryFilter | None) -> int:
    """What a row read by a word's own entries costs in the filter's entries (ENTRIES_PER_ROW)."""
    kinds_alone = f is not None and bool(f.kinds) and not (f.tags or f.since is not None or f.until is not None)
    return KIND_ENTRIES_PER_ROW if kinds_alone else ENTRIES_PER_ROW
