"""Whether a filter leaves so few memories that the vector list sorts them all by distance
instead of walking the HNSW graph past the ones the filter drops."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from ..models import MemoryFilter, Principal
from ..repository import Sql, live
from ..repository.embeddings import model_literal

# Below this many memories passing a filter, sorting them beats the graph. At 100,000 memories in
# one scope (bench/scale.py's store; the statement's p50 / p95 by the graph, then sorted): last 30
# days, 4,200 memories, 38 / 54 ms and 23 / 31; a tag on 5,000, 34 / 67 and 25 / 38; a kind on
# 20,000, 28 / 43 and 111 / 150.
EXACT_BELOW = 6000


def estimate(p: Principal, f: MemoryFilter | None, model: str) -> tuple[str, list[Any]] | None:
    """The plan (EXPLAIN, JSON) of selecting the visible memories that pass `f`'s narrowing fields
    (kinds, tags, a time range): its top node's "Plan Rows" is the planner's estimate of how many
    do. Counting them took as long as the walk it would spare (~10 ms for 6,000). None when `f`
    narrows nothing."""
    if f is None or not (f.kinds or f.tags or f.since is not None or f.until is not None):
        return None
    q = Sql()
    where = " AND ".join(live(q, p, f))
    return f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {where} AND m.embedding_model = " \
           f"{model_literal(model)}", q.args


def estimated_rows(plan: str | list[Any]) -> float:
    """The row estimate of an EXPLAIN (FORMAT JSON) result's top node."""
    return float((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"])


async def few_pass(conn: asyncpg.Connection, p: Principal, f: MemoryFilter | None, model: str) -> bool:
    """Whether the planner expects fewer than EXACT_BELOW of the caller's memories to pass `f`."""
    asked = estimate(p, f, model)
    return asked is not None and estimated_rows(await conn.fetchval(asked[0], *asked[1])) < EXACT_BELOW
