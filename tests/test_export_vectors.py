"""Our export carries each memory's vector, and an import takes them (checked on a sample) instead
of embedding a moved store again (importing/export_vectors.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import import_paths
from mcp_memory.models import Principal, WriteItem
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .exports import exported_with_vectors

TOPICS = ("the build cache", "the staging cluster", "the billing service", "the release train", "the on-call rota",
          "the search index", "the design review", "the data pipeline", "the mobile app", "the status page")


async def _vectors(db: Database) -> dict[str, np.ndarray | None]:
    rows = await db.admin.fetch("SELECT content, embedding FROM memories")
    return {r["content"]: None if r["embedding"] is None else r["embedding"].to_numpy() for r in rows}


@pytest.fixture
async def exported(service: MemoryService, database: Database, alice: Principal,
                   tmp_path: Path) -> tuple[Path, dict[str, np.ndarray | None]]:
    """120 memories of alice's (real MiniLM vectors), exported with them."""
    texts = [f"Note {i}: {TOPICS[i % 10]} changed owner in week {i} after the incident review." for i in range(118)]
    await service.write_many(alice, [WriteItem(content=t) for t in [*texts, "Short one.", "Tiny."]])
    dump = tmp_path / "export.jsonl"
    dump.write_text(await exported_with_vectors(service, database.admin, alice.user_id))
    assert len(dump.read_text().splitlines()) == 1 + 120
    return dump, await _vectors(database)


def _edited(dump: Path, edit: Callable[[list[dict]], None]) -> Path:
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    edit(records)
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    return dump


async def test_an_import_takes_the_exports_vectors_and_embeds_only_its_check(
        exported, empty_store, alice: Principal) -> None:
    dump, source = exported
    header = json.loads(dump.read_text().splitlines()[0])
    assert header["embedding"] == {"model": "all-MiniLM-L6-v2-int8", "dimension": 384, "encoding": "base64-float32-le",
                                   "turns": {"weight": 0.0, "minutes": 0.0}}
    target, db = empty_store
    report = await import_paths(target, MaintenanceRepository(db.admin), alice, [dump], progress=False)
    assert report.created == 120
    [line] = report.embedding
    assert line.startswith("export.jsonl: took the export's vectors for ") and "every one matched" in line
    taken = int(line.split("for ")[1].split(" ")[0])
    imported = await _vectors(db)
    # The sample the check re-embedded waits for the backfill (its vectors are in the cache).
    assert sum(v is None for v in imported.values()) == 120 - taken and 70 <= taken < 120
    for text, vector in imported.items():
        if vector is not None:
            assert np.array_equal(vector, source[text])  # the very vectors, not embedded again
    assert target.vectors is not None and await target.vectors.backfill(reembed=False, progress=False) == 120 - taken
    for text, vector in (await _vectors(db)).items():
        assert vector is not None and float(np.dot(vector, source[text])) > 0.9999
    found = await target.search(alice, "who owns the staging cluster now", limit=5)
    assert any("the staging cluster" in h.snippet for h in found.hits)


async def test_vectors_of_another_model_or_that_do_not_match_it_are_not_taken(
        exported, empty_store, alice: Principal) -> None:
    dump, _ = exported
    target, db = empty_store
    maintenance = MaintenanceRepository(db.admin)

    def rotated(records: list[dict]) -> None:  # each memory given the next one's vector
        vectors = [r["vector"] for r in records[1:]]
        for r, v in zip(records[1:], vectors[1:] + vectors[:1], strict=True):
            r["vector"] = v

    report = await import_paths(target, maintenance, alice, [_edited(dump, rotated)], progress=False)
    assert report.created == 120 and "the export's vectors are not all-MiniLM-L6-v2-int8's" in report.embedding[0]
    assert all(v is None for v in (await _vectors(db)).values())

    await db.admin.execute("DELETE FROM memories")

    def renamed(records: list[dict]) -> None:
        records[0]["embedding"]["model"] = "text-embedding-3-small"

    report = await import_paths(target, maintenance, alice, [_edited(dump, renamed)], progress=False)
    assert report.embedding == ["export.jsonl: embedded its memories again with all-MiniLM-L6-v2-int8: its vectors "
                                "are text-embedding-3-small's"]
    assert all(v is None for v in (await _vectors(db)).values())


@pytest.mark.parametrize(("edit", "error"), [
    (lambda rs: rs[2].update(vector="AAAA"), "line 3: vector must be 384 float32 values as base64"),
    (lambda rs: rs[0].pop("embedding"), "line 2: a vector, but the header names no embedding model"),
    (lambda rs: rs[0]["embedding"].update(encoding="float16"), "line 1: embedding must be {'model': NAME"),
    (lambda rs: rs[0]["embedding"].update(turns={"weight": 2, "minutes": 30}), "line 1: embedding.turns must be"),
])
async def test_a_vector_it_cannot_read_refuses_the_file_naming_the_line(
        exported, empty_store, alice: Principal, edit, error: str) -> None:
    dump, _ = exported
    target, db = empty_store
    with pytest.raises(InvalidInput, match="nothing was imported") as refused:
        await import_paths(target, MaintenanceRepository(db.admin), alice, [_edited(dump, edit)], progress=False)
    assert error in str(refused.value)
    assert await db.admin.fetchval("SELECT count(*) FROM memories") == 0
