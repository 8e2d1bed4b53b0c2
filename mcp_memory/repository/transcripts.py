"""Capture cursors: how much of each transcript is already stored (sql/010_transcript_cursors.sql),
and the lock that keeps two hook runs on one transcript from storing the same turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from uuid import UUID

from ..models import Principal
from .memories import MemoryRepository


@dataclass(frozen=True)
class Cursor:
    transcript: str
    hashes: list[str] = field(default_factory=list)
    memory_ids: list[UUID] = field(default_factory=list)   # the episode of each turn
    rewrites: int = 0

    @property
    def turns(self) -> int:
        return len(self.hashes)


class TranscriptRepository:
    def __init__(self, memories: MemoryRepository) -> None:
        self.memories = memories

    @asynccontextmanager
    async def locked(self, p: Principal, transcript: str) -> AsyncIterator[None]:
        """Hold a session-level advisory lock on (user, transcript) while the caller reads the
        cursor, stores the new turns and moves the cursor: a concurrent run waits, then finds the
        cursor moved and stores nothing twice. Session-level, not a row lock, because embedding
        happens meanwhile and no transaction may stay open across it; a process killed mid-way
        drops its connection and with it the lock."""
        key = f"mcp_memory.capture\x1f{p.user_id}\x1f{transcript}"
        async with self.memories.pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", key)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)

    async def get(self, p: Principal, transcript: str) -> Cursor | None:
        async with self.memories.transaction(p) as conn:
            row = await conn.fetchrow(
                "SELECT hashes, memory_ids, rewrites FROM transcript_cursors WHERE user_id = $1 AND transcript = $2",
                p.user_id, transcript)
        return Cursor(transcript, list(row["hashes"]), list(row["memory_ids"]), row["rewrites"]) if row else None

    async def save(self, p: Principal, transcript: str, hashes: list[str], memory_ids: list[UUID], *,
                   session_id: str | None, path: str | None, rewritten: bool) -> None:
        async with self.memories.transaction(p) as conn:
            await conn.execute(
                """INSERT INTO transcript_cursors (user_id, transcript, agent_id, project_id, session_id, path,
                                                   turns, hashes, memory_ids, rewrites)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::int)
                   ON CONFLICT (user_id, transcript) DO UPDATE
                   SET turns = EXCLUDED.turns, hashes = EXCLUDED.hashes, memory_ids = EXCLUDED.memory_ids,
                       path = EXCLUDED.path,
                       session_id = coalesce(EXCLUDED.session_id, transcript_cursors.session_id),
                       rewrites = transcript_cursors.rewrites + EXCLUDED.rewrites, updated_at = now()""",
                p.user_id, transcript, p.agent_id, p.project_id, session_id, path, len(hashes), hashes,
                memory_ids, int(rewritten))
