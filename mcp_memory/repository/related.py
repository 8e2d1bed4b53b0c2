"""The memories nearest a new one: likely earlier versions of the same fact, or near-duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import asyncpg
import numpy as np

from ..models import Principal
from .embeddings import exact_distance, model_literal, walk_distance
from .memories import MemoryRepository
from .sql import Sql, live, successor


async def nearest(repo: MemoryRepository, p: Principal, vector: Sequence[float], *, model: str, dimension: int,
                  limit: int, min_similarity: float, exclude: UUID | None = None,
                  created_before: datetime | None = None) -> list[tuple[asyncpg.Record, float]]:
    """Live memories this principal can see, closest first (cosine ≥ `min_similarity`), with
    their similarity; `exclude` is the new memory itself (None: it is not stored yet, or there is
    none); `created_before`: only memories stored before then (a decision's candidates). Each row's
    `said_about`: whether a writer or a model said whom it is about (the graph's mentions), so
    `related` reads the graph only where it may say more than the text."""
    q = Sql()
    given = q.arg(np.asarray(vector, dtype=np.float32))
    distance = exact_distance(dimension, given)
    sql = f"""
        SELECT m.*, {successor(q, p)}, 1 - ({distance}) AS similarity,
               EXISTS (SELECT 1 FROM memory_entities me WHERE me.user_id = m.user_id AND me.memory_id = m.id
                       AND me.role = 'about' AND me.source <> 'rules') AS said_about
        FROM memories m
        WHERE {" AND ".join(live(q, p))}{f" AND m.id <> {q.arg(exclude)}" if exclude else ""}
          {f"AND m.created_at < {q.arg(created_before)}" if created_before is not None else ""}
          AND m.embedding_model = {model_literal(model)} AND {distance} <= {q.arg(1 - min_similarity)}
        ORDER BY {walk_distance(dimension, given)} LIMIT {q.arg(limit)}"""
    async with repo.transaction(p, hnsw__ef_search="40", hnsw__iterative_scan="relaxed_order") as conn:
        rows = await conn.fetch(sql, *q.args)
    return [(r, float(r["similarity"])) for r in rows]


async def similarities(repo: MemoryRepository, p: Principal, ids: Sequence[UUID], vector: Sequence[float], *,
                       model: str, dimension: int) -> dict[UUID, float]:
    """The cosine of each of `ids` (live, visible, embedded by `model`) to `vector`, computed
    exactly: how close in meaning each of a search's hits is, whether or not the index walk
    reached it (auto-recall's relevance floor)."""
    if not ids:
        return {}
    q = Sql()
    distance = exact_distance(dimension, q.arg(np.asarray(vector, dtype=np.float32)))
    sql = f"""
        SELECT m.id, 1 - ({distance}) AS similarity FROM memories m
        WHERE {" AND ".join(live(q, p))} AND m.id = ANY({q.arg(list(ids))}::uuid[])
          AND m.embedding_model = {model_literal(model)}"""
    async with repo.reading(p) as conn:
        rows = await conn.fetch(sql, *q.args)
    return {r["id"]: float(r["similarity"]) for r in rows}
