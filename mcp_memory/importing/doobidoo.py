"""doobidoo's mcp-memory-service: its SQLite-vec database file (`sqlite_vec.db`).

Read with plain sqlite3, read-only: the memories live in an ordinary table (the sqlite-vec
extension is only needed for the vectors, which are embedded again here). As written by
mcp-memory-service 12.4.0:

    memories(id INTEGER PRIMARY KEY, content_hash TEXT UNIQUE, content TEXT, tags TEXT  -- "a,b"
             memory_type TEXT, metadata TEXT  -- JSON object, created_at REAL  -- unix seconds
             updated_at REAL, created_at_iso TEXT, updated_at_iso TEXT, deleted_at REAL  -- tombstone
             store TEXT, parent_id TEXT, version INTEGER, confidence REAL, last_accessed INTEGER,
             superseded_by TEXT  -- a newer version's content_hash, embedding_pending INTEGER)

Deleted rows (`deleted_at`) and superseded versions (`superseded_by`, which the peer's own search
hides) stay out. The peer's type goes to our kind where one fits, and is kept in metadata."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..models import Kind
from . import Draft

SOURCE = "mcp-memory-service"
SQLITE_MAGIC = b"SQLite format 3\x00"
REQUIRED = {"content_hash", "content", "tags", "memory_type", "metadata", "created_at", "deleted_at"}
# The peer's memory types (its ontology, base types and subtypes) that name one of our kinds.
KINDS: dict[str, Kind] = {
    "decision": "decision", "architecture": "decision", "tool_choice": "decision", "approach": "decision",
    "configuration": "decision",
    "preference": "preference", "preference_signal": "preference",
    "reference": "fact", "learning": "fact", "insight": "fact", "best_practice": "fact", "gotcha": "fact",
    "error": "fact", "bug": "fact", "failure": "fact", "mistake": "fact", "pattern": "fact",
    "workflow": "procedure", "procedure": "procedure",
    "meeting": "episode", "conversation": "episode", "conversation_turn": "episode", "session": "episode",
    "milestone": "episode", "ceremony": "episode", "observation": "note", "note": "note", "document": "note",
}


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    # Text that is not UTF-8 is read, not fatal, so that the refusal can name its row.
    conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    return conn


def looks_like(path: Path) -> bool:
    """An SQLite file with the peer's `memories` table."""
    if not is_sqlite(path):
        return False
    try:
        conn = _connect(path)
        try:
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(memories)")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return REQUIRED <= columns


def _tags(raw: str | None) -> list[str]:
    if not raw:
        return []
    if raw.lstrip().startswith("["):  # some versions stored a JSON list
        try:
            given = json.loads(raw)
        except json.JSONDecodeError:
            given = None
        if isinstance(given, list):
            return [str(t).strip() for t in given if str(t).strip()]
    return [t.strip() for t in raw.split(",") if t.strip()]


def _when(seconds: Any, iso: str | None) -> datetime | None:
    if isinstance(seconds, int | float):
        return datetime.fromtimestamp(seconds, UTC)
    if iso:
        return datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return None


def _draft(row: sqlite3.Row, columns: set[str]) -> Draft:
    record = f"memories row id {row['id']} (content_hash {str(row['content_hash'])[:12]}…)"
    content = row["content"]
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"{record}: no text")
    for column in ("content", "tags", "memory_type", "metadata"):
        try:
            str(row[column] or "").encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{record}: its {column} is not UTF-8 text") from None
    try:
        given = json.loads(row["metadata"]) if row["metadata"] else {}
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{record}: metadata is not JSON ({exc.msg})") from None
    if not isinstance(given, dict):
        raise InvalidInput(f"{record}: metadata is not a JSON object")
    iso = row["created_at_iso"] if "created_at_iso" in columns else None
    try:
        occurred = _when(row["created_at"], iso)
    except (ValueError, OverflowError, OSError):
        raise InvalidInput(f"{record}: created_at is not a time ({row['created_at']!r}, created_at_iso {iso!r})") \
            from None
    peer_type = row["memory_type"] or "note"
    metadata = {("original_" + k if k in ("source", "original_id", "original_type") else k): v
                for k, v in given.items()}
    metadata.update({"source": SOURCE, "original_id": row["content_hash"], "original_type": peer_type})
    if "parent_id" in columns and row["parent_id"]:
        metadata["original_parent_id"] = row["parent_id"]
    if "store" in columns and row["store"] not in (None, "", "default"):  # the peer's named partitions
        metadata["original_store"] = row["store"]
    return Draft(content=content, kind=KINDS.get(peer_type, "note"), tags=_tags(row["tags"]), metadata=metadata,
                 occurred_at=occurred, record=record)


def read(path: Path) -> list[Draft]:
    """Every live, current memory of the peer's database, oldest first; a row it cannot read is
    refused, naming it (the caller then writes nothing)."""
    try:
        conn = _connect(path)
        try:
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(memories)")}
            live = "deleted_at IS NULL" + (" AND superseded_by IS NULL" if "superseded_by" in columns else "")
            rows = conn.execute(f"SELECT * FROM memories WHERE {live} ORDER BY created_at, id").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: cannot read the mcp-memory-service database ({exc})") from None
    return [_draft(row, columns) for row in rows]
