"""The durable job queue (`memory_jobs`): enqueue inside a write's transaction, claim with
FOR UPDATE SKIP LOCKED across users (the owner's pool: workers serve every tenant), and finish,
retry, bury or cancel a job. Everything a caller sees of the queue goes through its principal
(row-level security keys on the transaction's user)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol
from uuid import NAMESPACE_URL, UUID, uuid5

import asyncpg
from pydantic import BaseModel

from ..models import Principal
from .sql import Sql, visible

STATUSES = ("queued", "running", "done", "dead", "cancelled")


class Job(BaseModel):
    user_id: str
    id: int
    kind: str
    memory_id: UUID
    principal: dict[str, Any]
    explicit: list[UUID]
    sources: list[UUID] = []  # extract: the session delta's episodes
    session_id: str | None = None
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    locked_by: str | None = None
    locked_until: datetime | None = None
    last_error: str | None = None
    waiting: str | None = None
    called_at: datetime | None = None
    unbudgeted: bool = False
    result: dict[str, Any] | None = None
    tokens: int = 0
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None

    def acting_as(self) -> Principal:
        return Principal.model_validate(self.principal)


def _job(row: asyncpg.Record) -> Job:
    values = dict(row)
    for key in ("principal", "result"):  # the owner's pool may not carry the JSON codec
        if isinstance(values.get(key), str):
            values[key] = json.loads(values[key])
    return Job.model_validate(values)


def _principal_json(p: Principal) -> dict[str, Any]:
    return p.model_dump(mode="json")


async def enqueue(conn: asyncpg.Connection, p: Principal, memory_ids: Sequence[UUID], *, explicit: Sequence[UUID] = (),
                  max_attempts: int) -> None:
    """Inside the write's own transaction: the job exists exactly when the memory does."""
    if not memory_ids:
        return
    await conn.executemany(
        """INSERT INTO memory_jobs (user_id, memory_id, principal, explicit, max_attempts)
           VALUES ($1, $2, $3::jsonb, $4::uuid[], $5) ON CONFLICT (user_id, memory_id, kind) DO NOTHING""",
        [(p.user_id, mid, _principal_json(p), list(explicit), max_attempts) for mid in memory_ids])


def delta_key(episodes: Sequence[UUID], session_id: str | None) -> UUID:
    """The extraction job's key (memory_id has no foreign key for kind 'extract')."""
    return uuid5(NAMESPACE_URL, f"mcp-memory:extract:{session_id or ''}:{','.join(map(str, episodes))}")


async def enqueue_extraction(conn: asyncpg.Connection, p: Principal, episodes: Sequence[UUID],
                             session_id: str | None, *, max_attempts: int, per_session: int,
                             per_day: int) -> str | None:
    """One extraction job for a captured session delta, keyed by the delta itself (its session and
    episodes): the same delta captured again is a no-op, while two sessions whose last turn is one
    stored episode ("Noted.") are each extracted. None when queued; otherwise why not (a cap)."""
    if not episodes:
        return None
    counts = await conn.fetchrow(
        """SELECT count(*) FILTER (WHERE created_at > now() - interval '1 day') AS day,
                  count(*) FILTER (WHERE session_id IS NOT DISTINCT FROM $2 AND $2 IS NOT NULL) AS session
           FROM memory_jobs WHERE user_id = $1 AND kind = 'extract'""", p.user_id, session_id)
    if per_day and counts["day"] >= per_day:
        return f"extraction: {per_day} jobs per day for this user are queued (MCP_MEMORY_EXTRACTION_PER_DAY)"
    if per_session and session_id is not None and counts["session"] >= per_session:
        return f"extraction: {per_session} jobs for this session are queued (MCP_MEMORY_EXTRACTION_PER_SESSION)"
    await conn.execute(
        """INSERT INTO memory_jobs (user_id, kind, memory_id, principal, sources, session_id, max_attempts)
           VALUES ($1, 'extract', $2, $3::jsonb, $4::uuid[], $5, $6)
           ON CONFLICT (user_id, memory_id, kind) DO NOTHING""",
        p.user_id, delta_key(episodes, session_id), _principal_json(p), list(episodes), session_id, max_attempts)
    return None


