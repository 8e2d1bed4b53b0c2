"""Fixed one-minute windows per (user, actor, action), counted in Postgres so every replica
shares them."""

from __future__ import annotations

from ..errors import RateLimited
from ..models import Principal
from .memories import MemoryRepository


async def take(repo: MemoryRepository, p: Principal, action: str, per_minute: int) -> None:
    """Count one `action`; refuse (RateLimited) past `per_minute` in the current minute."""
    async with repo.transaction(p) as conn:
        row = await conn.fetchrow(
            """INSERT INTO rate_limits AS r (user_id, actor, action, window_start, count)
               VALUES ($1, $2, $3, date_trunc('minute', now()), 1)
               ON CONFLICT (user_id, actor, action, window_start) DO UPDATE SET count = r.count + 1
               RETURNING count, extract(epoch FROM date_trunc('minute', now()) + interval '1 minute' - now())
                         AS retry_in""",
            p.user_id, p.actor, action)
    if row["count"] > per_minute:
        raise RateLimited(f"rate limit: at most {per_minute} {action}s per minute for this credential; "
                          f"retry in {max(1, round(row['retry_in']))} s")
