"""What the console's user-wide read policy (sql/rls.sql `tenant_user_read`) costs: the namespace
picker and the all-namespaces view as the app role under row-level security, against the same
queries run as the owner (how they ran before), and the one-namespace list / count every tool
runs, with and without the policy in place (it ORs into every SELECT on memories).

Seeds a fresh embedded database (rows inserted directly: 15 namespaces per user, two users), then
times each query `--rounds` times in its own transaction. Prints a table, writes JSON.

Usage: python bench/console_rls.py [--memories 30000] [--rounds 40] [--out bench/results/console_rls.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from locomo import latency, machine, table  # noqa: E402

from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import Database, open_database  # noqa: E402
from mcp_memory.repository.console_sessions import ConsoleSessionRepository  # noqa: E402
from mcp_memory.repository.sql import local_transaction  # noqa: E402

ONE = {"mcp_memory.user_id": "alice", "mcp_memory.agent_id": "a1", "mcp_memory.project_id": "p1"}
WHERE_ONE = """m.user_id = 'alice' AND (m.agent_id IS NULL OR m.agent_id = 'a1')
               AND (m.project_id IS NULL OR m.project_id = 'p1') AND m.deleted_at IS NULL"""
LIST = f"SELECT id FROM memories m WHERE {WHERE_ONE} ORDER BY occurred_at DESC LIMIT 50"
COUNT = f"SELECT count(*) FROM memories m WHERE {WHERE_ONE}"
NAMESPACES = """SELECT agent_id, project_id, count(*) FROM memories WHERE user_id = 'alice' AND deleted_at IS NULL
                GROUP BY 1, 2"""
RECENT = """SELECT id, left(content, 200) FROM memories WHERE user_id = 'alice' AND deleted_at IS NULL
            ORDER BY occurred_at DESC, id DESC LIMIT 50"""
TOTAL = "SELECT count(*) FROM memories WHERE user_id = 'alice' AND deleted_at IS NULL"


async def timed(rounds: int, call) -> dict[str, float]:  # noqa: ANN001 - an async callable
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - start)
    return latency(seconds)


async def in_one_namespace(db: Database, sql: str) -> None:
    async with local_transaction(db.pool, ONE) as conn:
        await conn.fetch(sql)


async def recent_as_owner(db: Database) -> None:
    async with db.admin.acquire() as conn:  # as recent_across ran before: the total, then the page
        await conn.fetchval(TOTAL)
        await conn.fetch(RECENT)


async def run(memories: int, rounds: int) -> dict:
    db = await open_database(Settings(data_dir=Path(tempfile.mkdtemp()), user="alice"))
    try:
        await db.admin.execute(
            """INSERT INTO memories (user_id, agent_id, project_id, content, content_hash, occurred_at)
               SELECT u, 'a' || (i % 5), 'p' || (i % 3), 'memory ' || i, md5(u || i), now() - i * interval '1 minute'
               FROM generate_series(1, $1::int) i, unnest(ARRAY['alice', 'bob']) u""", memories)
        await db.admin.execute("ANALYZE memories")
        repo = ConsoleSessionRepository(db.pool)
        results = {
            "namespaces, app role + RLS (now)": await timed(rounds, lambda: repo.namespaces("alice", None, None)),
            "namespaces, owner (before)": await timed(rounds, lambda: db.admin.fetch(NAMESPACES)),
            "all namespaces page, app role + RLS (now)": await timed(
                rounds, lambda: repo.recent_across("alice", None, None, limit=50, offset=0)),
            "all namespaces page, owner (before)": await timed(rounds, lambda: recent_as_owner(db)),
            "one-namespace list, with the policy": await timed(rounds, lambda: in_one_namespace(db, LIST)),
            "one-namespace count, with the policy": await timed(rounds, lambda: in_one_namespace(db, COUNT)),
        }
        await db.admin.execute("DROP POLICY tenant_user_read ON memories")
        results["one-namespace list, without it"] = await timed(rounds, lambda: in_one_namespace(db, LIST))
        results["one-namespace count, without it"] = await timed(rounds, lambda: in_one_namespace(db, COUNT))
    finally:
        await db.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=30_000, help="memories per user (two users)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "console_rls.json")
    args = parser.parse_args()
    results = asyncio.run(run(args.memories, args.rounds))
    print(f"{args.memories} memories per user in 15 namespaces; {args.rounds} runs each")
    print(table(["query", "p50 ms", "p95 ms", "max ms"],
                [[name, r["p50_ms"], r["p95_ms"], r["max_ms"]] for name, r in results.items()], first_width=40))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "console_rls", "memories_per_user": args.memories,
                                    "rounds": args.rounds, "machine": machine(), "queries": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
