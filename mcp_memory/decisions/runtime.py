"""Wiring for a server process: the provider from settings, the workers in the server's task
group, and the write hook. Only when a provider is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.abc

from ..config import Settings
from . import provider_from
from .jobs import DecisionWorker
from .protocol import DecisionProvider

if TYPE_CHECKING:
    from ..db import Database
    from ..service import MemoryService


def start_workers(tg: anyio.abc.TaskGroup, db: Database, service: MemoryService, settings: Settings,
                  sampling: DecisionProvider | None = None) -> DecisionWorker | None:
    provider = provider_from(settings, sampling)
    if provider is None:
        return None
    worker = DecisionWorker(db.admin, service, provider, settings)
    service.settle = worker.settle
    sessions = getattr(provider, "sessions", None)  # sampling: a client connecting releases what waits for one
    if sessions is not None:
        sessions.on_offer = worker.client_available
    tg.start_soon(worker.run_forever)
    return worker
