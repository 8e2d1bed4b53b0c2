"""Vectors: the embedding cache, the model the database was built with, the HNSW index for a
model, and the backfill that fills in missing vectors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np
from pgvector import Vector

from ..encoding import sha256_hex
from . import scope_vectors
from .first_load import build_memory, in_empty_store
from .sql import Sql
from .turns import before

META_KEY = "embedding"


def text_hash(text: str) -> str:
    return sha256_hex(text)


def vector_cast(dimension: int) -> str:
    """A memory's vector as exact distances read it."""
    return f"(m.embedding::vector({int(dimension)}))"


# The HNSW index holds each vector in half precision (pgvector's halfvec): at 384 dimensions an
# index tuple is mostly its vector, so the index is ~0.57 of the size (less shared_buffers to hold
# it) and builds in ~0.8 of the time (docs/benchmarks.md, "The vector index in half precision").
# Distances kept or compared with a threshold are computed on the stored full-precision vector
# (`exact_distance`): the index only orders the walk.
INDEX_TYPE = "halfvec"


def index_cast(dimension: int, alias: str = "m.") -> str:
    """The expression the HNSW index is built on (`alias` "" in its definition); a walk's ORDER BY
    must use the very same one."""
    return f"({alias}embedding::{INDEX_TYPE}({int(dimension)}))"


def exact_distance(dimension: int, arg: str) -> str:
    """Cosine distance from a memory's full-precision vector to the vector parameter `arg`."""
    return f"{vector_cast(dimension)} <=> {arg}::vector({int(dimension)})"


def walk_distance(dimension: int, arg: str) -> str:
    """The distance the HNSW index orders by, to the vector parameter `arg`."""
    d = int(dimension)
    return f"{index_cast(d)} <=> {arg}::vector({d})::{INDEX_TYPE}({d})"


def model_literal(model: str) -> str:
    """The model as an SQL literal: partial-index predicates need a constant, not a parameter,
    for the planner to prove a query may use the index. Models come from configuration."""
    return "'" + model.replace("'", "''") + "'"


def index_name(model: str, dimension: int) -> str:
    return f"memories_hnsw_{INDEX_TYPE}_{int(dimension)}_{sha256_hex(model)[:10]}"


def full_precision_index_name(model: str, dimension: int) -> str:
    """The name the model's index had while it held full-precision vectors: a store made then has
    it, and loses it when the half-precision one is built (`ensure_index`, at start)."""
    return f"memories_hnsw_{int(dimension)}_{sha256_hex(model)[:10]}"


