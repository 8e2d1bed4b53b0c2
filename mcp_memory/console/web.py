"""What every console page shares: the session and principal of the request, the CSRF check on
every POST, the Host check (DNS rebinding), rendering with autoescaped templates, safe headers,
and service errors turned into a page with the service's own message."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..config import Settings
from ..errors import (
    Conflict,
    InvalidInput,
    MemoryServiceError,
    NotFound,
    PermissionDenied,
    RateLimited,
    Unavailable,
)
from ..models import KINDS, Principal
from ..server.http import is_loopback
from ..server.state import AppState, StateHolder
from ..service import MemoryService
from . import forms
from .auth import Session, Sessions, new_session

log = logging.getLogger(__name__)

PREFIX = "/ui"
TEMPLATES = Path(__file__).with_name("templates")
STATUS = [(InvalidInput, 400), (PermissionDenied, 403), (NotFound, 404), (Conflict, 409), (RateLimited, 429),
          (Unavailable, 503)]
# Outcomes a redirect may announce (?done=…): fixed texts, so nothing from the URL is echoed.
DONE = {"updated": "Saved: a new version was written.", "unchanged": "Nothing to save: the fields were the same.",
        "pinned": "Pinned.", "unpinned": "Unpinned.", "superseded": "Marked as superseded by this memory.",
        "restored": "Restored.", "namespace": "Namespace switched.", "signedout": "Signed out.",
        "undone": "The decision was undone: what it changed is back as it was (see the history)."}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: with it browsers send `Origin: null` on form posts, which the origin check refuses.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass
class Ctx:
    """One request as a page sees it."""

    console: Console
    request: Request
    state: AppState
    session: Session
    csrf: str
    principal: Principal | None = None
    params: forms.Fields = field(default_factory=lambda: forms.Fields({}))
    form: forms.Fields = field(default_factory=lambda: forms.Fields({}))
    new_session: Session | None = None  # set by sign-in / sign-out / namespace: sent as the cookie

    @property
    def p(self) -> Principal:
        assert self.principal is not None
        return self.principal

    async def service(self) -> MemoryService:
        return await self.state.service()

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        return self.console.render(self, template, status, **values)

    def redirect(self, path: str, **query: str) -> RedirectResponse:
        suffix = "&".join(f"{k}={quote(v)}" for k, v in query.items())
        return RedirectResponse(f"{PREFIX}{path}{'?' + suffix if suffix else ''}", status_code=303)


Handler = Callable[[Ctx], Awaitable[Response]]


class Console:
    def __init__(self, holder: StateHolder, settings: Settings, allowed_hosts: list[str]) -> None:
        self.holder = holder
        self.settings = settings
        self.allowed_hosts = allowed_hosts
        self.sessions = Sessions(settings)
        self.env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                               trim_blocks=True, lstrip_blocks=True)

    # --- request plumbing -------------------------------------------------------------------

    def host_allowed(self, host: str) -> bool:
        for allowed in self.allowed_hosts:
            if host == allowed or allowed.endswith(":*") and host.startswith(allowed[:-1]):
                return True
        return False

    @staticmethod
    def secure(request: Request) -> bool:
        """Secure cookies everywhere but plain HTTP on loopback (`mcp-memory ui`), where a browser
        would not send them back."""
        return request.url.scheme == "https" or not is_loopback(request.url.hostname or "")

    def cookie_name(self, request: Request) -> str:
        return "__Host-mcpm-console" if self.secure(request) else "mcpm-console"

    @staticmethod
    def cross_site(request: Request) -> bool:
        """A POST a browser says came from another site (Origin / Sec-Fetch-Site)."""
        if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return True
        origin = request.headers.get("origin")
        return origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}"

    def page(self, handler: Handler, *, public: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint: session, CSRF on POST, principal (or the sign-in page), errors as pages."""

        async def endpoint(request: Request) -> Response:
            if not self.host_allowed(request.headers.get("host", "")):
                return HTMLResponse("Host not allowed", status_code=421)
            state = self.holder.current
            if state is None:
                return HTMLResponse("The server is starting; retry shortly.", status_code=503)
            try:
                session = await self.sessions.decode(state, request.cookies.get(self.cookie_name(request)))
            except MemoryServiceError as exc:  # the database is not there yet
                return HTMLResponse(str(exc), status_code=503)
            fresh = session is None
            session = session or new_session()
            ctx = Ctx(self, request, state, session, await self.sessions.csrf(state, session),
                      params=forms.query(request))
            try:
                if request.method == "POST":
                    ctx.form = await forms.form(request)
                    if self.cross_site(request) or not await self.sessions.check_csrf(state, session,
                                                                                      ctx.form.get("csrf")):
                        raise PermissionDenied("this form did not come from this console page (its CSRF token is "
                                               "missing or stale): reload the page and send it again")
                ctx.principal = await self.sessions.principal(state, session)
                if ctx.principal is None and not public:
                    if request.method == "POST":
                        raise PermissionDenied("sign in first")
                    return await self._cookie(request, ctx.redirect("/signin", next=request.url.path), fresh, ctx)
                response = await handler(ctx)
            except MemoryServiceError as exc:
                status = next((code for kind, code in STATUS if isinstance(exc, kind)), 400)
                response = ctx.render("error.html", status=status, message=str(exc))
            return await self._cookie(request, response, fresh, ctx)

        return endpoint

    async def _cookie(self, request: Request, response: Response, fresh: bool, ctx: Ctx) -> Response:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        session = ctx.new_session or (ctx.session if fresh else None)
        if session is not None:
            # A session cookie (no Max-Age): it ends with the browser, or at the signed expiry.
            response.set_cookie(self.cookie_name(request), await self.sessions.encode(ctx.state, session),
                                path="/", secure=self.secure(request), httponly=True, samesite="strict")
        return response

    # --- rendering --------------------------------------------------------------------------

    def render(self, ctx: Ctx, template: str, status: int, **values: Any) -> HTMLResponse:
        done = DONE.get(ctx.params.get("done"))
        html = self.env.get_template(template).render(
            prefix=PREFIX, csrf=ctx.csrf, principal=ctx.principal, session=ctx.session, no_auth=self.settings.no_auth,
            kinds=KINDS, scopes=forms.SCOPES, done=done, path=ctx.request.url.path, **values)
        return HTMLResponse(html, status_code=status)
