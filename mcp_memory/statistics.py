"""Planner statistics kept fresh by the server itself, on any PostgreSQL.

Right after a burst of writes (an import, a captured transcript, a fresh store) a table that
autovacuum has not analyzed yet plans searches as if each scope held a row or two, and nests
loops over the whole scope: searches ran 4-6x slower until autovacuum came round, a minute later
with default settings (the embedded server is tuned; docker-compose and managed databases are
not). So the service counts its writes, and as soon as enough have landed (a tenth of the
table, at least `analyze_min_writes`) it runs ANALYZE in the background, as autovacuum would
with its default scale factor, but without waiting a minute. A store that grows from nothing to
5,000 memories is analyzed about 25 times on the way, so its statistics are never more than a
tenth behind. Never in a request; one ANALYZE at a time, one replica at a time (an advisory
lock)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

log = logging.getLogger(__name__)


class Statistics:
    def __init__(self, analyze: Callable[[], Awaitable[float | None]], planner_rows: Callable[[], Awaitable[float]],
                 *, min_writes: int = 50, fraction: float = 0.1) -> None:
        self._analyze, self._planner_rows = analyze, planner_rows
        self.min_writes, self.fraction = min_writes, fraction
        self.pending = 0
        self.rows = 0.0  # the planner's estimate after the last ANALYZE (-1: never analyzed)
        self.analyzed = 0  # how many ANALYZEs this process ran
        self._wake = anyio.Event()

    def wrote(self, n: int = 1) -> None:
        """Called after each committed change; cheap, never waits."""
        self.pending += n
        if self.pending >= self.threshold:
            self._wake.set()

    @property
    def threshold(self) -> int:
        return max(self.min_writes, int(self.fraction * max(self.rows, 0)))

    async def run_forever(self) -> None:
        try:
            self.rows = await self._planner_rows()
        except Exception:  # the database went away as the server started: analyze as if never analyzed
            log.warning("reading the planner's row estimate failed", exc_info=True)
            self.rows = -1
        if self.rows < 0:  # never analyzed: a store written before this server ran
            await self._run()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await self._run()

    async def _run(self) -> None:
        writes, self.pending = self.pending, 0
        try:
            rows = await self._analyze()
        except Exception:  # the store works without it, only slower; try again on the next burst
            log.warning("background ANALYZE failed", exc_info=True)
            self.pending += writes
            return
        if rows is not None:
            self.rows, self.analyzed = rows, self.analyzed + 1
            log.debug("analyzed memories after %d writes (%.0f rows)", writes, rows)
