"""The operator's HTTP endpoints beside /mcp: /health (alive and the database answers), /live
(alive only), /ready (each component),
/metrics (Prometheus), and the access log: one line per request at INFO with its request id."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..netaddr import is_loopback
from ..readiness import check, summary
from ..repository import operations as ops_sql
from ..telemetry import metrics
from ..telemetry.context import request_scope
from .state import StateHolder

log = logging.getLogger(__name__)
access = logging.getLogger("mcp_memory.access")

_CLEAN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def _loopback(request: Request) -> bool:
    return request.client is not None and is_loopback(request.client.host)


def routes(holder: StateHolder, verifier: Any, settings: Any) -> list[Route]:
    """/metrics answers loopback clients, and others that present an API key (or token) with the
    admin permission: its figures (tool names, counts, the backlog) are the operator's, not every
    key holder's. With --no-auth the server is loopback-only anyway."""

    def parts() -> tuple[Any, Any, Any]:
        state = holder.current
        db = state.db if state is not None else None
        service = getattr(state, "_service", None) if state is not None else None
        return state, db, service

    async def health(_: Request) -> JSONResponse:
        """The process answers and reaches the database (200, else 503): the contract the Docker
        health check and clients waiting for start-up rely on. /live is the liveness probe that
        never touches the database (an outage must not get every replica restarted)."""
        state, db, _service = parts()
        database = "starting"
        if db is not None:
            found = await check(db.pool, db.admin, None, probe_embedder=False, only_database=True)
            database = "ok" if found["database"].ok else f"error: {found['database'].detail}"
        status = 200 if database == "ok" else 503
        return JSONResponse({"status": "ok" if status == 200 else "unavailable", "database": database,
                             "version": __version__, "auth": not settings.no_auth}, status_code=status)

    async def live(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    async def ready(request: Request) -> JSONResponse:
        state, db, service = parts()
        starting = None if state is None else f"not open: {state._error}" if state._error else "starting"
        components = await check(db.pool if db else None, db.admin if db else None,
                                 service.vectors if service is not None else None,
                                 probe_embedder=request.query_params.get("probe", "1") != "0", starting=starting)
        status, body = summary(components)
        body["version"] = __version__
        return JSONResponse(body, status_code=status, headers={} if status == 200 else {"Retry-After": "5"})

    async def scrape(request: Request) -> Response:
        if not _loopback(request) and not await _admin(request, verifier):
            return JSONResponse({"error": "forbidden", "error_description": (
                "/metrics answers loopback clients, or a bearer API key with the admin permission")},
                status_code=403)
        _state, db, _service = parts()
        body = await metrics.collect(db.pool if db else None,
                                     (lambda: ops_sql.counts(db.admin, timeout_s=3.0)) if db else None)
        return Response(body, media_type=metrics.CONTENT_TYPE)

    return [Route("/health", health, methods=["GET"]), Route("/live", live, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route("/metrics", scrape, methods=["GET"])]


async def _admin(request: Request, verifier: Any) -> bool:
    header = request.headers.get("authorization", "")
    if verifier is None or not header.lower().startswith("bearer "):
        return False
    token = await verifier.verify_token(header[7:].strip())
    return token is not None and "admin" in token.scopes


class AccessLog:
    """One INFO line per HTTP request: method, path (never the query string, which may carry a
    token), status, milliseconds, request id; the id also goes back as X-Request-Id. Headers and
    bodies are never logged: they carry keys and memory text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        started, status = time.monotonic(), 500
        with request_scope(given if _CLEAN_ID.match(given) else None) as rid:

            async def tracking(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    message = {**message, "headers": [*message.get("headers", []),
                                                      (b"x-request-id", rid.encode())]}
                await send(message)

            try:
                await self.app(scope, receive, tracking)
            finally:
                ms = round((time.monotonic() - started) * 1000, 1)
                path = scope.get("path", "")
                access.info("%s %s %d %.1fms", scope.get("method"), path, status, ms,
                            extra={"method": scope.get("method"), "path": path, "status": status,
                                   "duration_ms": ms})
