"""What every console page shares: the session and principal of the request, the CSRF and Origin
checks on every POST, the Host check (DNS rebinding), rendering with autoescaped templates, safe
headers, service errors turned into a page with the service's own message, and a database outage
turned into a 503 page in the console's layout that gives back the form being sent."""

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
from ..netaddr import is_loopback
from ..server.errors import UNAVAILABLE, is_outage, report_outage
from ..server.state import AppState, StateHolder
from ..service import MemoryService
from . import forms
from .auth import Session, Sessions, cookie_value, parse_cookie

log = logging.getLogger(__name__)

PREFIX = "/ui"
TEMPLATES = Path(__file__).with_name("templates")
RETRY_AFTER_S = 5
# Form fields sent back as they were (not shown as boxes) when an outage page offers to resend.
SYSTEM_FIELDS = frozenset({"if_version", "token", "ids", "next", "seq", "pinned", "force", "older", "into", "source",
                           "memory", "entity", "remove"})
SECRET_FIELDS = frozenset({"csrf", "key"})  # never echoed: the API key stays out of every page
STATUS = [(InvalidInput, 400), (PermissionDenied, 403), (NotFound, 404), (Conflict, 409), (RateLimited, 429),
          (Unavailable, 503)]
# Outcomes a redirect may announce (?done=…): fixed texts, so nothing from the URL is echoed.
DONE = {"updated": "Saved: a new version was written.", "unchanged": "Nothing to save: the fields were the same.",
        "pinned": "Pinned.", "unpinned": "Unpinned.", "superseded": "Marked as superseded by this memory.",
        "restored": "Restored.", "namespace": "Namespace switched.", "signedout": "Signed out.",
        "everywhere": "Every session of this sign-in was ended, this one too.",
        "undone": "The decision was undone: what it changed is back as it was (see the history).",
        "merged": "Merged: the other entity's mentions and keyed facts are this one's now (see Edits; Split undoes "
                  "it). No memory was marked superseded or un-superseded.",
        "split": "Split off: exactly the mentions and keyed facts the merge moved are back (see Edits).",
        "key": "The key was fixed: which value is current, and which memory replaces which, were worked out "
               "again from the facts in order of their dates (see each memory's history).",
        "entity-undone": "Undone (see Edits): what it changed is back as it was."}
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
    state: AppState | None
    session: Session
    csrf: str
    principal: Principal | None = None
    params: forms.Fields = field(default_factory=lambda: forms.Fields({}))
    form: forms.Fields = field(default_factory=lambda: forms.Fields({}))
    cookie: str | None = None  # a new cookie value (sign-in, sign-out, a fresh visitor)

    @property
    def p(self) -> Principal:
        assert self.principal is not None
        return self.principal

    @property
    def st(self) -> AppState:
        assert self.state is not None
        return self.state

    async def service(self) -> MemoryService:
        return await self.st.service()

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
        self.env.filters["num"] = _num

    # --- request plumbing -------------------------------------------------------------------

    def host_allowed(self, host: str) -> bool:
        for allowed in self.allowed_hosts:
            if host == allowed or allowed.endswith(":*") and host.startswith(allowed[:-1]):
                return True
        return False

    def secure(self, request: Request) -> bool:
        """Whether the browser reached us over HTTPS: directly, or through a TLS-terminating proxy
        named by MCP_MEMORY_PUBLIC_URL=https://…. Only then is the cookie marked Secure (a browser
        drops a Secure cookie set over plain HTTP, which made sign-in fail off loopback)."""
        return request.url.scheme == "https" or (self.settings.public_url or "").startswith("https://")

    def plain_http_warning(self, request: Request) -> bool:
        """Plain HTTP to an address other than loopback: the key and the session cross the network
        readable. It works (the operator chose it) but every page says so."""
        return not self.secure(request) and not is_loopback(request.url.hostname or "")

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
        """An endpoint: session, CSRF + Origin on POST, principal (or the sign-in page), errors and
        outages as pages."""

        async def endpoint(request: Request) -> Response:
            if not self.host_allowed(request.headers.get("host", "")):
                return HTMLResponse("Host not allowed", status_code=421)
            cookie = request.cookies.get(self.cookie_name(request))
            ctx = Ctx(self, request, self.holder.current, Session(""), "", params=forms.query(request))
            parsed = parse_cookie(cookie)
            if parsed is not None:  # the CSRF token needs only the cookie: an outage page can offer to resend
                ctx.session = Session(parsed[1])
                ctx.csrf = self.sessions.csrf(ctx.session)
            try:
                if request.method == "POST":
                    ctx.form = await forms.form(request)  # read first, so an outage page can give it back
                if ctx.state is None:
                    raise _Starting()
                session, fresh = await self.sessions.open(ctx.state, cookie)
                ctx.session, ctx.csrf = session, self.sessions.csrf(session)
                if fresh:
                    ctx.cookie = _cookie_of(session)
                if request.method == "POST":
                    if cookie is None:
                        raise PermissionDenied(
                            "your browser sent no console cookie with this form, so it cannot be checked: allow "
                            "cookies for this site" + (" (over plain HTTP a cookie marked Secure is dropped: "
                                                       "see the warning above)" if self.plain_http_warning(request)
                                                       else "") + ", reload the page and send it again")
                    if self.cross_site(request):
                        raise PermissionDenied("this form was sent from another site; nothing was changed")
                    if not self.sessions.check_csrf(session, ctx.form.get("csrf")):
                        raise PermissionDenied("this form did not come from this console page (its CSRF token is "
                                               "missing or stale): reload the page and send it again")
                ctx.principal = self.sessions.principal(session)
                forms.check_lengths(ctx.params.values)
                forms.check_lengths(ctx.form.values)
                if ctx.principal is None and not public:
                    if request.method == "POST":
                        raise PermissionDenied("sign in first (the session ended, or was signed out)")
                    return self._finish(request, ctx.redirect("/signin", next=request.url.path), ctx)
                response = await handler(ctx)
            except (_Starting, Unavailable) as exc:
                response = self.unavailable(ctx, None if isinstance(exc, _Starting) else exc)
            except MemoryServiceError as exc:
                status = next((code for kind, code in STATUS if isinstance(exc, kind)), 400)
                response = ctx.render("error.html", status=status, message=str(exc), form_back=_kept(ctx, exc))
            except Exception as exc:
                if not is_outage(exc):
                    raise
                response = self.unavailable(ctx, exc)
            return self._finish(request, response, ctx)

        return endpoint

    def unavailable(self, ctx: Ctx, exc: BaseException | None) -> HTMLResponse:
        """The outage page: 503 with Retry-After, one log line per outage (not a traceback per
        request), and the form being sent shown again with what was typed."""
        if exc is not None:
            report_outage(exc)
        message = UNAVAILABLE if exc is not None else "The server is starting; retry in a few seconds."
        response = ctx.render("unavailable.html", status=503, message=message, form_back=_kept(ctx, exc))
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response

    def _finish(self, request: Request, response: Response, ctx: Ctx) -> Response:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if ctx.cookie is not None:
            # A session cookie (no Max-Age): it ends with the browser, or with the stored session.
            # Lax: a link from another site opens the page signed in; POSTs carry the CSRF token.
            response.set_cookie(self.cookie_name(request), ctx.cookie, path="/", secure=self.secure(request),
                                httponly=True, samesite="lax")
        return response

    # --- rendering --------------------------------------------------------------------------

    def render(self, ctx: Ctx, template: str, status: int, **values: Any) -> HTMLResponse:
        done = DONE.get(ctx.params.get("done"))
        values.setdefault("form_back", None)
        html = self.env.get_template(template).render(
            prefix=PREFIX, csrf=ctx.csrf, principal=ctx.principal, session=ctx.session, no_auth=self.settings.no_auth,
            kinds=KINDS, scopes=forms.SCOPES, done=done, path=ctx.request.url.path,
            plain_http=self.plain_http_warning(ctx.request), **values)
        return HTMLResponse(html, status_code=status)


