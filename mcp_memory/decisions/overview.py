"""The queue as a session sees it (the `memory://jobs` resource, stats): counts by status and
the latest jobs, each with what was decided or why it waits."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from ..models import Principal
from ..permissions import require
from ..repository.jobs import JobRepository


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
