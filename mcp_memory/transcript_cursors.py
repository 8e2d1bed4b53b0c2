"""Capture's cursors, in the service layer: how much of each transcript is stored, what of it could
not be stored as written, and the lock that keeps two runs on one transcript from storing the same
turns (repository/transcripts.py keeps them). Capture reaches them here, under the service's rules:
a run that stores turns (and reads the cursor it resumes from) needs `write`, reading what went
wrong needs `read`, a cursor is its user's (the principal's), and its key fits the index it is kept
in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

from .errors import InvalidInput
from .models import Principal
from .permissions import require
from .repository import MemoryRepository
from .repository.transcripts import Cursor, CursorProblems, TranscriptRepository

__all__ = ["KEY_CHARS", "Cursor", "CursorProblems", "TranscriptCursors"]

KEY_CHARS = 400   # a cursor's key is in a btree index, which refuses rows of more than ~2700 bytes


def _key(key: str) -> str:
    if len(key) > KEY_CHARS:
        raise InvalidInput(f"transcript: a cursor's key has at most {KEY_CHARS} characters, got {len(key)}")
    return key


class TranscriptCursors:
    def __init__(self, repo: MemoryRepository) -> None:
        self.cursors = TranscriptRepository(repo)

    @asynccontextmanager
    async def locked(self, p: Principal, transcript: str) -> AsyncIterator[None]:
        """The transcript's run: while it is held, a concurrent run on it waits (then finds the
        cursor moved and stores nothing twice)."""
        require(p, "write")
        async with self.cursors.locked(p, _key(transcript)):
            yield

    async def get(self, p: Principal, transcript: str) -> Cursor:
        """The cursor a run resumes from; an empty one when nothing of the transcript is stored yet."""
        require(p, "write")
        return await self.cursors.get(p, _key(transcript)) or Cursor(transcript)

    async def save(self, p: Principal, transcript: str, hashes: list[str], memory_ids: list[UUID | None], *,
                   session_id: str | None, path: str | None, rewritten: bool,
                   problems: list[dict[str, Any]] | None = None) -> None:
        """Where the transcript's run ended: a hash and an episode (None: refused) per turn;
        `problems` replaces the recorded ones when given (the caller merged old and new)."""
        require(p, "write")
        await self.cursors.save(p, _key(transcript), hashes, memory_ids, session_id=session_id, path=path,
                                rewritten=rewritten, problems=problems)

    async def with_problems(self, p: Principal, limit: int = 50) -> list[CursorProblems]:
        """The user's transcripts with turns that were cleaned, cut or skipped, newest first."""
        require(p, "read")
        return await self.cursors.with_problems(p, limit)
