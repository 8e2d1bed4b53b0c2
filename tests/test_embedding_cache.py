"""The embedding cache (repository/embeddings.py): what it stores comes back exactly, a hash
already cached keeps its first vector, and the unflushed commit it asks for stays in its own
statement."""

from __future__ import annotations

import asyncio
import random

import asyncpg
import numpy as np

from mcp_memory.db import init_connection, reset_connection
from mcp_memory.repository.embeddings import EmbeddingRepository


async def test_remembered_vectors_come_back_and_the_first_one_stays(database) -> None:
    cache = EmbeddingRepository(database.pool, database.admin)
    rng = np.random.default_rng(3)
    first = {f"hash-{i}": rng.random(384).tolist() for i in range(3)}
    await cache.remember("model-a", first)
    await cache.remember("model-a", {"hash-0": rng.random(384).tolist(), "hash-9": rng.random(384).tolist()})

    got = await cache.cached("model-a", ["hash-0", "hash-1", "hash-2", "hash-9", "unknown"])
    assert sorted(got) == ["hash-0", "hash-1", "hash-2", "hash-9"]
    for h, vector in first.items():  # float32 in the database: equal at that precision
        assert np.array_equal(np.float32(got[h]), np.float32(vector))
    assert await cache.cached("model-b", ["hash-0"]) == {}


async def test_writers_caching_the_same_texts_in_any_order_never_deadlock(database) -> None:
    """Concurrent writes embed overlapping texts (a batch and the masked texts `related` compares),
    each caching them in its own order: rows inserted in one order by all (by hash) cannot wait on
    each other in a cycle. In the order given, every run of this deadlocked (10-15 calls of 16)."""
    cache = EmbeddingRepository(database.pool, database.admin)
    rng = random.Random(7)
    vector = [0.25] * 384
    for round_ in range(6):
        hashes = [f"round-{round_}-hash-{i}" for i in range(40)]
        orders = [rng.sample(hashes, 30) for _ in range(16)]
        results = await asyncio.gather(*(cache.remember("model-a", dict.fromkeys(order, vector)) for order in orders),
                                       return_exceptions=True)
        assert [r for r in results if isinstance(r, BaseException)] == []
        assert len(await cache.cached("model-a", hashes)) == len(set().union(*orders))


async def test_the_unflushed_commit_does_not_outlive_the_statement(database) -> None:
    """The next transaction on the same connection (a memory's own) must still wait for its flush."""
    one = await asyncpg.create_pool(database.dsn, min_size=1, max_size=1, init=init_connection,
                                    reset=reset_connection)  # as the app pool: no RESET ALL
    try:
        cache = EmbeddingRepository(one)
        await cache.remember("model-a", {"hash-x": [0.5] * 384})
        async with one.acquire() as conn:
            assert await conn.fetchval("SHOW synchronous_commit") == "on"
        assert await cache.cached("model-a", ["hash-x"]) != {}
    finally:
        await one.close()


async def test_query_vectors_are_kept_for_the_most_recent_queries_only(database, settings) -> None:
    from mcp_memory.service import MemoryService

    service = await MemoryService.open(database, settings.model_copy(update={"query_cache_entries": 2}))
    vectors = service.vectors
    assert vectors is not None
    first = await vectors.query("where does Greta live")
    await vectors.query("what does Kwame drive")
    assert await vectors.query("where does Greta live") is first  # kept: the same vector object
    await vectors.query("who is on call")  # the least recently used, Kwame's, leaves
    assert list(vectors._queries) == ["where does Greta live", "who is on call"]
    none = await MemoryService.open(database, settings.model_copy(update={"query_cache_entries": 0}))
    assert none.vectors is not None
    await none.vectors.query("where does Greta live")
    assert not none.vectors._queries
