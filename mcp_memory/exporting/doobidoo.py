"""What doobidoo's mcp-memory-service (12.4.0) imports: the JSON its `MemoryExporter` writes and its
`MemoryImporter.import_from_json` reads (mcp_memory_service/sync/):

    {"export_metadata": {"source_machine", "export_timestamp", "total_memories", ...},
     "memories": [{"content", "content_hash", "tags": [...], "created_at": unix seconds,
                   "updated_at": unix seconds, "memory_type", "metadata": {...}, "store"}]}

The peer deduplicates by `content_hash`, its own: SHA-256 of the text stripped and lower-cased
(utils/hashing.py `generate_content_hash`), so the same text in two of our namespaces is one memory
there. `memory_type` must be in its ontology (else it becomes `observation`): a memory it gave us
goes back with its own type, ours by kind (the types our importer reads back as that kind)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, TextIO

from . import ours

SOURCE_MACHINE = "mcp-memory"
TYPES = {"fact": "reference", "preference": "preference_signal", "decision": "decision", "procedure": "workflow",
         "episode": "conversation", "session_summary": "session", "identity": "note", "note": "note"}


def content_hash(content: str) -> str:
    return hashlib.sha256(content.strip().lower().encode("utf-8")).hexdigest()


def _seconds(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def record(memory: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(memory.get("metadata") or {})
    mine = metadata.get("source") == "mcp-memory-service"  # imported from the peer: its type and store
    peer_type = metadata.get("original_type") if mine else None
    store = metadata.get("original_store") if mine else None
    metadata.update(ours(memory))
    if memory.get("title"):
        metadata["mcp_memory_title"] = memory["title"]
    created = memory.get("occurred_at") or memory.get("created_at")
    return {"content": memory["content"], "content_hash": content_hash(memory["content"]),
            "tags": list(memory.get("tags") or []), "created_at": _seconds(created),
            "updated_at": _seconds(memory.get("updated_at") or created),
            "memory_type": peer_type or TYPES.get(memory["kind"], "note"), "metadata": metadata,
            "store": store or "default"}


def write(memories: list[dict[str, Any]], out: TextIO, *, exported_by: str) -> int:
    """The peer's export file of `memories`, the first of each peer content hash; returns how many."""
    seen: set[str] = set()
    records = []
    for memory in memories:
        one = record(memory)
        if one["content_hash"] not in seen:
            seen.add(one["content_hash"])
            records.append(one)
    meta = {"source_machine": SOURCE_MACHINE, "export_timestamp": datetime.now(UTC).isoformat(),
            "total_memories": len(records), "include_embeddings": False, "filter_tags": None,
            "stores": sorted({r["store"] for r in records}) or ["default"], "exporter_version": exported_by}
    json.dump({"export_metadata": meta, "memories": records}, out, indent=2, ensure_ascii=False, default=str)
    out.write("\n")
    return len(records)