@asynccontextmanager
async def _connection(source: asyncpg.Pool | asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    if isinstance(source, asyncpg.Pool):
        async with source.acquire() as conn:
            yield conn
    else:
        yield source


class EmbeddingRepository:
    def __init__(self, app: asyncpg.Pool, admin: asyncpg.Pool | None = None) -> None:
        self.app = app
        self.admin = admin or app

    async def cached(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        rows = await self.app.fetch(
            "SELECT text_hash, embedding FROM embedding_cache WHERE model = $1 AND text_hash = ANY($2::text[])",
            model, list(hashes))
        return {r["text_hash"]: r["embedding"].to_list() for r in rows}

    async def remember(self, model: str, vectors: dict[str, list[float]]) -> None:
        """Cache vectors, in one round trip: a write waits for this twice (its own vector and the
        masked texts `related` compares), and BEGIN, SET LOCAL, the insert and COMMIT were four.
        A cache entry lost in a crash is only computed again, so the commit does not wait for the
        WAL to reach the disk: the statement's own implicit transaction turns synchronous_commit
        off (set_config local to it, a session setting any user may change; read at its commit),
        one flush less per memory_write (the memory's own transaction still waits for its flush).
        The join makes the setting part of the insert, so it is set whenever a row is. Rows go in
        in one order, by hash: two writes caching overlapping texts in their own orders each held
        one row the other was inserting, and one failed with a deadlock (a write beside a batch)."""
        ordered = sorted(vectors.items())
        await self.app.execute(
            """INSERT INTO embedding_cache (model, text_hash, embedding)
               SELECT $1, v.text_hash, v.embedding
               FROM unnest($2::text[], $3::vector[]) AS v(text_hash, embedding),
                    (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
               ON CONFLICT DO NOTHING""",
            # Vector, not an ndarray: asyncpg would take an array for one more dimension of the list.
            model, [h for h, _ in ordered], [Vector(np.asarray(v, dtype=np.float32)) for _, v in ordered])

    # --- what the database was built with ----------------------------------------------------

    async def built_with(self) -> dict[str, Any] | None:
        return await self.admin.fetchval("SELECT value FROM meta WHERE key = $1", META_KEY)

    async def record_model(self, model: str, dimension: int) -> None:
        await self.admin.execute(
            """INSERT INTO meta (key, value) VALUES ($1, $2)
               ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()""",
            META_KEY, {"model": model, "dimension": dimension})

    async def coverage(self, model: str) -> tuple[int, int]:
        """(live memories embedded with `model`, live memories)."""
        row = await self.admin.fetchrow(
            "SELECT count(*) FILTER (WHERE embedding IS NOT NULL AND embedding_model = $1) AS embedded, "
            "count(*) AS live FROM memories WHERE deleted_at IS NULL", model)
        return row["embedded"], row["live"]

    async def rows_with_other_models(self, model: str) -> int:
        return await self.admin.fetchval(
            "SELECT count(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model <> $1", model)

    async def ensure_index(self, model: str, dimension: int, memory_mb: int = 0, *,
                           replacing: Callable[[], None] | None = None) -> None:
        """The model's HNSW index and its scope index (scope_vectors.py, where the model's vectors
        fit one), made once however many processes start together; `memory_mb`, the builds'
        maintenance_work_mem (0: the server's); `replacing` is called before a build that replaces
        the index of full-precision vectors a store made before still has.

        IF NOT EXISTS does not make CREATE INDEX safe to race: two creators both miss the name
        and the second fails on pg_class's unique index (UniqueViolationError). So creators queue
        on a transaction-level advisory lock named after the index and look again once in; a
        creator that takes no lock (an older version) is caught by the same look."""
        name, old = index_name(model, dimension), full_precision_index_name(model, dimension)
        # A model whose vectors fit no btree entry has no scope index: its name is then the HNSW
        # index's, so each look below asks for that one twice and nothing more is built.
        scope = scope_vectors.name(model, dimension) if scope_vectors.fits(dimension) else name
        there = await self.admin.fetchrow(
            "SELECT to_regclass($1) IS NOT NULL AS new, to_regclass($2) IS NOT NULL AS old, "
            "to_regclass($3) IS NOT NULL AS scope", name, old, scope)
        if there["new"] and there["scope"]:
            return
        if there["old"] and replacing is not None:
            replacing()
        async with _connection(self.admin) as conn:
            try:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"mcp_memory:{name}")
                    await build_memory(conn, memory_mb)
                    await conn.execute(
                        f"""CREATE INDEX IF NOT EXISTS {name} ON memories
                            USING hnsw ({index_cast(dimension, alias="")} {INDEX_TYPE}_cosine_ops)
                            WHERE embedding_model = {model_literal(model)}""")
                    if scope != name:
                        await conn.execute(scope_vectors.definition(model, dimension, model_literal(model)))
                    await conn.execute(f"DROP INDEX IF EXISTS {old}")
            except asyncpg.UniqueViolationError:
                if not await conn.fetchval("SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
                                           name, scope):
                    raise

    async def drop_index_of_empty_store(self, model: str, dimension: int) -> bool:
        """Drop the model's HNSW and scope indexes when the store holds no memory at all, for a first
        load to build them once after its rows (`Vectors.loading`); whether it did. A role that may
        not drop them, or a lock another session holds past a moment, leaves them where they are."""
        async def drop(conn: asyncpg.Connection) -> bool:
            await conn.execute(f"DROP INDEX IF EXISTS {index_name(model, dimension)}")
            await conn.execute(f"DROP INDEX IF EXISTS {scope_vectors.name(model, dimension)}")
            return True

        async with _connection(self.admin) as conn:
            return bool(await in_empty_store(conn, drop))

    # --- backfill (operator work across users) ------------------------------------------------

    async def pending(self, model: str, reembed: bool, episodes: bool = False) -> int:
        return await self.admin.fetchval(
            f"SELECT count(*) FROM memories WHERE deleted_at IS NULL AND {self._todo(reembed, episodes)}", model)

    @staticmethod
    def _todo(reembed: bool, episodes: bool = False) -> str:
        """Which live memories to embed ($1: the model): those without a vector, or (`reembed`) of
        another model, and (`episodes`) every episode too."""
        todo = "(embedding IS NULL OR embedding_model IS DISTINCT FROM $1)" if reembed else \
            "(embedding IS NULL AND $1::text IS NOT NULL)"
        return f"({todo} OR kind = 'episode')" if episodes else todo

    async def next_batch(self, model: str, reembed: bool, after: UUID | None, size: int,
                         turn_minutes: float = 0, episodes: bool = False) -> list[asyncpg.Record]:
        """The next memories to embed, after id `after`: each one's user_id, id, content, and
        `before`: an episode's turn before it (repository/turns.py) within `turn_minutes`, else
        None."""
        q = Sql()
        args = [q.arg(model), q.arg(after), q.arg(size)]
        return await self.admin.fetch(
            f"""SELECT m.user_id, m.id, m.content, CASE WHEN m.kind = 'episode' THEN turn_before.content END AS before
                FROM (
                    SELECT user_id, id, content, kind, agent_id, project_id, occurred_at, created_at FROM memories
                    WHERE deleted_at IS NULL AND {self._todo(reembed, episodes)}
                      AND ({args[1]}::uuid IS NULL OR id > {args[1]})
                    ORDER BY id LIMIT {args[2]}) m
                {before(q, turn_minutes, "m")}
                ORDER BY m.id""", *q.args)

    async def store(self, model: str, rows: Sequence[tuple[str, UUID, list[float]]]) -> None:
        """Attach vectors (derived data: no version bump, no history row)."""
        await self.admin.executemany(
            "UPDATE memories SET embedding = $3, embedding_model = $4 WHERE user_id = $1 AND id = $2",
            [(user, mid, np.asarray(v, dtype=np.float32), model) for user, mid, v in rows])
