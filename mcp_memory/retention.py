"""The retention sweep: on start, every few hours, and from `mcp-memory purge`. Only time
removes data; no tool can hard-delete."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import anyio
import asyncpg

from .config import OperationsSettings
from .models import PurgeReport
from .repository.graph_checks import inconsistencies
from .repository.maintenance import MaintenanceRepository

log = logging.getLogger(__name__)


async def sweep(pool: asyncpg.Pool, settings: OperationsSettings, *, now: datetime | None = None,
                dry_run: bool = False) -> PurgeReport:
    report = await MaintenanceRepository(pool).purge(
        now or datetime.now(UTC), purge_after_days=settings.purge_after_days, history_days=settings.history_days,
        idempotency_days=settings.idempotency_days, stale_after_days=settings.stale_after_days, dry_run=dry_run)
    log.info("retention%s: %d stale forgotten, %d tombstones purged, %d history rows, %d forget tokens, "
             "%d idempotency keys, %d finished decision jobs (%.2fs)", " (dry run)" if dry_run else "",
             report.stale_forgotten, report.tombstones, report.history, report.forget_tokens, report.idempotency_keys,
             report.decision_jobs, report.seconds)
    if not dry_run:
        await check_graph(pool)
    return report


async def check_graph(pool: asyncpg.Pool) -> dict[str, int]:
    """The graph's consistency checks (repository/graph_checks.py), after each sweep: a link that should
    not exist is logged as an error naming the check (`mcp-memory doctor` shows the same); nothing
    is changed, the memories themselves are intact."""
    async with pool.acquire() as conn:
        found = {name: n for name, n in (await inconsistencies(conn)).items() if n}
    if found:
        log.error("graph consistency: %s (a bug: please report it with `mcp-memory doctor` output)",
                  "; ".join(f"{n} {name}" for name, n in found.items()))
    return found


async def run_forever(pool: asyncpg.Pool, settings: OperationsSettings) -> None:
    """Sweep now, then every `retention_interval_hours` (0: only now). Failures are logged and
    retried at the next interval; they never take the server down."""
    while True:
        try:
            await sweep(pool, settings)
        except Exception:
            log.exception("retention sweep failed")
        if settings.retention_interval_hours <= 0:
            return
        await anyio.sleep(settings.retention_interval_hours * 3600)
