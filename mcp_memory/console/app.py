"""The console's routes, mounted under /ui by the HTTP app (and by `mcp-memory ui`)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import Settings
from ..server.state import StateHolder
from .pages import account, browse, entities, forget, memory, overview, search
from .web import HEADERS, Console, Ctx

STATIC = Path(__file__).with_name("static")


class _Headers:
    """The console's security headers on static files too (they are served outside `page`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def headed(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()
                         if k.lower().encode() not in present and k != "Cache-Control"]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, headed)


async def not_found(ctx: Ctx) -> Response:
    return ctx.render("notfound.html", status=404)


def build_console(holder: StateHolder, settings: Settings, allowed_hosts: list[str]) -> Starlette:
    """The console as an ASGI app; mount it at /ui. `allowed_hosts` are the Host headers served
    (patterns like 'localhost:*'), the same list the MCP transports use against DNS rebinding."""
    console = Console(holder, settings, allowed_hosts)
    pages = (overview, search, browse, memory, entities, forget, account)
    routes = [route for module in pages for route in module.routes(console)]
    routes.append(Mount("/static", app=_Headers(StaticFiles(directory=STATIC)), name="static"))
    # Last: any other path is a page of its own (styled, in the layout), not a bare "Not Found".
    routes.append(Route("/{rest:path}", console.page(not_found, public=True), methods=["GET", "POST"]))
    return Starlette(routes=routes)
