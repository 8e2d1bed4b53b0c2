"""Remote transports: streamable HTTP (/mcp) and SSE (/sse, /messages/) in one app, bearer
authentication (API keys and OAuth JWTs), DNS-rebinding protection, a health endpoint, and
graceful shutdown."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlparse

import anyio
import uvicorn
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..auth import Credential, JwtVerifier, parse_api_key
from ..config import IdentitySettings, Settings
from ..errors import MemoryServiceError
from ..limits import MAX_REQUEST_HEAD_BYTES
from ..netaddr import is_loopback
from ..repository.api_keys import ApiKeyRepository
from . import operations
from .app import build_server
from .errors import UNAVAILABLE, is_outage, report_outage
from .state import StateHolder

log = logging.getLogger(__name__)

Transport = Literal["http", "sse"]
# Verified API keys an HTTP server remembers at once; past this the expired ones go, then all.
MAX_TRUSTED_KEYS = 10_000


def public_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = settings.host if settings.host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{settings.port}"


class MemoryTokenVerifier(TokenVerifier):
    """Bearer credentials: our API keys (looked up by hash under their user) or, when
    configured, OAuth JWTs. Anything else is refused (401)."""

    def __init__(self, holder: StateHolder, settings: Settings) -> None:
        self.holder = holder
        self.jwt = JwtVerifier(settings.part(IdentitySettings))
        self.key_ttl = settings.api_key_cache_s
        # (user, key hash) -> (monotonic time it stops being trusted, what it grants): every MCP call
        # is an HTTP request, and asking the database each time was a transaction per call.
        self._keys: dict[tuple[str, str], tuple[float, Credential]] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        credential = await self._credential(token)
        if credential is None:
            return None
        return AccessToken(token=token, client_id=credential.client_id, scopes=sorted(credential.permissions),
                           subject=credential.user_id, claims={"mcp_memory": credential.model_dump(mode="json")})

    async def _credential(self, token: str) -> Credential | None:
        parsed = parse_api_key(token)
        if parsed is not None:
            cached = self._keys.get(parsed)
            if cached is not None and cached[0] > time.monotonic():
                return cached[1]
            found = await self._api_key(*parsed)
            if found is None:
                self._keys.pop(parsed, None)
                return None
            self._remember(parsed, *found)
            return found[0]
        if self.jwt.enabled:
            # A JWKS fetch is blocking I/O: keep it off the event loop.
            return await anyio.to_thread.run_sync(self.jwt.verify, token)
        return None

    def _remember(self, parsed: tuple[str, str], credential: Credential, expires_at: datetime | None) -> None:
        """Trust a verified key for key_ttl, never past its expiry. Refusals are not kept: a key
        made a moment ago works at once, and a wrong one costs a lookup every time."""
        if self.key_ttl <= 0:
            return
        now = time.monotonic()
        if len(self._keys) >= MAX_TRUSTED_KEYS:
            self._keys = {k: v for k, v in self._keys.items() if v[0] > now}
            if len(self._keys) >= MAX_TRUSTED_KEYS:
                self._keys.clear()
        until = now + self.key_ttl
        if expires_at is not None:
            until = min(until, now + (expires_at - datetime.now(UTC)).total_seconds())
        self._keys[parsed] = (until, credential)

    async def _api_key(self, user_id: str, key_hash: str) -> tuple[Credential, datetime | None] | None:
        state = self.holder.current
        if state is None:
            return None
        try:
            await state.service()
        except MemoryServiceError:
            return None
        assert state.db is not None
        key = await ApiKeyRepository(state.db.admin, state.db.pool).lookup(user_id, key_hash)
        if key is None:
            return None
        return Credential(user_id=key.user_id, agents=tuple(key.agents) if key.agents is not None else None,
                          projects=tuple(key.projects) if key.projects is not None else None,
                          permissions=frozenset(key.permissions), actor=f"key:{key.name}#{key.id}",
                          client_id=f"key:{key.id}"), key.expires_at


class OutageMiddleware:
    """While PostgreSQL cannot be reached, a request that needs it (the API-key check, a call)
    gets 503 with Retry-After and the log one line per outage, not a traceback per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            if not is_outage(exc) or started:
                raise
            report_outage(exc)
            response = JSONResponse({"error": "unavailable", "error_description": UNAVAILABLE},
                                    status_code=503, headers={"Retry-After": "5"})
            await response(scope, receive, send)


