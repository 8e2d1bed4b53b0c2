"""Work that runs beside a process's calls in a shared task group: the server's background loops,
each connection to the hook channel or to the resident server. An exception such work did not
handle would end the whole group, and with it every other call and window (a malformed hello once
ended the resident server for all its windows; the statistics' first read, failing as the database
went away, ended an HTTP server's lifespan, so every later call was refused as unauthorised). Each
handles what it foresees; what it did not is logged here and goes no further."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)


async def contained(what: str, work: Awaitable[object]) -> None:
    """Await `work`; an Exception from it is logged with `what` and its traceback, not raised
    (cancellation still is)."""
    try:
        await work
    except Exception:
        log.exception("%s failed; the process goes on without it", what)
