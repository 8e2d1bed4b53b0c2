"""Writes through faults: PostgreSQL restarted, PostgreSQL killed, the embedder hanging.

Runs `mcp-memory serve --transport http` on loopback against its own embedded PostgreSQL (used
as an external server) and a local HTTP server that speaks OpenAI's embeddings API. W writers
write unique memories over streamable HTTP through the SDK client, each retrying a failed write
with the same idempotency key until it is acknowledged (what a careful client does). Phases:
normal, PostgreSQL restart (fast shutdown), normal, PostgreSQL crash (SIGKILL of the postmaster),
normal, embedder hang, normal. Afterwards every acknowledged write must be in the database
exactly once.

Reports: acknowledged writes, lost, duplicated; per phase write p50 / p99 and errors; seconds
from the database's return to the first acknowledged write; after the embedder heals, seconds until
new writes get their vector inline again (the newest memory has one), seconds until the backlog of
memories stored without a vector is empty, and that backfill's pace in minutes per 10,000.

Usage: python bench/faults.py [--writers 16] [--phase-s 8]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, machine, table  # noqa: E402

sys.path.insert(0, str(REPO))
from stats import percentile  # noqa: E402

from mcp_memory.auth import new_api_key, parse_api_key  # noqa: E402
from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.db.embedded import EmbeddedPostgres  # noqa: E402
from mcp_memory.repository.api_keys import ApiKeyRepository  # noqa: E402
from tests.local_api import Answer, LocalAPI  # noqa: E402  (the tests' local API server)

SERVE = str(Path(sys.executable).with_name("mcp-memory"))
DIMENSION = 64


class FakeEmbeddings(LocalAPI):
    """POST /v1/embeddings in OpenAI's shape with deterministic vectors; `hang` makes it stall."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = False
        self.start()
        self.url = f"{self.base}/v1"

    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        if self.hang:
            time.sleep(30)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(texts)]
        return 200, {"object": "list", "data": data, "model": body["model"],
                     "usage": {"prompt_tokens": 1, "total_tokens": 1}}


def vector(text: str) -> list[float]:
    raw = hashlib.sha256(text.encode()).digest() * 8
    values = [v / 255 - 0.5 for v in struct.unpack(f"{DIMENSION}B", raw[:DIMENSION])]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    def __init__(self) -> None:
        self.phase = "start"
        self.acknowledged: dict[str, str] = {}
        self.latency: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.kinds: dict[str, int] = {}  # "phase: what the writer saw" -> count
        self.last_ack = 0.0
        self.stop = False

    def error(self, what: str) -> None:
        self.errors[self.phase] = self.errors.get(self.phase, 0) + 1
        key = f"{self.phase}: {what[:90]}"
        self.kinds[key] = self.kinds.get(key, 0) + 1


async def writer(base: str, key: str, n: int, run: Run) -> None:
    """One MCP session kept open as a real client would; a failed call is retried with the same
    idempotency key until acknowledged, and a broken session is replaced."""
    headers = {"Authorization": f"Bearer {key}"}
    seq = 0
    while not run.stop:
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as c:
                    while not run.stop:
                        content = f"fault writer {n} memory {seq}"
                        phase, started = run.phase, time.perf_counter()
                        try:
                            result = await c.call_tool("memory_write", {"content": content,
                                                                        "idempotency_key": f"w{n}-{seq}"})
                        finally:
                            run.latency.setdefault(phase, []).append(time.perf_counter() - started)
                        if result.is_error:
                            run.error(result.content[0].text if result.content else "error")
                            await anyio.sleep(0.2)
                            continue
                        run.acknowledged[content] = result.structured_content["memory"]["id"]
                        run.last_ack = time.monotonic()
                        seq += 1
        except Exception as exc:  # noqa: BLE001 - the server or the session is gone: a new session, the same write
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the SDK's task groups wrap it
                exc = exc.exceptions[0]
            run.error(f"{type(exc).__name__} {exc}")
            await anyio.sleep(0.2)


async def embedder_recovery(dsn: str, healed: float, healed_wall: datetime, out: dict[str, Any]) -> None:
    """Watch the store after the embedder heals: when the newest write has a vector again (inline),
    and when no live memory lacks one (the backlog backfilled)."""
    conn = await asyncpg.connect(dsn)
    try:
        out["backlog_at_heal"] = await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL")
        with anyio.move_on_after(300):
            while "backlog_empty_s" not in out:
                now = time.monotonic()
                if "first_inline_vector_s" not in out and await conn.fetchval(
                        "SELECT embedding IS NOT NULL FROM memories WHERE created_at > $1 "
                        "ORDER BY created_at DESC LIMIT 1", healed_wall):
                    out["first_inline_vector_s"] = round(now - healed, 2)
                if not await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL"):
                    out["backlog_empty_s"] = round(now - healed, 2)
                await anyio.sleep(0.1)
    finally:
        await conn.close()


async def recovery(run: Run, since: float) -> float | None:
    """Seconds from `since` to the next acknowledged write (None: not within two minutes)."""
    with anyio.move_on_after(120):
        while True:
            if run.last_ack > since:
                return round(run.last_ack - since, 2)
            await anyio.sleep(0.05)
    return None


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as err:
        return subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)


def postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


