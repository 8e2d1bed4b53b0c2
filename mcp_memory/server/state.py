"""Server state: the database, opened in the background so the MCP handshake never waits for
Postgres or migrations, and who each session is."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import warnings
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.abc
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.shared.exceptions import MCPDeprecationWarning

from ..auth import Credential, local_principal, remote_principal
from ..composition import compose
from ..config import Settings
from ..db import Database, open_database
from ..decisions.jobs import DecisionWorker
from ..decisions.pace import Pace
from ..errors import ModelMismatch, PermissionDenied, Unavailable
from ..models import Principal
from ..service import MemoryService
from .sampling import SamplingProvider, SamplingSessions

log = logging.getLogger(__name__)

AGENT_HEADER = "x-mcp-memory-agent"
PROJECT_HEADER = "x-mcp-memory-project"
# A window relayed to the resident server (resident.py) brings its own local identity: its settings
# (user, agent, project, permissions) and its working directory, set for that session's tasks.
RELAYED: ContextVar[tuple[Settings, Path | None] | None] = ContextVar("mcp_memory_relayed", default=None)


class AppState:
    """What the lifespan holds: the database opens in the background so the MCP handshake
    never waits for Postgres to start or for migrations to run."""

    def __init__(self, settings: Settings, *, authenticated: bool = False, exit_on_fatal: bool = False) -> None:
        self.settings = settings
        self.authenticated = authenticated
        self.exit_on_fatal = exit_on_fatal
        self.db: Database | None = None
        self._service: MemoryService | None = None
        self._error: BaseException | None = None
        self._ready = anyio.Event()
        self._principals: weakref.WeakKeyDictionary[Any, Principal] = weakref.WeakKeyDictionary()
        self._local: dict[tuple[Any, ...], Principal] = {}
        # Decisions (mcp_memory/decisions): clients that can sample, and the workers once open.
        self.sampling = SamplingSessions()
        self.decisions: DecisionWorker | None = None

    async def open(self, tg: anyio.abc.TaskGroup | None = None) -> None:
        try:
            self.db = await open_database(self.settings)
            # The service and its decisions worker, built whole (composition.py); with a task group
            # this process serves, so it decides too and runs the background work.
            sampler = (SamplingProvider(self.sampling, model_hint=self.settings.decisions_model,
                                        pace=Pace(self.settings))
                       if tg is not None and self.settings.decisions_provider == "sampling" else None)
            house = await compose(self.db, self.settings, workers=tg is not None, sampling=sampler)
            self._service, self.decisions = house.service, house.worker
            log.info("database ready%s", f" (applied {', '.join(self.db.applied)})" if self.db.applied else "")
            if tg is not None:
                house.start(tg)
        except ModelMismatch as exc:
            if self.exit_on_fatal:  # `mcp-memory serve`: no call could succeed, so start-up stops
                log.error("%s", exc)
                _exit(2)
            self._error = exc
        except Exception as exc:  # reported to every call until fixed; the server stays up
            log.exception("database unavailable")
            self._error = exc
        finally:
            self._ready.set()

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()

    async def service(self) -> MemoryService:
        with anyio.move_on_after(self.settings.db_start_timeout_s):
            await self._ready.wait()
        if self._service is None:
            why = f": {self._error}" if self._error else " yet"
            raise Unavailable(f"the memory database is not available{why}. Run `mcp-memory doctor` for the fix.")
        return self._service

    async def bind_request(self, ctx: Any) -> tuple[MemoryService, Principal]:
        """Service and caller for a request context (MCPServer's `Context.request_context`, or
        the context low-level handlers receive)."""
        service = await self.service()
        request = getattr(ctx, "request", None)
        return service, await self.principal(ctx.session, ctx.protocol_version, getattr(request, "headers", None))

    async def principal(self, session: Any, protocol_version: str | None,
                        headers: Mapping[str, str] | None = None) -> Principal:
        """Who is calling. Over authenticated HTTP: the verified credential, narrowed by the
        request's agent / project headers. Otherwise the local identity, once per connection."""
        params = getattr(session, "client_params", None)
        client = params.client_info.name if params is not None and params.client_info else None
        token = get_access_token()
        if token is not None:
            credential = Credential.model_validate(token.claims["mcp_memory"])
            headers = headers or {}
            remote = remote_principal(credential, agent=headers.get(AGENT_HEADER),
                                      project=headers.get(PROJECT_HEADER), client_name=client)
            self.sampling.offer(remote, session, protocol_version)
            return remote
        if self.authenticated:
            raise PermissionDenied("authentication required")
        # A request's session object lives for that request; its connection, for the client.
        connection = getattr(session, "_connection", session)
        try:
            cached = self._principals.get(connection)
        except TypeError:
            cached = None
        if cached is not None:
            return cached
        settings, cwd = RELAYED.get() or (self.settings, None)
        roots = await _client_roots(session, protocol_version) if settings.project is None else []
        # A 2026-era client brings a new connection with every request: the identity it maps to
        # is the same for the same client, roots and window (the settings and the directory don't change).
        key = (client, tuple(roots), settings.user, settings.agent, settings.project, settings.local_permissions, cwd)
        principal = self._local.get(key)
        if principal is None:
            principal = self._local[key] = local_principal(settings, client_name=client, roots=roots, cwd=cwd)
        self.sampling.offer(principal, session, protocol_version)
        try:
            self._principals[connection] = principal
        except TypeError:
            pass
        return principal


async def _client_roots(session: Any, protocol_version: str | None) -> list[Path]:
    """The client's workspace folders (legacy-era clients that declare `roots`), best effort."""
    caps = getattr(session, "client_capabilities", None)
    if caps is None or caps.roots is None or (protocol_version or "") >= "2026":
        return []
    with anyio.move_on_after(2):
        try:
            # Roots are deprecated from protocol 2026 on (SEP-2577), so only older clients are asked
            # (above): the SDK's warning, given as the call is made (not awaited, so no other task's
            # warnings are hidden), would say so once per window in the server's log.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                asking = session.list_roots()
            result = await asking
        except Exception:
            log.info("client declared roots but list_roots failed", exc_info=True)
            return []
        return [Path(unquote(urlparse(str(r.uri)).path)) for r in result.roots if str(r.uri).startswith("file:")]
    return []


def _exit(code: int) -> None:
    """Leave at once, releasing the embedded database handle (the stdin reader thread would keep
    a normal exit waiting)."""
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


class StateHolder:
    """One AppState per server process. The MCP lifespan can be entered many times (once per
    SSE connection, once by the streamable-HTTP manager); only the first entry, or an outer
    `hold()` around the whole HTTP app, opens the database; the rest share it."""

    def __init__(self, settings: Settings, *, authenticated: bool = False, exit_on_fatal: bool = False) -> None:
        self.settings = settings
        self.authenticated = authenticated
        self.exit_on_fatal = exit_on_fatal
        self.current: AppState | None = None

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[AppState]:
        if self.current is not None:
            yield self.current
            return
        state = AppState(self.settings, authenticated=self.authenticated, exit_on_fatal=self.exit_on_fatal)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(state.open, tg)
                self.current = state
                try:
                    yield state
                finally:
                    self.current = None
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await state.close()
