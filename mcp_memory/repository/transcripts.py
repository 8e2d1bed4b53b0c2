"""Capture cursors: how much of each transcript is already stored (sql/010_transcript_cursors.sql),
what of it could not be stored as it was (sql/012_capture_skips.sql), and the lock that keeps two
hook runs on one transcript from storing the same turns."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from ..models import Principal
from .memories import MemoryRepository
from .sql import through_pooler

MAX_PROBLEMS = 100   # the newest kept: a transcript that keeps failing must not grow its row forever


@dataclass(frozen=True)
class CursorProblems:
    transcript: str
    path: str | None
    project_id: str | None
    turns: int
    problems: list[dict[str, Any]]
    updated_at: datetime


@dataclass(frozen=True)
class Cursor:
    transcript: str
    hashes: list[str] = field(default_factory=list)
    # The episode of each turn; None for a turn the store refused (skipped, its reason in problems).
    memory_ids: list[UUID | None] = field(default_factory=list)
    rewrites: int = 0
    # {"what": "cleaned" | "cut" | "skipped" | "unreadable line" | …, "turn" or "line": n, "reason", "at"}
    problems: list[dict[str, Any]] = field(default_factory=list)

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
        drops its connection and with it the lock. Through a pooler in transaction mode a session lock
        and its unlock may land on two server connections (the lock then held for good): there the
        lock is transaction-level, in a transaction that holds one server connection meanwhile."""
        key = f"mcp_memory.capture\x1f{p.user_id}\x1f{transcript}"
        async with self.memories.pool.acquire() as conn:
            if through_pooler(conn):
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)
                    yield
                return
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", key)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)

    async def get(self, p: Principal, transcript: str) -> Cursor | None:
        async with self.memories.transaction(p) as conn:
            row = await conn.fetchrow(
                "SELECT hashes, memory_ids, rewrites, problems FROM transcript_cursors "
                "WHERE user_id = $1 AND transcript = $2", p.user_id, transcript)
        if not row:
            return None
        return Cursor(transcript, list(row["hashes"]), list(row["memory_ids"]), row["rewrites"],
                      _problems(row["problems"]))

    async def with_problems(self, p: Principal, limit: int = 50) -> list[CursorProblems]:
        """The user's transcripts with turns that were cleaned, cut or skipped, newest first."""
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                """SELECT transcript, path, project_id, turns, problems, updated_at FROM transcript_cursors
                   WHERE user_id = $1 AND problems <> '[]'::jsonb ORDER BY updated_at DESC LIMIT $2""",
                p.user_id, limit)
        return [CursorProblems(r["transcript"], r["path"], r["project_id"], r["turns"], _problems(r["problems"]),
                               r["updated_at"]) for r in rows]

    async def save(self, p: Principal, transcript: str, hashes: list[str], memory_ids: list[UUID | None], *,
                   session_id: str | None, path: str | None, rewritten: bool,
                   problems: list[dict[str, Any]] | None = None) -> None:
        """`problems` replaces the recorded ones when given (the caller merged old and new)."""
        async with self.memories.transaction(p) as conn:
            await conn.execute(
                """INSERT INTO transcript_cursors (user_id, transcript, agent_id, project_id, session_id, path,
                                                   turns, hashes, memory_ids, rewrites, problems)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::int, coalesce($11::jsonb, '[]'::jsonb))
                   ON CONFLICT (user_id, transcript) DO UPDATE
                   SET turns = EXCLUDED.turns, hashes = EXCLUDED.hashes, memory_ids = EXCLUDED.memory_ids,
                       path = EXCLUDED.path,
                       problems = coalesce($11::jsonb, transcript_cursors.problems),
                       session_id = coalesce(EXCLUDED.session_id, transcript_cursors.session_id),
                       rewrites = transcript_cursors.rewrites + EXCLUDED.rewrites, updated_at = now()""",
                p.user_id, transcript, p.agent_id, p.project_id, session_id, path, len(hashes), hashes,
                memory_ids, int(rewritten), None if problems is None else problems[-MAX_PROBLEMS:])


def _problems(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):  # a connection without the JSON codec
        value = json.loads(value)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


async def problem_counts(conn: Any) -> tuple[int, int]:
    """Over every user (doctor connects as the owner): transcripts with recorded problems, and
    turns skipped among them."""
    row = await conn.fetchrow(
        """SELECT count(DISTINCT c.transcript) AS transcripts,
                  count(*) FILTER (WHERE e->>'what' = 'skipped') AS skipped
           FROM transcript_cursors c, jsonb_array_elements(c.problems) e""")
    return int(row["transcripts"]), int(row["skipped"])
