"""What an operator watches, across users (run on the admin pool): the job queue by status, the
embedding backlog, what capture stored. Each is one indexed or bounded count."""

from __future__ import annotations

from typing import Any

import asyncpg


async def counts(admin: asyncpg.Pool | asyncpg.Connection, *, timeout_s: float = 5.0) -> dict[str, Any]:
    """{"jobs": {status: n}, "oldest_queued_s": seconds or None, "backlog": n, "captured": n}."""
    if isinstance(admin, asyncpg.Connection):
        return await _counts(admin, timeout_s)
    async with admin.acquire(timeout=timeout_s) as conn:
        return await _counts(conn, timeout_s)


async def _counts(conn: asyncpg.Connection, timeout_s: float) -> dict[str, Any]:
    jobs = await conn.fetch("SELECT status, count(*) AS n FROM memory_jobs GROUP BY status", timeout=timeout_s)
    oldest = await conn.fetchval(
        "SELECT extract(epoch FROM now() - min(run_after)) FROM memory_jobs "
        "WHERE status = 'queued' AND run_after <= now()", timeout=timeout_s)
    backlog = await conn.fetchval(
        "SELECT count(*) FROM memories WHERE deleted_at IS NULL AND embedding IS NULL", timeout=timeout_s)
    captured = await conn.fetchval(
        "SELECT count(*) FROM memories WHERE deleted_at IS NULL AND tags @> ARRAY['capture']", timeout=timeout_s)
    return {"jobs": {r["status"]: r["n"] for r in jobs}, "oldest_queued_s": float(oldest) if oldest is not None
        else None, "backlog": backlog, "captured": captured}
