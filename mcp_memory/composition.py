"""The composition root: one place builds what a process runs on — the repository (with the
decision jobs its settings ask for), the embedder, the service, and the decisions worker the
service tells about each write — each complete at construction, nothing wired onto it afterwards
(MemoryService.open makes the service's own parts; this adds the worker and the background work).
The server (server/state.py; the console through it), the command line (cli_common.py), the
capture command and worker, and the tests build through here; `House.start` runs what a server
keeps running beside its calls.

It sits above the service and the decisions and below every transport: the server, the console,
capture and the command line import it; nothing it imports imports them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import DecisionSettings, OperationsSettings, Settings, StorageSettings
from .contained import contained
from .db import Database, open_database
from .service import MemoryService

if TYPE_CHECKING:
    import anyio.abc

    from .decisions.jobs import DecisionWorker
    from .decisions.protocol import DecisionProvider


@dataclass(frozen=True)
class House:
    """A process's database, service and decisions worker (None: writes leave their decision jobs
    to a server's workers, or no provider is configured)."""

    db: Database
    settings: Settings
    service: MemoryService
    worker: DecisionWorker | None

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """What a server runs beside its calls: retention, the planner's statistics, the
        embedder's recovery, the graph's backlog, the decisions worker, and the warm-ups of the
        model (loaded now, not on the first search) and of the search's pages (db/warmup.py)."""
        # Imported here: a command or a hook process, which never starts them, does not load them.
        from . import retention
        from .backlog import Backlog
        from .db.warmup import warm_pages
        from .decisions import runtime

        service = self.service
        operations = self.settings.part(OperationsSettings)
        tg.start_soon(contained, "retention", retention.run_forever(self.db.admin, operations))
        if service.statistics is not None:
            tg.start_soon(contained, "planner statistics", service.statistics.run_forever())
        assert service.vectors is not None
        tg.start_soon(contained, "the embedder's healing", service.vectors.heal_forever())
        tg.start_soon(contained, "the graph's backlog", Backlog(self.db.admin, service.structure).read_in_background())
        if self.worker is not None:
            runtime.start(tg, self.worker)
        tg.start_soon(contained, "the model's warm-up", service.vectors.query("warm up"))
        if self.settings.warm_pages:
            tg.start_soon(contained, "the pages' warm-up", warm_pages(self.db.admin, busy=service.activity.busy))


async def compose(db: Database, settings: Settings, *, check_model: bool = True, workers: bool = False,
                  sampling: DecisionProvider | None = None) -> House:
    """The house over an open database. `workers`: this process decides (a server): the service
    gets the decisions worker, which `House.start` runs, and a write in sync mode is decided
    before it returns; otherwise (a command, a hook, a test of the service) writes only queue
    their decision jobs. `sampling`: the server's provider that asks connected clients.
    `check_model`: refuse an embedding model the database was not built with."""
    builder = None
    if workers:
        from .decisions import runtime  # only a server decides: a command or a hook does not load the workers

        builder = runtime.workers_for(db.admin, settings.part(DecisionSettings), sampling)
    service = await MemoryService.open(db, settings, check_model=check_model, decider=builder)
    return House(db, settings, service, builder.worker if builder is not None else None)


@asynccontextmanager
async def opened(settings: Settings, *, check_model: bool = True, workers: bool = False) -> AsyncIterator[House]:
    """The database opened for the settings and the house on it; the database closes after."""
    db = await open_database(settings.part(StorageSettings))
    try:
        yield await compose(db, settings, check_model=check_model, workers=workers)
    finally:
        await db.close()