async def main_async(args: argparse.Namespace) -> None:
    run = Run()
    fake = FakeEmbeddings()
    recoveries: dict[str, float | None] = {}
    embedder: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-memory-faults-") as tmp:
        pg = EmbeddedPostgres(Path(tmp))
        await anyio.to_thread.run_sync(pg.start)
        dsn = pg.dsn("postgres")
        env = {**os.environ, "MCP_MEMORY_DATABASE_URL": dsn, "MCP_MEMORY_LOG_LEVEL": "WARNING",
               "MCP_MEMORY_EMBEDDING_PROVIDER": "openai", "MCP_MEMORY_EMBEDDING_MODEL": "fake-embeddings",
               "MCP_MEMORY_EMBEDDING_DIMENSION": str(DIMENSION), "MCP_MEMORY_EMBEDDING_API_KEY": "sk-fake",
               "MCP_MEMORY_EMBEDDING_BASE_URL": fake.url, "MCP_MEMORY_EMBEDDING_TIMEOUT_S": "2",
               "MCP_MEMORY_WRITE_RATE_PER_MINUTE": "0"}
        db = await open_database(Settings(database_url=dsn, data_dir=Path(tmp) / "unused"))
        key = new_api_key("fault")
        await ApiKeyRepository(db.admin).create("fault", "faults", parse_api_key(key)[1], agents=None, projects=None,
                                                permissions=["read", "write"], expires_at=None)
        await db.close()
        port = free_port()
        server = start_server(port, env, Path(tmp) / "server.log")
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                await anyio.sleep(0.1)
            async with anyio.create_task_group() as tg:
                for n in range(args.writers):
                    tg.start_soon(writer, base, key, n, run)

                async def phase(name: str) -> None:
                    run.phase = name
                    print(f"phase: {name}", file=sys.stderr, flush=True)
                    await anyio.sleep(args.phase_s)

                await phase("normal")
                run.phase = "postgres restart"
                await anyio.to_thread.run_sync(pg.stop)
                await anyio.sleep(2)
                await anyio.to_thread.run_sync(pg.start)
                recoveries["postgres restart"] = await recovery(run, time.monotonic())
                await phase("normal after restart")
                run.phase = "postgres crash"
                os.kill(postmaster_pid(pg.pgdata), signal.SIGKILL)
                await anyio.sleep(2)
                pg = EmbeddedPostgres(Path(tmp))
                await anyio.to_thread.run_sync(pg.start)
                recoveries["postgres crash"] = await recovery(run, time.monotonic())
                await phase("normal after crash")
                fake.hang = True
                await phase("embedder hangs")
                fake.hang = False
                healed = time.monotonic()
                tg.start_soon(embedder_recovery, dsn, healed, datetime.now(UTC), embedder)
                await phase("normal after embedder")
                run.stop = True
            conn = await asyncpg.connect(dsn)
            try:
                # The server re-embeds by itself once the embedder answers again (breaker probes).
                reembedded_s = embedder.get("backlog_empty_s")
                rows = await conn.fetch("SELECT content, count(*) AS n, count(embedding) AS embedded FROM memories "
                                        "WHERE user_id = 'fault' GROUP BY content")
            finally:
                await conn.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
            await anyio.to_thread.run_sync(pg.stop)
            server_log = (Path(tmp) / "server.log").read_text(errors="replace")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.with_suffix(".server.log").write_text(server_log)  # to read what went wrong
    # Expected faults must read as one line each, never a traceback or a connection given back
    # to the pool inside a transaction.
    log_problems = {"tracebacks": server_log.count("Traceback (most recent call last)"),
                    "internal_errors": server_log.count("internal error "),
                    "reset_in_transaction": server_log.count("Resetting connection with an active transaction")}
    stored = {r["content"]: r["n"] for r in rows}
    lost = [c for c in run.acknowledged if c not in stored]
    duplicated = [c for c, n in stored.items() if n > 1]
    without_vector = sum(r["n"] - r["embedded"] for r in rows)
    phases = []
    for name, times in run.latency.items():
        ms = [t * 1000 for t in times]
        phases.append({"phase": name, "calls": len(ms), "errors": run.errors.get(name, 0),
                       "p50_ms": round(percentile(ms, 50), 1), "p99_ms": round(percentile(ms, 99), 1)})
    report = {"benchmark": "faults", "writers": args.writers, "phase_s": args.phase_s,
              "acknowledged": len(run.acknowledged), "lost": len(lost), "duplicated": len(duplicated),
              "stored_without_vector_at_end": without_vector, "recovery_s": recoveries,
              "all_vectors_back_after_s": reembedded_s, "embedder_recovery": embedder,
              "backfill_minutes_per_10k": pace(embedder), "server_log": log_problems, "errors_seen": run.kinds,
              "phases": phases,
              "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"acknowledged {len(run.acknowledged)}, lost {len(lost)}, duplicated {len(duplicated)}; "
          f"recovery {recoveries}; stored without a vector at the end: {without_vector} "
          f"(all re-embedded {reembedded_s} s after the embedder healed)")
    print(f"server log: {log_problems}")
    for what, n in sorted(run.kinds.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {n:5d}  {what}")
    print(table(["after the embedder healed", "seconds"],
                [["first write with its vector inline", embedder.get("first_inline_vector_s")],
                 [f"backlog ({embedder.get('backlog_at_heal')} memories) empty", reembedded_s],
                 ["backfill pace, minutes per 10,000", pace(embedder)]], first_width=36))
    print(table(["phase", "calls", "errors", "p50 ms", "p99 ms"],
                [[p["phase"], p["calls"], p["errors"], p["p50_ms"], p["p99_ms"]] for p in phases], first_width=22))
    print(f"wrote {args.out}")


def pace(embedder: dict[str, Any]) -> float | None:
    backlog, seconds = embedder.get("backlog_at_heal"), embedder.get("backlog_empty_s")
    if not backlog or not seconds:
        return None
    return round(seconds / backlog * 10_000 / 60, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--phase-s", type=float, default=8.0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "faults.json")
    logging.getLogger("mcp").setLevel(logging.ERROR)  # "session termination failed" while the server is down
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