async def claim(admin: asyncpg.Pool, worker: str, lease_s: float, skip: Sequence[int] = ()) -> Job | None:
    """Take one due job (or one whose worker's lease ran out) for `worker`, counting an attempt,
    other than the ids in `skip` (jobs this worker cannot serve: left to the others).
    SKIP LOCKED: two workers never take the same job, and never wait for each other."""
    row = await admin.fetchrow(
        """UPDATE memory_jobs j SET status = 'running', attempts = j.attempts + 1, locked_by = $1,
                  locked_until = now() + make_interval(secs => $2), updated_at = now()
           FROM (SELECT user_id, id FROM memory_jobs
                 WHERE ((status = 'queued' AND run_after <= now()) OR (status = 'running' AND locked_until < now()))
                   AND NOT (id = ANY($3::bigint[]))
                 ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED) due
           WHERE j.user_id = due.user_id AND j.id = due.id RETURNING j.*""", worker, lease_s, list(skip))
    return _job(row) if row is not None else None


async def claim_one(admin: asyncpg.Pool, user_id: str, memory_id: UUID, worker: str, lease_s: float) -> Job | None:
    """Take the job of one memory if it is due and free (a write waiting for its decision)."""
    row = await admin.fetchrow(
        """UPDATE memory_jobs j SET status = 'running', attempts = j.attempts + 1, locked_by = $3,
                  locked_until = now() + make_interval(secs => $4), updated_at = now()
           FROM (SELECT user_id, id FROM memory_jobs WHERE user_id = $1 AND memory_id = $2 AND kind = 'decide'
                 AND status = 'queued' FOR UPDATE SKIP LOCKED) due
           WHERE j.user_id = due.user_id AND j.id = due.id RETURNING j.*""", user_id, memory_id, worker, lease_s)
    return _job(row) if row is not None else None


async def lock_own(conn: asyncpg.Connection, job: Job, worker: str) -> bool:
    """Inside the applying transaction: is the job still this worker's? A job whose lease ran out
    and was taken (or finished, or cancelled) by someone else is not applied twice."""
    held = await conn.fetchval(
        """SELECT true FROM memory_jobs WHERE user_id = $1 AND id = $2 AND status = 'running' AND locked_by = $3
           FOR UPDATE""", job.user_id, job.id, worker)
    return bool(held)


async def finish(conn: asyncpg.Connection, job: Job, result: dict[str, Any], tokens: int) -> None:
    await conn.execute(
        """UPDATE memory_jobs SET status = 'done', result = $3::jsonb, tokens = tokens + $4, locked_by = NULL,
                  locked_until = NULL, last_error = NULL, waiting = NULL, updated_at = now(), finished_at = now()
           WHERE user_id = $1 AND id = $2""", job.user_id, job.id, result, tokens)


async def fail(admin: asyncpg.Pool, job: Job, worker: str, error: str, *, retry_in_s: float | None,
               tokens: int = 0) -> str:
    """Give the job back to the queue to be tried after `retry_in_s`, or bury it (dead letter)
    when that is None or its attempts are spent. Returns the new status ('' if the job was no
    longer this worker's)."""
    status = await admin.fetchval(
        """UPDATE memory_jobs SET
                  status = CASE WHEN $4::float8 IS NULL OR attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
                  run_after = now() + make_interval(secs => coalesce($4::float8, 0)),
                  last_error = $5, waiting = NULL, tokens = tokens + $6, locked_by = NULL, locked_until = NULL,
                  updated_at = now(),
                  finished_at = CASE WHEN $4::float8 IS NULL OR attempts >= max_attempts THEN now() END
           WHERE user_id = $1 AND id = $2 AND status = 'running' AND locked_by = $3 RETURNING status""",
        job.user_id, job.id, worker, retry_in_s, error[:2000], tokens)
    return status or ""


async def defer(admin: asyncpg.Pool, job: Job, worker: str, seconds: float, why: str) -> None:
    """Put a job back without counting the attempt, waiting `seconds` for a reason that is not its
    fault (a budget is spent, the provider cannot be reached): `waiting` says why."""
    await admin.execute(
        """UPDATE memory_jobs SET status = 'queued', attempts = greatest(attempts - 1, 0),
                  run_after = now() + make_interval(secs => $4), waiting = $5, locked_by = NULL,
                  locked_until = NULL, updated_at = now()
           WHERE user_id = $1 AND id = $2 AND status = 'running' AND locked_by = $3""",
        job.user_id, job.id, worker, seconds, why[:2000])


