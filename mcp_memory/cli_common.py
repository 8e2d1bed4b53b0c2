"""What every `mcp-memory` subcommand module shares: the database and service opened for one
command. It sits below `cli.py` so the modules that register subcommands there (decisions,
console, capture) can use it without importing the command line back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .auth import local_principal
from .config import Settings
from .db import Database, open_database
from .models import Principal
from .service import MemoryService


@asynccontextmanager
async def opened(settings: Settings, *, check_model: bool = True
                 ) -> AsyncIterator[tuple[Database, MemoryService, Principal]]:
    db = await open_database(settings)
    try:
        yield db, await MemoryService.open(db, settings, check_model=check_model), local_principal(settings)
    finally:
        await db.close()
