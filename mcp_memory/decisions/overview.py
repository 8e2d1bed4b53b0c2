"""The queue as a session sees it (the `memory://jobs` resource, stats): counts by status and
the latest jobs, each with what was decided or why it waits; and as `mcp-memory jobs` handles it
(Queue: listed by status, retried, cancelled), under the service's permissions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from ..models import Principal
from ..permissions import require
from ..repository import MemoryRepository
from ..repository.jobs import Job, JobRepository


class JobBrief(BaseModel):
    id: int
    memory_id: UUID
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None = None
    waiting: str | None = None
    decision: dict[str, Any] | None = None


class JobsView(BaseModel):
    counts: dict[str, int]
    jobs: list[JobBrief]


async def queue_view(jobs: JobRepository, p: Principal, limit: int = 20) -> JobsView:
    require(p, "read")
    listed = await jobs.list(p, (), limit)
    return JobsView(counts=await jobs.counts(p), jobs=[
        JobBrief(id=j.id, memory_id=j.memory_id, status=j.status, attempts=j.attempts, max_attempts=j.max_attempts,
                 run_after=j.run_after, last_error=j.last_error,
                 waiting=j.waiting if j.status == "queued" else None, decision=j.result) for j in listed])


class Queue:
    """The user's decision jobs, whole (`mcp-memory jobs`): reading them needs `read`, putting
    them back in the queue or stopping them `write` (what a decision does to memories)."""

    def __init__(self, repo: MemoryRepository) -> None:
        self.jobs = JobRepository(repo)

    async def list(self, p: Principal, statuses: Sequence[str] = (), limit: int = 50) -> list[Job]:
        """Newest first; the status 'waiting' names queued jobs that wait for something."""
        require(p, "read")
        return await self.jobs.list(p, statuses, limit)

    async def counts(self, p: Principal) -> dict[str, int]:
        require(p, "read")
        return await self.jobs.counts(p)

    async def retry(self, p: Principal, ids: Sequence[int]) -> list[int]:
        """Dead or cancelled jobs queued again, waiting ones due now: those it took."""
        require(p, "write")
        return await self.jobs.retry(p, ids)

    async def cancel(self, p: Principal, ids: Sequence[int]) -> list[int]:
        """Queued, running or dead jobs stopped: those it stopped."""
        require(p, "write")
        return await self.jobs.cancel(p, ids)


class UndoResult(BaseModel):
    """What undoing a decision did: the memories put back as they were, and those left as they
    are because they changed since (with why)."""

    job: int
    reverted: list[UUID]
    kept: dict[str, str]


class AcceptResult(BaseModel):
    """What accepting a decision's suggestions did: the memories changed as the model said, and
    those left as they are (with why: pinned since, forgotten, ...)."""

    job: int
    action: str
    accepted: list[UUID]
    kept: dict[str, str]