async def interrupted(admin: asyncpg.Pool, job: Job, worker: str) -> None:
    """The worker stopped before a decision (server shutting down): back to the queue, due now,
    the attempt uncounted, whatever it waited for before kept."""
    await admin.execute(
        """UPDATE memory_jobs SET status = 'queued', attempts = greatest(attempts - 1, 0), run_after = now(),
                  locked_by = NULL, locked_until = NULL, updated_at = now()
           WHERE user_id = $1 AND id = $2 AND status = 'running' AND locked_by = $3""",
        job.user_id, job.id, worker)


async def called(admin: asyncpg.Pool, job: Job) -> None:
    """A model is being asked for this job now: it counts against the per-minute limit."""
    await admin.execute("UPDATE memory_jobs SET called_at = now() WHERE user_id = $1 AND id = $2",
                        job.user_id, job.id)


async def release(admin: asyncpg.Pool, why_prefix: str, user_id: str | None = None) -> int:
    """Jobs waiting for `why_prefix` (a provider that is back, a client that connected) are due
    now; returns how many."""
    done = await admin.execute(
        """UPDATE memory_jobs SET run_after = now(), updated_at = now()
           WHERE status = 'queued' AND run_after > now() AND starts_with(waiting, $1)
             AND ($2::text IS NULL OR user_id = $2)""", why_prefix, user_id)
    return int(done.split()[-1])


async def bury_exhausted(admin: asyncpg.Pool, job: Job, worker: str) -> None:
    """A job taken again after its workers died max_attempts times is not tried once more."""
    await admin.execute(
        """UPDATE memory_jobs SET status = 'dead', locked_by = NULL, locked_until = NULL, updated_at = now(),
                  finished_at = now(),
                  last_error = coalesce(last_error || '; ', '') || 'its worker stopped during every attempt'
           WHERE user_id = $1 AND id = $2 AND locked_by = $3""", job.user_id, job.id, worker)


async def spent(admin: asyncpg.Pool, user_id: str, job_id: int) -> tuple[int, int]:
    """(model calls for this user's other jobs in the last minute, tokens its jobs used in the
    last day): the budgets' measure, close enough to bound a bill. A job finished without asking
    a model (nothing close to decide about) counts for neither."""
    row = await admin.fetchrow(
        """SELECT (SELECT count(*) FROM memory_jobs WHERE user_id = $1 AND id <> $2
                   AND called_at > now() - interval '1 minute') AS minute,
                  (SELECT coalesce(sum(tokens), 0) FROM memory_jobs
                   WHERE user_id = $1 AND updated_at > now() - interval '1 day') AS tokens""", user_id, job_id)
    return int(row["minute"]), int(row["tokens"])


# --- what a user sees and does to its own queue (row-level security applies) -----------------

def _seen(q: Sql, p: Principal) -> str:
    """A job is seen by whoever may see its memory (the scope rule of memories), so a credential
    confined to some agents / projects never reads decisions about the others' memories; an
    extraction job (keyed by its delta, no memory) by whoever may see every episode of it."""
    user, scope = q.arg(p.user_id), visible(q, p)
    return (f"j.user_id = {user} AND CASE WHEN j.kind = 'extract' THEN cardinality(j.sources) > 0 AND NOT EXISTS ("
            f"SELECT 1 FROM unnest(j.sources) AS s(id) WHERE NOT EXISTS (SELECT 1 FROM memories m "
            f"WHERE m.user_id = j.user_id AND m.id = s.id AND {scope})) "
            f"ELSE EXISTS (SELECT 1 FROM memories m WHERE m.user_id = j.user_id AND m.id = j.memory_id "
            f"AND {scope}) END")


class PrincipalTransactions(Protocol):
    """What the queue needs of the memory repository: its transaction tagged with the caller
    (row-level security keys on it). A protocol, because the repository enqueues through this
    module and importing it back would make the queue's SQL depend on what it serves."""

    def transaction(self, p: Principal, **gucs: str) -> AbstractAsyncContextManager[asyncpg.Connection]: ...


