"""Memories: create, read, update, forget, restore, history. Every method takes the caller's
Principal and sees only what it may see; every mutation writes its history row in the same
transaction. Each stage is its own module; MemoryRepository is all of them on one pool."""

from __future__ import annotations

from .memory_forget import MemoryForget
from .memory_insert import MemoryInsert
from .memory_reads import MemoryReads
from .memory_rows import TRACKED, to_memory
from .memory_update import MemoryUpdate
from .turns import MemoryTurns

__all__ = ["TRACKED", "MemoryRepository", "to_memory"]


class MemoryRepository(MemoryInsert, MemoryUpdate, MemoryForget, MemoryReads, MemoryTurns):
    """insert / insert_many (memory_insert.py), update (memory_update.py), soft_delete / restore
    (memory_forget.py), peek_many / get_many / list / history (memory_reads.py), the turn before an
    episode (turns.py), over the transaction, history and row lookup they share (memory_store.py)."""
