"""`mcp-memory ui`: the review console on loopback, for the local owner (no key, as --no-auth),
over the configured database (the embedded one by default); opens the browser."""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ..config import Settings
from ..limits import MAX_REQUEST_HEAD_BYTES

if TYPE_CHECKING:  # the web stack is loaded by `ui` alone, not by every command's parser
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import RedirectResponse

DEFAULT_PORT = 8766


def build_app(settings: Settings) -> Starlette:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    from ..netaddr import is_loopback
    from ..server.http import OutageMiddleware, _transport_security
    from ..server.state import StateHolder
    from .app import build_console

    if not is_loopback(settings.host):
        raise ValueError(f"`mcp-memory ui` serves loopback only, not {settings.host}: for a remote console use "
                         "`mcp-memory serve --transport http` (sign in with an API key) and open /ui")
    holder = StateHolder(settings)

    async def home(_: Request) -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with holder.hold():
            yield

    console = build_console(holder, settings, _transport_security(settings).allowed_hosts)
    return Starlette(routes=[Route("/", home), Mount("/ui", app=console)], lifespan=lifespan,
                     middleware=[Middleware(OutageMiddleware)])


def _open_when_up(url: str, host: str, port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                webbrowser.open(url)
                return
        except OSError:
            time.sleep(0.2)


def cmd_ui(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    # Its own default port, so it runs next to `mcp-memory serve --transport http` (8765).
    settings = settings.model_copy(update={"host": args.host or "127.0.0.1", "no_auth": True,
                                           "port": args.port if args.port is not None else DEFAULT_PORT})
    try:
        app = build_app(settings)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    url = f"http://{settings.host}:{settings.port}/ui/"
    print(f"review console on {url} (Ctrl-C stops it)", file=sys.stderr)
    if not args.no_browser:
        threading.Thread(target=_open_when_up, args=(url, settings.host, settings.port), daemon=True).start()
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning", lifespan="on",
                            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES)
    uvicorn.Server(config).run()
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    ui = sub.add_parser("ui", parents=[common], help="open the review console in a browser (loopback, no key)")
    ui.add_argument("--host", help="loopback address to bind (default 127.0.0.1)")
    ui.add_argument("--port", type=int, help=f"port (default {DEFAULT_PORT})")
    ui.add_argument("--no-browser", action="store_true", help="print the address, do not open a browser")
    ui.set_defaults(run=cmd_ui)
