"""The vector index holds half-precision vectors; what a search or `related` reports and compares is
the exact distance, and a store made with the full-precision index gets the new one at its start."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import Principal, WriteItem
from mcp_memory.repository.embeddings import full_precision_index_name, index_name, model_literal
from mcp_memory.repository.related import nearest
from mcp_memory.service import MemoryService

from .conftest import memories_indexes


async def _vector_indexes(database: Database) -> dict[str, str]:
    return await memories_indexes(database, "hnsw")


async def test_a_store_with_the_full_precision_index_gets_the_half_precision_one_at_start(
        service: MemoryService, database: Database, settings: Settings, alice: Principal,
        caplog: pytest.LogCaptureFixture) -> None:
    """Built once, saying so, the old one dropped, and the store searched through it."""
    assert service.vectors is not None
    model, dimension = service.vectors.model, service.vectors.dimension
    await service.write_many(alice, [WriteItem(content=f"Note {i}: the rollout of service {i} is on Tuesday")
                                     for i in range(20)])
    old, new = full_precision_index_name(model, dimension), index_name(model, dimension)
    assert list(await _vector_indexes(database)) == [new]
    # The store as a version before half precision left it.
    await database.admin.execute(f"DROP INDEX {new}")
    await database.admin.execute(
        f"""CREATE INDEX {old} ON memories USING hnsw ((embedding::vector({dimension})) vector_cosine_ops)
            WHERE embedding_model = {model_literal(model)}""")
    with caplog.at_level(logging.WARNING, logger="mcp_memory.vectors"):
        restarted = (await compose(database, settings)).service
    assert "again in half precision, once" in caplog.text
    indexes = await _vector_indexes(database)
    assert list(indexes) == [new] and "halfvec_cosine_ops" in indexes[new]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mcp_memory.vectors"):
        await compose(database, settings)
    assert "half precision" not in caplog.text  # once
    found = await restarted.search(alice, "when is the rollout of service 7", limit=3)
    assert "Note 7:" in found.hits[0].snippet


async def test_a_walk_of_the_index_reports_exact_similarities(
        service: MemoryService, database: Database, alice: Principal, monkeypatch: pytest.MonkeyPatch) -> None:
    """Half precision moves a cosine by up to ~1e-5: the index only orders the walk, and the
    similarity `related` compares with its thresholds is computed on the stored vectors."""
    assert service.vectors is not None
    transaction = service.repo.transaction
    # What the planner prefers at this size, off: only the index orders by distance unsorted.
    monkeypatch.setattr(service.repo, "transaction", lambda p, **gucs: transaction(
        p, **gucs, enable_seqscan="off", enable_bitmapscan="off", enable_sort="off"))
    await service.write_many(alice, [WriteItem(content=f"Note {i}: the team moved standup to {i} o'clock")
                                     for i in range(30)])
    stored = {r["id"]: np.asarray(r["embedding"].to_list(), dtype=np.float64) for r in await database.admin.fetch(
        "SELECT id, embedding FROM memories WHERE deleted_at IS NULL")}
    query = np.asarray(await service.vectors.query("when is the standup now"), dtype=np.float64)
    rows = await nearest(service.repo, alice, query.tolist(), model=service.vectors.model,
                         dimension=service.vectors.dimension, limit=10, min_similarity=0.0)
    assert len(rows) == 10
    for row, similarity in rows:
        v = stored[row["id"]]
        exact = float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query)))
        assert abs(similarity - exact) < 1e-6, (similarity, exact)
