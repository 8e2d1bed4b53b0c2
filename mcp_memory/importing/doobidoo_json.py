"""doobidoo's mcp-memory-service export JSON: what its `MemoryExporter.export_to_json` writes (and
its `MemoryImporter` reads), from any of its backends (sqlite-vec, Cloudflare, hybrid), so a store
that is not a local sqlite_vec.db can be brought over too; also what `mcp-memory export --to
doobidoo-json` writes.

    {"export_metadata": {"source_machine", "export_timestamp", ...},
     "memories": [{"content", "content_hash", "tags": [...], "created_at": unix seconds,
                   "updated_at", "memory_type", "metadata": {...}, "store"}]}

Read as the database is (importing/doobidoo.py): the peer's type to our kind where one fits (kept as
`original_type`), its content hash as `original_id`, a named store as `original_store`. An export
the peer wrote with `include_embeddings` carries each memory's vector (`"embedding": [...]`):
`stored_vectors` reads them, for importers.py to take if they are our model's (peer_vectors.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from ..errors import InvalidInput
from . import Draft
from .doobidoo import KINDS, MAX_TOKENS, SOURCE
from .peer_vectors import StoredVectors


def looks_like(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("export_metadata"), dict)
            and isinstance(data.get("memories"), list))


def _when(item: dict[str, Any], record: str) -> datetime | None:
    value = item.get("created_at")
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
        iso = value if isinstance(value, str) else item.get("created_at_iso")
        return datetime.fromisoformat(iso.replace("Z", "+00:00")) if isinstance(iso, str) and iso else None
    except (ValueError, OverflowError, OSError):
        raise InvalidInput(f"{record}: created_at {value!r} is not a time") from None


def read(data: Any) -> list[Draft]:
    if not looks_like(data):
        raise InvalidInput("not an mcp-memory-service export (an object with export_metadata and memories)")
    out: list[Draft] = []
    for index, item in enumerate(data["memories"]):
        record = f"memories[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{record}: not an object")
        record += f" (content_hash {str(item.get('content_hash'))[:12]}…)"
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput(f"{record}: no text in 'content'")
        given = item.get("metadata") or {}
        if not isinstance(given, dict):
            raise InvalidInput(f"{record}: metadata is not a JSON object")
        tags = item.get("tags") or []
        if isinstance(tags, str):
            tags = tags.split(",")
        if not isinstance(tags, list):
            raise InvalidInput(f"{record}: tags is neither a list nor a string")
        peer_type = str(item.get("memory_type") or "note")
        metadata = {("original_" + k if k in ("source", "original_id", "original_type") else k): v
                    for k, v in given.items()}
        metadata.update({"source": SOURCE, "original_type": peer_type,
                         **({"original_id": item["content_hash"]} if item.get("content_hash") else {})})
        if item.get("store") not in (None, "", "default"):
            metadata["original_store"] = item["store"]
        out.append(Draft(content=content, kind=KINDS.get(peer_type, "note"), metadata=metadata,
                         tags=[str(t).strip() for t in tags if str(t).strip()], occurred_at=_when(item, record),
                         record=record))
    return out


def stored_vectors(data: Any) -> StoredVectors:
    """Each memory's vector (by content_hash), when the export carries them, all of one length."""
    found: dict[str, np.ndarray] = {}
    for item in data.get("memories", []) if looks_like(data) else []:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if isinstance(vector, list) and vector and isinstance(item.get("content_hash"), str):
            try:
                found[item["content_hash"]] = np.asarray(vector, dtype=np.float32)
            except (TypeError, ValueError):
                return StoredVectors(why_none=f"the vector of {item['content_hash'][:12]}… is not a list of numbers")
    if not found:
        return StoredVectors(why_none="the export carries no vectors (the peer's exporter adds them only when asked)")
    shapes = {v.shape for v in found.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        return StoredVectors(why_none=f"its vectors are of several lengths ({sorted(s[0] for s in shapes)})")
    return StoredVectors(dimension=next(iter(shapes))[0], by_key=found, max_tokens=MAX_TOKENS)