def _num(value: Any) -> Any:
    """A stored real as people write it: 0.8, not 0.800000011920929 (a float4 read back)."""
    return f"{value:.4g}" if isinstance(value, float) else value


class _Starting(Exception):
    """The server's state is not built yet (the lifespan is still starting)."""


def _cookie_of(session: Session) -> str:
    return cookie_value(session.row.user_id if session.row else None, session.token)


def _kept(ctx: Ctx, exc: BaseException | None) -> dict[str, Any] | None:
    """A POST that failed for a reason the user can fix or wait out (an outage, a stale version)
    comes back as a form to send again, with what was typed. The CSRF token is the session's
    (derived from the cookie, so known without the database); the API key is never echoed."""
    if ctx.request.method != "POST" or not ctx.form.values:
        return None
    if exc is not None and not (is_outage(exc) or isinstance(exc, (Unavailable, Conflict))):
        return None
    hidden: list[tuple[str, str]] = []
    shown: list[tuple[str, str, bool]] = []
    for name, values in ctx.form.values.items():
        if name in SECRET_FIELDS:
            continue
        for value in values:
            value = value[:forms.MAX_ECHO_FIELD]
            if name in SYSTEM_FIELDS:
                hidden.append((name, value))
            else:
                shown.append((name, value, name == "content" or "\n" in value or len(value) > 80))
    return {"action": ctx.request.url.path, "hidden": hidden, "shown": shown,
            "dropped_key": "key" in ctx.form.values}