class JobRepository:
    def __init__(self, memories: PrincipalTransactions) -> None:
        self.memories = memories

    async def list(self, p: Principal, statuses: Sequence[str] = (), limit: int = 50) -> list[Job]:
        """Newest first; the status 'waiting' names queued jobs that wait for something (`waiting`)."""
        q = Sql()
        where = _seen(q, p)
        wanted = q.arg(list(statuses))
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""SELECT j.* FROM memory_jobs j WHERE {where}
                    AND (cardinality({wanted}::text[]) = 0 OR j.status = ANY({wanted}::text[])
                         OR ('waiting' = ANY({wanted}::text[]) AND j.status = 'queued' AND j.waiting IS NOT NULL))
                    ORDER BY j.id DESC LIMIT {q.arg(limit)}""", *q.args)
        return [_job(r) for r in rows]

    async def counts(self, p: Principal) -> dict[str, int]:
        """Jobs by status; 'waiting' counts the queued ones that wait for something (also in 'queued')."""
        q = Sql()
        where = _seen(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""SELECT j.status, count(*) AS n, count(*) FILTER (WHERE j.waiting IS NOT NULL) AS waiting
                    FROM memory_jobs j WHERE {where} GROUP BY j.status""", *q.args)
        found = {r["status"]: r["n"] for r in rows}
        counts = {s: found.get(s, 0) for s in STATUSES}
        counts["waiting"] = sum(r["waiting"] for r in rows if r["status"] == "queued")
        return counts

    async def get(self, p: Principal, job_id: int) -> Job | None:
        q = Sql()
        where = _seen(q, p)
        async with self.memories.transaction(p) as conn:
            row = await conn.fetchrow(f"SELECT j.* FROM memory_jobs j WHERE {where} AND j.id = {q.arg(job_id)}",
                                      *q.args)
        return _job(row) if row is not None else None

    async def retry(self, p: Principal, ids: Sequence[int]) -> list[int]:
        """Dead or cancelled jobs back into the queue with fresh attempts; a job waiting (for a
        budget, a provider, a client) due now, and free of the budgets: the user lifted its wait."""
        q = Sql()
        where = _seen(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""UPDATE memory_jobs j SET
                           attempts = CASE WHEN j.status = 'queued' THEN j.attempts ELSE 0 END,
                           unbudgeted = j.unbudgeted OR j.status = 'queued',
                           status = 'queued', run_after = now(), finished_at = NULL, waiting = NULL,
                           updated_at = now()
                    WHERE {where} AND j.id = ANY({q.arg(list(ids))}::bigint[])
                      AND (j.status IN ('dead', 'cancelled') OR (j.status = 'queued' AND j.waiting IS NOT NULL))
                    RETURNING j.id""", *q.args)
        return sorted(r["id"] for r in rows)

    async def cancel(self, p: Principal, ids: Sequence[int]) -> list[int]:
        """Queued, running or dead jobs stop here; a running one's worker finds it cancelled and
        applies nothing."""
        q = Sql()
        where = _seen(q, p)
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                f"""UPDATE memory_jobs j SET status = 'cancelled', locked_by = NULL, locked_until = NULL,
                           updated_at = now(), finished_at = now()
                    WHERE {where} AND j.id = ANY({q.arg(list(ids))}::bigint[])
                      AND j.status IN ('queued', 'running', 'dead')
                    RETURNING j.id""", *q.args)
        return sorted(r["id"] for r in rows)

    async def undone(self, conn: asyncpg.Connection, p: Principal, job_id: int, by: str) -> None:
        """Inside the undo's transaction: the job says it was undone, and by whom."""
        await conn.execute(
            """UPDATE memory_jobs SET result = coalesce(result, '{}'::jsonb)
                      || jsonb_build_object('undone_at', now(), 'undone_by', $3::text), updated_at = now()
               WHERE user_id = $1 AND id = $2""", p.user_id, job_id, by)

    async def decided_about(self, conn: asyncpg.Connection, p: Principal, memory_id: UUID) -> int | None:
        """The latest finished decision job about this memory (as the new one)."""
        return await conn.fetchval(
            """SELECT id FROM memory_jobs WHERE user_id = $1 AND memory_id = $2 AND status = 'done'
               ORDER BY id DESC LIMIT 1""", p.user_id, memory_id)

    async def visible(self, conn: asyncpg.Connection, p: Principal, job_id: int) -> bool:
        """Is the job's own memory (the one it decided about) visible to this principal?"""
        q = Sql()
        where = _seen(q, p)
        return bool(await conn.fetchval(f"SELECT true FROM memory_jobs j WHERE {where} AND j.id = {q.arg(job_id)}",
                                        *q.args))

    async def result_in(self, conn: asyncpg.Connection, p: Principal, job_id: int) -> dict[str, Any] | None:
        value = await conn.fetchval("SELECT result FROM memory_jobs WHERE user_id = $1 AND id = $2 FOR UPDATE",
                                    p.user_id, job_id)
        return json.loads(value) if isinstance(value, str) else value
