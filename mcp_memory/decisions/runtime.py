"""The decisions' part of composing a process (composition.py): the provider from settings, the
worker a service tells about each write (its `decider`), and running that worker in a server's
task group. Only when a provider is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.abc
import asyncpg

from ..config import DecisionSettings
from . import provider_from
from .jobs import DecisionWorker
from .protocol import DecisionProvider

if TYPE_CHECKING:
    from ..service import MemoryService


class Workers:
    """Builds the decisions worker of one service: passed to MemoryService as its `decider`, which
    calls it once, last in its construction, with itself complete; the worker is kept here."""

    def __init__(self, admin: asyncpg.Pool, provider: DecisionProvider, settings: DecisionSettings) -> None:
        self.admin = admin
        self.provider = provider
        self.settings = settings
        self.worker: DecisionWorker | None = None

    def __call__(self, service: MemoryService) -> DecisionWorker:
        if self.worker is not None:
            raise RuntimeError("a decisions worker belongs to one service")
        self.worker = DecisionWorker(self.admin, service, self.provider, self.settings,
                                     statistics=service.statistics)
        return self.worker


def workers_for(admin: asyncpg.Pool, settings: DecisionSettings,
                sampling: DecisionProvider | None = None) -> Workers | None:
    """The worker's builder for these settings; None without a provider. `sampling`: the server's
    provider that asks connected clients, when the settings choose sampling."""
    provider = provider_from(settings, sampling)
    return Workers(admin, provider, settings) if provider is not None else None


def start(tg: anyio.abc.TaskGroup, worker: DecisionWorker) -> None:
    """Run the worker's loops in a server's task group."""
    tg.start_soon(worker.run_forever)
