"""A user's memories exported as `mcp-memory export` writes them, each with its vector."""

from __future__ import annotations

import io
import json
import uuid

import asyncpg

from mcp_memory.importers import export_user
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService


async def exported_with_vectors(service: MemoryService, admin: asyncpg.Pool, user_id: str) -> str:
    """The export's JSON lines (a header, then a memory a line), vectors of the service's model."""
    assert service.vectors is not None
    out = io.StringIO()
    await export_user(MaintenanceRepository(admin), user_id, out,
                      vectors=(service.vectors.model, service.vectors.dimension), turns=service.vectors.turns)
    return out.getvalue()


def copied(record: dict, **memory: object) -> dict:
    """An exported record under a new id (its history with it), `memory`'s fields changed too: the
    same memory as another store's, or another namespace's. A line that is no memory's (an
    entity, an edit) is as it was."""
    if record["type"] != "memory":
        return record
    moved = {**record["memory"], **memory, "id": str(uuid.uuid4())}
    return {**record, "memory": moved, "history": [{**h, "memory_id": moved["id"]} for h in record["history"]]}


def as_version_1(export: str, structure: list[dict | None]) -> str:
    """An export as version 1 wrote it: no graph, and per memory what its writer said of it."""
    lines = [json.loads(line) for line in export.splitlines()]
    memories = [r for r in lines if r["type"] == "memory"]
    for r, said in zip(memories, structure, strict=True):
        del r["graph"]
        if said is not None:
            r["structure"] = said
    return "".join(json.dumps(r) + "\n" for r in [{**lines[0], "version": 1}, *memories])