def _transport_security(settings: Settings) -> TransportSecuritySettings:
    hosts = ["127.0.0.1", "localhost", "[::1]", *settings.allowed_hosts]
    public = urlparse(public_url(settings)).hostname
    if public:
        hosts.append(public)
    allowed_hosts = sorted({h for host in hosts for h in (host, f"{host}:*")})
    origins = sorted({f"{scheme}://{h}" for scheme in ("http", "https") for h in allowed_hosts})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                     allowed_origins=origins)


def build_http_app(settings: Settings, transports: tuple[Transport, ...] = ("http", "sse"), *,
                   exit_on_fatal: bool = False, hook_channel: bool = False) -> Starlette:
    if settings.no_auth and not is_loopback(settings.host):
        raise ValueError(f"refusing to serve without authentication on {settings.host}: "
                         "--no-auth is for loopback addresses only")
    holder = StateHolder(settings, authenticated=not settings.no_auth, exit_on_fatal=exit_on_fatal)
    auth = verifier = None
    if not settings.no_auth:
        base = public_url(settings)
        # Strings, not AnyHttpUrl: the settings keep a path-less issuer exactly as given, and
        # OAuth clients compare issuers as exact strings.
        auth = AuthSettings.model_validate({"issuer_url": settings.jwt_issuer or base,
                                            "resource_server_url": f"{base}/mcp", "validate_token_resource": False})
        verifier = MemoryTokenVerifier(holder, settings)
    server = build_server(settings, holder=holder, token_verifier=verifier, auth=auth)

    security = _transport_security(settings)
    streamable = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security,
                                            host=settings.host)
    # /health, /live, /ready (per component), /metrics (Prometheus): see server/operations.py
    routes: list[BaseRoute] = [*operations.routes(holder, verifier, settings)]
    routes += [r for r in streamable.routes if "http" in transports or getattr(r, "path", "") != "/mcp"]
    if "sse" in transports:
        sse = server.sse_app(transport_security=security, host=settings.host)
        taken = {getattr(r, "path", None) for r in routes}
        routes += [r for r in sse.routes if getattr(r, "path", None) not in taken]
    from ..console.app import build_console  # the review console (issue 16): pages under /ui

    routes.append(Mount("/ui", app=build_console(holder, settings, security.allowed_hosts)))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # Hold the state for the app's whole life, so SSE connections (each of which enters
        # the MCP lifespan) share one pool instead of opening their own.
        async with holder.hold() as state, server.session_manager.run():
            if not hook_channel:
                yield
                return
            from ..capture.channel_socket import serving  # hooks on this machine ask `mcp-memory serve`

            async with serving(state, settings):
                yield

    return Starlette(routes=routes, middleware=[Middleware(operations.AccessLog), Middleware(OutageMiddleware),
                                                *streamable.user_middleware],
                     lifespan=lifespan)


def serve_http(settings: Settings, transports: tuple[Transport, ...]) -> None:
    app = build_http_app(settings, transports, exit_on_fatal=True, hook_channel=True)
    endpoints = ", ".join(e for t, e in (("http", "/mcp (streamable HTTP)"), ("sse", "/sse (SSE)")) if t in transports)
    log.info("serving %s on %s%s", endpoints, public_url(settings),
             " WITHOUT authentication" if settings.no_auth else "")
    # access_log off: uvicorn's line carries the query string; operations.AccessLog writes one without it
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(),
                            access_log=False, log_config=None, h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
                            timeout_graceful_shutdown=int(settings.graceful_shutdown_s), lifespan="on")
    uvicorn.Server(config).run()
