"""What every `mcp-memory` subcommand module shares: the database and service opened for one
command. It sits below `cli.py` so the modules that register subcommands there (cli_server.py
and its siblings; decisions, console, capture) can use it without importing the command line back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Settings
    from .db import Database
    from .models import Principal
    from .service import MemoryService


@asynccontextmanager
async def opened(settings: Settings, *, check_model: bool = True
                 ) -> AsyncIterator[tuple[Database, MemoryService, Principal]]:
    """A command's database and service (composition.py: no decisions worker here, a write queues its
    decision job for a server's workers) and the local principal. The database, the service and
    the credentials are imported here, not at the top: every command's process imports this module
    and most commands (install, hook, --help) never open a store (0.7 s of a 1.1 s start)."""
    from .auth import local_principal
    from .composition import opened as house_opened

    async with house_opened(settings, check_model=check_model) as house:
        yield house.db, house.service, local_principal(settings)
