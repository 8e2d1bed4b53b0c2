"""Console page timings at 10,000 memories in one namespace: each page fetched over HTTP from a
real `mcp-memory serve --transport http` with a signed-in session (the server-side session
lookup included), wall clock from this process over loopback.

Seeds a fresh embedded database in a temporary folder (write_many, occurred_at spread over a
year, 40 tags), then fetches every page `--rounds` times. Prints a table, writes JSON.

Usage: python bench/console_pages.py [--memories 10000] [--rounds 20] [--embedder local|static]
                                     [--out bench/results/console_pages.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).parent))
from load_http import SERVE, free_port, wait_healthy  # noqa: E402
from locomo import latency, machine, table  # noqa: E402
from stdio_latency import OBJECTS, SUBJECTS, VERBS  # noqa: E402

from mcp_memory.auth import new_api_key, parse_api_key  # noqa: E402
from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.models import Principal, WriteItem  # noqa: E402
from mcp_memory.repository.api_keys import ApiKeyRepository  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

USER, AGENT, PROJECT = "bench", "planner", "shop"


async def seed(settings: Settings, n: int) -> tuple[str, str]:
    """n memories in one namespace; returns the database URL and an API key."""
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        p = Principal(user_id=USER, agent_id=AGENT, project_id=PROJECT, actor="bench:console", client="bench")
        rng = random.Random(7)
        now = datetime.now(UTC)
        for start in range(0, n, 500):
            items = [WriteItem(content=f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (#{i})",
                               kind=rng.choice(["note", "fact", "episode"]), tags=[f"t{rng.randrange(40)}"],
                               scope="agent_project", occurred_at=now - timedelta(minutes=rng.randrange(525_600)))
                     for i in range(start, min(n, start + 500))]
            await service.write_many(p, items)
        key = new_api_key(USER)
        await ApiKeyRepository(db.admin).create(USER, "bench", parse_api_key(key)[1], agents=None, projects=None,
                                                permissions=["read", "write", "forget"], expires_at=None)
        return db.dsn, key
    finally:
        await db.close()


def sign_in(base: str, key: str) -> httpx2.Client:
    client = httpx2.Client(base_url=base, timeout=60)
    form = client.get("/ui/signin").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)
    done = client.post("/ui/signin", data={"csrf": csrf, "key": key, "agent": AGENT, "project": PROJECT},
                       follow_redirects=False)
    assert done.status_code == 303, done.text[:300]
    return client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--embedder", default="local", help="local (the default model) or static (quicker seeding)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/console_pages.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-console-") as tmp:
        env = {**os.environ, "MCP_MEMORY_DATA_DIR": tmp, "MCP_MEMORY_LOG_LEVEL": "WARNING",
               "MCP_MEMORY_EMBEDDING_PROVIDER": args.embedder if args.embedder != "static" else "local",
               **({"MCP_MEMORY_EMBEDDING_MODEL": "static-10k-64d-int8"} if args.embedder == "static" else {})}
        settings = Settings(data_dir=Path(tmp), log_level="WARNING", embedding_provider=env[
            "MCP_MEMORY_EMBEDDING_PROVIDER"], embedding_model=env.get("MCP_MEMORY_EMBEDDING_MODEL"))
        started = time.perf_counter()
        _, key = asyncio.run(seed(settings, args.memories))
        seeded_s = time.perf_counter() - started
        port = free_port()
        proc = subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(port)],
                                env=env, stdout=subprocess.DEVNULL,  # the same data dir: its embedded server
                                stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc)
            client = sign_in(base, key)
            browse = client.get("/ui/browse").text
            memory_id = re.search(r'href="/ui/memories/([0-9a-f-]+)"', browse).group(1)
            next_page = re.search(r'href="(\?[^"]*cursor=[^"]+)"', browse).group(1).replace("&amp;", "&")
            pages = [("overview", "/ui/"), ("browse", "/ui/browse"), ("browse, page 2", "/ui/browse" + next_page),
                     ("browse, tag filter", "/ui/browse?tag=t7"),
                     ("search", "/ui/search?q=deploy+the+database"),
                     ("search, explain", "/ui/search?q=deploy+the+database&explain=1"),
                     ("memory", f"/ui/memories/{memory_id}"), ("namespaces", "/ui/namespaces"),
                     ("forgotten", "/ui/forgotten"), ("account", "/ui/account"),
                     ("search, 60,000-char query (400)", None)]
            rows, report = [], {}
            for name, url in pages:
                samples, status, size = [], 0, 0
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    if url is None:
                        response = client.get("/ui/search", params={"q": "x" * 60_000})  # httpx's URL cap
                    else:
                        response = client.get(url)
                    samples.append(time.perf_counter() - t0)
                    status, size = response.status_code, len(response.content)
                stats = latency(samples)
                report[name] = {**stats, "status": status, "bytes": size}
                rows.append([name, status, stats["p50_ms"], stats["p95_ms"], stats["max_ms"], size])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    out = {"benchmark": "console_pages", "memories": args.memories, "namespace": f"{AGENT}/{PROJECT}",
           "rounds": args.rounds, "embedder": args.embedder, "seed_s": round(seeded_s, 1), "pages": report,
           "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(f"{args.memories} memories in {AGENT}/{PROJECT}, seeded in {seeded_s:.0f} s; {args.rounds} fetches per page")
    print(table(["page", "status", "p50 ms", "p95 ms", "max ms", "bytes"], rows, first_width=28))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
