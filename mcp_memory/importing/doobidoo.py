"""doobidoo's mcp-memory-service: its SQLite-vec database file (`sqlite_vec.db`).

Read with plain sqlite3, read-only: the memories live in an ordinary table. As written by
mcp-memory-service 12.4.0:

    memories(id INTEGER PRIMARY KEY, content_hash TEXT UNIQUE, content TEXT, tags TEXT  -- "a,b"
             memory_type TEXT, metadata TEXT  -- JSON object, created_at REAL  -- unix seconds
             updated_at REAL, created_at_iso TEXT, updated_at_iso TEXT, deleted_at REAL  -- tombstone
             store TEXT, parent_id TEXT, version INTEGER, confidence REAL, last_accessed INTEGER,
             superseded_by TEXT  -- a newer version's content_hash, embedding_pending INTEGER)

Deleted rows (`deleted_at`) and superseded versions (`superseded_by`, which the peer's own search
hides) stay out. The peer's type goes to our kind where one fits, and is kept in metadata.

Its vectors (`stored_vectors`) are read without the sqlite-vec extension (which many Pythons cannot
load), from the tables behind its `memory_embeddings` vec0 table, as sqlite-vec 0.1 lays them out:

    memory_embeddings            CREATE VIRTUAL TABLE ... USING vec0(content_embedding FLOAT[384] ...)
    memory_embeddings_rowids     (rowid = memories.id, id, chunk_id, chunk_offset)
    memory_embeddings_chunks     (chunk_id, size, validity BLOB -- a bit per slot, rowids BLOB -- int64 per slot)
    memory_embeddings_vector_chunks00 (rowid = chunk_id, vectors BLOB -- size x dimension float32)

Every slot read is cross-checked (its validity bit set, the chunk naming the same rowid), and a
layout that does not fit gives no vectors at all. The peer records the vectors' dimension (in the
table's declaration) but not which model made them: importers.py re-embeds a sample to find out
(peer_vectors.py) before it takes any, and never takes the vector of a text longer than the peer's
cut (`MAX_TOKENS`)."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..models import Kind
from . import Draft
from .peer_vectors import StoredVectors

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


#: The peer's cut: its ONNX MiniLM (the default) reads the tokenizer.json it ships with, which stops
#: at 128 tokens (special ones included; sentence-transformers' and ours stop at 256). Its vector of
#: a longer text is of the beginning only (peer_vectors.py embeds those texts itself).
MAX_TOKENS = 128


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    # Text that is not UTF-8 is read, not fatal, so that the refusal can name its row.
    conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    return conn


def _columns(path: Path) -> set[str]:
    conn = _connect(path)
    try:
        return {row["name"] for row in conn.execute("PRAGMA table_info(memories)")}
    finally:
        conn.close()


def looks_like(path: Path) -> bool:
    """An SQLite file with the peer's `memories` table."""
    if not is_sqlite(path):
        return False
    try:
        return REQUIRED <= _columns(path)
    except sqlite3.Error:
        return False


def not_its(path: Path) -> str:
    """Why an SQLite file is not read as the peer's database: another database, or one SQLite
    cannot read (a copy cut short, or taken while it was being written)."""
    try:
        _columns(path)
    except sqlite3.Error as exc:
        return f"an SQLite database that cannot be read ({exc})"
    return "an SQLite database but not mcp-memory-service's"


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
            rows = conn.execute(f"SELECT * FROM memories WHERE {_live(columns)} ORDER BY created_at, id").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise InvalidInput(f"{path}: cannot read the mcp-memory-service database ({exc})") from None
    return [_draft(row, columns) for row in rows]


def _live(columns: set[str], alias: str = "") -> str:
    """The rows read: live and current."""
    return f"{alias}deleted_at IS NULL" + (f" AND {alias}superseded_by IS NULL" if "superseded_by" in columns else "")


