"""The console's routes, mounted under /ui by the HTTP app (and by `mcp-memory ui`)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..config import Settings
from ..server.state import StateHolder
from .pages import account, browse, forget, memory, overview, search
from .web import Console

STATIC = Path(__file__).with_name("static")


def build_console(holder: StateHolder, settings: Settings, allowed_hosts: list[str]) -> Starlette:
    """The console as an ASGI app; mount it at /ui. `allowed_hosts` are the Host headers served
    (patterns like 'localhost:*'), the same list the MCP transports use against DNS rebinding."""
    console = Console(holder, settings, allowed_hosts)
    pages = (overview, search, browse, memory, forget, account)
    routes = [route for module in pages for route in module.routes(console)]
    routes.append(Mount("/static", app=StaticFiles(directory=STATIC), name="static"))
    return Starlette(routes=routes)
