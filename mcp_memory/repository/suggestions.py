"""The SQL of accepting a suggestion the guard kept from a model's decision (decisions/apply.py
`accept`): the job's result rewritten inside the caller's transaction, after the result was read
FOR UPDATE there (repository.jobs.JobRepository.result_in)."""

from __future__ import annotations

from typing import Any

import asyncpg

from ..models import Principal


async def record_accepted(conn: asyncpg.Connection, p: Principal, job_id: int, result: dict[str, Any]) -> None:
    await conn.execute("UPDATE memory_jobs SET result = $3::jsonb, updated_at = now() WHERE user_id = $1 AND id = $2",
                       p.user_id, job_id, result)
