"""Run `mcp-memory serve --transport http` as a real subprocess for tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVE = str(Path(sys.executable).with_name("mcp-memory"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A server whose repository adds no scope filter of its own, so row-level security alone keeps
# tenants apart: only tests can build it (production code has no switch for it).
WITHOUT_SCOPE_FILTER = [sys.executable, "-c", "import sys; from mcp_memory.repository import sql; "
                        "sql.SCOPE_FILTER = False; from mcp_memory.cli import main; sys.exit(main(sys.argv[1:]))"]


# How many free ports to try: a port found free may be taken by another test's server before ours
# binds it (a race between processes of a parallel run: "address already in use").
PORT_TRIES = 3


@contextmanager
def http_server(db_url: str, *args: str, env: dict[str, str] | None = None,
                port: int | None = None, scope_filter: bool = True) -> Iterator[str]:
    """Start a server on a free loopback port; yields its base URL once /health says ok."""
    for attempt in range(1 if port else PORT_TRIES):
        chosen = port or free_port()
        # The server's log goes to a file, not a pipe nobody reads while the test runs (a full pipe
        # would stop the server mid-write), and a failing test shows its end.
        log = tempfile.TemporaryFile("a+")  # appended to whatever our reads do to the shared offset
        proc = subprocess.Popen(
            [*([SERVE] if scope_filter else WITHOUT_SCOPE_FILTER), "serve", "--transport", "http", "--port",
             str(chosen), *args],
            env={**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_LOG_LEVEL": "WARNING", **(env or {})},
            stdout=subprocess.DEVNULL, stderr=log, text=True)
        base = f"http://127.0.0.1:{chosen}"
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    error = _read(log)
                    if "address already in use" in error and attempt + 1 < (1 if port else PORT_TRIES):
                        break
                    raise RuntimeError(f"server exited: {error}")
                try:
                    if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server did not become healthy; its log:\n{_read(log)[-LOG_SHOWN:]}")
                time.sleep(0.1)
            if proc.poll() is not None:
                continue  # the port was taken: another one
            try:
                yield base
            except BaseException:
                print(f"the server's log (its last {LOG_SHOWN} characters):\n{_read(log)[-LOG_SHOWN:]}",
                      file=sys.stderr)
                raise
            return
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


# How much of a server's log a failing test shows.
LOG_SHOWN = 4000


def _read(log: IO[str]) -> str:
    log.flush()
    log.seek(0)
    return log.read()


@asynccontextmanager
async def http_client(base: str, key: str, mode: str = "legacy", **headers: str):
    """An SDK client over streamable HTTP with a bearer credential and extra headers."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}", **headers}, timeout=30) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client:
            yield client