def stored_vectors(path: Path) -> StoredVectors:
    """The peer's vector of each live memory (by content_hash), as stored (float32), or why there
    are none. Rows the peer marks `embedding_pending` (their vector may be stale) are left out."""
    try:
        conn = _connect(path)
        try:
            return _stored_vectors(conn)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError) as exc:
        return StoredVectors(why_none=f"its vector tables cannot be read ({exc})")


def _stored_vectors(conn: sqlite3.Connection) -> StoredVectors:
    declared = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memory_embeddings'"
                            ).fetchone()
    if declared is None:
        return StoredVectors(why_none="it holds no vectors (no memory_embeddings table)")
    vector_columns = re.findall(r"(\w+)\s+float\[(\d+)\]", declared["sql"], re.IGNORECASE)
    if len(vector_columns) != 1:
        return StoredVectors(why_none="its memory_embeddings table is not the one vector column it should be")
    dimension = int(vector_columns[0][1])
    metric = re.search(r"distance_metric\s*=\s*(\w+)", declared["sql"], re.IGNORECASE)
    tables = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    needed = {"memory_embeddings_rowids", "memory_embeddings_chunks", "memory_embeddings_vector_chunks00"}
    if not needed <= tables:
        return StoredVectors(dimension=dimension, why_none="its vectors are not laid out as sqlite-vec 0.1 does")
    columns = {row["name"] for row in conn.execute("PRAGMA table_info(memories)")}
    pending = " AND (m.embedding_pending IS NULL OR m.embedding_pending = 0)" if "embedding_pending" in columns else ""
    rows = conn.execute(
        f"""SELECT m.id, m.content_hash, r.chunk_id, r.chunk_offset FROM memories m
            JOIN memory_embeddings_rowids r ON r.rowid = m.id
            WHERE {_live(columns, "m.")}{pending} ORDER BY r.chunk_id, r.chunk_offset""").fetchall()
    by_chunk: dict[int, list[sqlite3.Row]] = {}
    for row in rows:
        by_chunk.setdefault(row["chunk_id"], []).append(row)
    found: dict[str, np.ndarray] = {}
    for chunk_id, members in by_chunk.items():
        chunk = conn.execute("SELECT size, validity, rowids FROM memory_embeddings_chunks WHERE chunk_id = ?",
                             (chunk_id,)).fetchone()
        blob = conn.execute("SELECT vectors FROM memory_embeddings_vector_chunks00 WHERE rowid = ?",
                            (chunk_id,)).fetchone()
        if chunk is None or blob is None:
            return StoredVectors(dimension=dimension, why_none=f"its vector chunk {chunk_id} is missing")
        size, validity, slots = chunk["size"], chunk["validity"], chunk["rowids"]
        vectors = blob["vectors"]
        if (not isinstance(size, int) or not isinstance(validity, bytes) or not isinstance(slots, bytes)
                or not isinstance(vectors, bytes) or len(validity) * 8 < size or len(slots) != 8 * size
                or len(vectors) != 4 * dimension * size):
            return StoredVectors(dimension=dimension, why_none=f"its vector chunk {chunk_id} is not laid out as "
                                 "sqlite-vec 0.1 does")
        matrix = np.frombuffer(vectors, dtype="<f4").reshape(size, dimension)
        owners = np.frombuffer(slots, dtype="<i8")
        for row in members:
            offset = row["chunk_offset"]
            if not (isinstance(offset, int) and 0 <= offset < size and validity[offset // 8] >> (offset % 8) & 1
                    and int(owners[offset]) == row["id"]):
                return StoredVectors(dimension=dimension, why_none=f"the vector of memories row id {row['id']} is "
                                     "not where sqlite-vec 0.1 keeps it")
            found[row["content_hash"]] = matrix[offset].astype(np.float32)
    return StoredVectors(dimension=dimension, by_key=found, metric=metric.group(1).lower() if metric else None,
                         max_tokens=MAX_TOKENS)
