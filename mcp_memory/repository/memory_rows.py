"""Memory rows: the model a row becomes, the tracked fields its history keeps, and the rule a
change applies to rows a confined credential may read but not change. Shared by every stage of
MemoryRepository (memories.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from ..errors import PermissionDenied
from ..models import Memory, Principal, ScopeInfo, human_age, memory_uri

# Fields whose old and new values the history keeps.
TRACKED = ("kind", "title", "content", "tags", "metadata", "importance", "confidence", "pinned",
           "priority", "source", "occurred_at", "agent_id", "project_id", "superseded_by")


def to_memory(row: asyncpg.Record, now: datetime | None = None) -> Memory:
    return Memory(
        id=row["id"],
        uri=memory_uri(row["id"]),
        kind=row["kind"],
        title=row["title"],
        content=row["content"],
        tags=list(row["tags"]),
        metadata=row["metadata"],
        importance=round(row["importance"], 4),
        confidence=round(row["confidence"], 4),
        pinned=row["pinned"],
        priority=row["priority"],
        source=row["source"],
        scope=ScopeInfo.of(row["agent_id"], row["project_id"]),
        occurred_at=row["occurred_at"],
        age=human_age(row["occurred_at"], now),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
        access_count=row["access_count"],
        last_accessed=row["last_accessed"],
        deleted_at=row["deleted_at"],
        deleted_reason=row["deleted_reason"],
        # A read names the successor only while it is live and visible (sql.py `successor`); a row
        # just written or changed names what it stores.
        superseded_by=row.get("successor", row["superseded_by"]),
    )


def _snapshot(row: asyncpg.Record | dict[str, Any], fields: Iterable[str] = TRACKED) -> dict[str, Any]:
    return {k: row[k] for k in fields}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float | int):
        return math.isclose(a, b, abs_tol=1e-6)  # real columns round-trip inexactly
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return a == b


def _ids_text(ids: Iterable[UUID]) -> str:
    return ", ".join(str(i) for i in ids)


def _own(p: Principal, rows: Iterable[asyncpg.Record], verb: str) -> None:
    """A credential limited to some agents / projects reads what they share with others but
    changes only what is theirs."""
    shared = [r["id"] for r in rows if (p.agent_confined and r["agent_id"] is None)
              or (p.project_confined and r["project_id"] is None)]
    if shared:
        raise PermissionDenied(f"memory {_ids_text(shared)} is shared beyond this credential's agents and "
                               f"projects; it cannot {verb} it. Nothing was changed")

