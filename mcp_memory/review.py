"""Read views and one curation step for the review console, in the service layer: what was
forgotten recently (restorable), writes per day, what retention takes next, and marking a stored
memory as superseding others. Knows nothing of HTTP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from uuid import UUID

from pydantic import BaseModel

from .config import Settings
from .errors import InvalidInput
from .models import Memory, MemoryFilter, Principal
from .permissions import require
from .repository import MemoryRepository, rate_limits
from .repository import console_views as views
from .repository import review as sql

MAX_ROWS = 200


class ForgottenMemory(BaseModel):
    memory: Memory
    restorable_until: datetime


class PurgeCandidate(BaseModel):
    memory: Memory
    at: datetime
    what: str  # 'deleted for good' (a tombstone) or 'forgotten' (stale)


def _rows(limit: int) -> int:
    if not 1 <= limit <= MAX_ROWS:
        raise InvalidInput(f"limit must be between 1 and {MAX_ROWS}, got {limit}")
    return limit


class Review:
    def __init__(self, repo: MemoryRepository, settings: Settings) -> None:
        self.repo = repo
        self.settings = settings

    async def forgotten(self, p: Principal, limit: int = 50) -> list[ForgottenMemory]:
        """Forgotten memories that can still be restored, the most recent first."""
        require(p, "read")
        window = timedelta(days=self.settings.purge_after_days)
        rows = await sql.forgotten(self.repo, p, datetime.now(UTC) - window, _rows(limit))
        return [ForgottenMemory(memory=m, restorable_until=m.deleted_at + window) for m in rows if m.deleted_at]

    async def written_per_day(self, p: Principal, days: int = 30) -> list[tuple[date, int]]:
        """One entry per day of the last `days` (zero included, so a chart's axis is even)."""
        return await self._per_day(p, days, sql.written_per_day)

    async def occurred_per_day(self, p: Principal, days: int = 30) -> list[tuple[date, int]]:
        """Memories per day of the last `days` by when they happened (occurred_at: an import spreads
        over its dates), forgotten ones too; one entry per day, zero included."""
        return await self._per_day(p, days, views.occurred_per_day)

    async def _per_day(self, p: Principal, days: int,
                       counted: Callable[[MemoryRepository, Principal, datetime], Awaitable[list[tuple[date, int]]]]
                       ) -> list[tuple[date, int]]:
        """`counted`'s (day, count) rows since the first of the last `days`, one entry per day."""
        require(p, "read")
        if not 1 <= days <= 366:
            raise InvalidInput(f"days must be between 1 and 366, got {days}")
        first = datetime.now(UTC).date() - timedelta(days=days - 1)
        counts = dict(await counted(self.repo, p, datetime.combine(first, datetime.min.time(), UTC)))
        return [(first + timedelta(days=i), counts.get(first + timedelta(days=i), 0)) for i in range(days)]

    async def count(self, p: Principal, f: MemoryFilter | None) -> int:
        """How many live memories a browse filter matches (the console's page numbers)."""
        require(p, "read")
        return await views.count_live(self.repo, p, f)

    async def containing(self, p: Principal, f: MemoryFilter | None, text: str, order: str, limit: int,
                         offset: int) -> tuple[list[Memory], int]:
        """Browse narrowed to memories whose title or content holds `text` literally: one page by
        offset, and how many match."""
        require(p, "read")
        return await views.list_containing(self.repo, p, f, text, order, limit, offset)

    async def purge_next(self, p: Principal, limit: int = 10) -> list[PurgeCandidate]:
        """What the retention sweep takes next, soonest first: tombstones past their restore window
        are deleted for good; with stale_after_days set, unread unpinned memories are forgotten."""
        require(p, "read")
        limit = _rows(limit)
        found = [PurgeCandidate(memory=m, at=m.deleted_at + timedelta(days=self.settings.purge_after_days),
                                what="deleted for good")
                 for m in await sql.oldest_tombstones(self.repo, p, limit) if m.deleted_at]
        if self.settings.stale_after_days:
            found += [PurgeCandidate(memory=m, at=touched + timedelta(days=self.settings.stale_after_days),
                                     what="forgotten")
                      for m, touched in await sql.stalest(self.repo, p, limit)]
        return sorted(found, key=lambda c: c.at)[:limit]

    async def supersede(self, p: Principal, successor: UUID, older: list[UUID], *,
                        request_id: str | None = None) -> None:
        """Mark `older` as replaced by `successor` (both already stored): they rank lower in search
        and show which memory replaces them."""
        require(p, "write")
        if not older:
            raise InvalidInput("older is empty: name the memories the successor replaces")
        if p.rate_limited and self.settings.write_rate_per_minute > 0:
            await rate_limits.take(self.repo, p, "write", self.settings.write_rate_per_minute)
        await sql.supersede(self.repo, p, successor, list(dict.fromkeys(older)), request_id=request_id)
