"""Searches on kept plans against searches planned every time, in process, on LoCoMo conversations.

A search no filter narrows runs on the generic plan its statement keeps on a connection
(MCP_MEMORY_SEARCH_KEPT_PLANS, repository/sql.py fetch_on_kept_plan). This loads `--conversations`
LoCoMo conversations into one namespace (a user's store of many sessions), caches every question's
vector, then runs every question through two services on one pool, in turn (which goes first
alternating), for `--rounds` rounds: `search_kept_plans` 0 (planned every time) and the default. It
reports each round's p50 / p95 of `MemoryService.search`, whether the hits are the same (ids and
scores), how many statement texts the questions make and which share of the searches ran on a kept
plan, and the memory the pool's PostgreSQL backends hold in plans (pg_backend_memory_contexts, read
through a grant of pg_read_all_stats in the benchmark's own database).

Usage: python bench/kept_plans.py [DATASET] [--conversations 5] [--questions 1000] [--rounds 2]
                                  [--out bench/results/kept_plans.json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    DEFAULT_DATASET,
    bench_database,
    bench_principal,
    load_conversation,
    load_dataset,
    machine,
    publish,
    table,
    warm_query,
)
from stats import summary  # noqa: E402

from mcp_memory.service import MemoryService  # noqa: E402

MODES = ("planned", "kept")
PLANS = """SELECT (SELECT sum(total_bytes) FROM pg_backend_memory_contexts
                   WHERE name IN ('CachedPlan', 'CachedPlanSource', 'CachedPlanQuery')) AS bytes,
                  (SELECT count(*) FROM pg_prepared_statements) AS statements,
                  (SELECT coalesce(sum(generic_plans), 0) FROM pg_prepared_statements) AS generic,
                  (SELECT coalesce(sum(custom_plans), 0) FROM pg_prepared_statements) AS custom"""


async def plan_memory(pool: Any) -> list[dict[str, float]]:
    """Each idle pool connection's plans: MB held, statements, generic and custom plans run."""
    held = []
    for _ in range(pool.get_size()):
        held.append(await pool.acquire())
    try:
        return [{"mb": round(float(r["bytes"] or 0) / 2**20, 1), "statements": r["statements"],
                 "generic": int(r["generic"]), "custom": int(r["custom"])}
                for r in [await conn.fetchrow(PLANS) for conn in held]]
    finally:
        for conn in held:
            await pool.release(conn)


async def run(dataset: Path, conversations: int, questions: int, rounds: int) -> dict[str, Any]:
    convs = load_dataset(dataset, conversations)
    async with bench_database(None, "kept-plans") as bench:
        p = bench_principal("kept-plans")
        loader = bench.service()
        for conv in convs:
            await load_conversation(loader, p, conv, [])
        await bench.analyze()
        async with bench.admin.acquire() as conn:
            await conn.execute("GRANT pg_read_all_stats TO mcp_memory_app")
        asked = [q["question"] for conv in convs for q in conv.questions][:questions]
        for question in asked:
            await warm_query(loader, question)
        services = {mode: MemoryService(bench.repo, bench.settings.model_copy(
            update={"search_kept_plans": 0 if mode == "planned" else bench.settings.search_kept_plans}),
            bench.vectors) for mode in MODES}
        by_round: list[dict[str, Any]] = []
        same = 0
        for r in range(rounds):
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            for i, question in enumerate(asked):
                hits = {}
                for mode in MODES if (i + r) % 2 == 0 else MODES[::-1]:
                    t = time.perf_counter()
                    found = (await services[mode].search(p, question, limit=10)).hits
                    times[mode].append(time.perf_counter() - t)
                    hits[mode] = [(h.id, h.score) for h in found]
                same += hits["planned"] == hits["kept"]
            by_round.append({mode: summary(times[mode]) for mode in MODES})
        await asyncio.sleep(0.1)  # the searches' COMMITs, sent after their rows
        backends = await plan_memory(bench.repo.pool)
        return {"benchmark": "kept-plans", "conversations": [c.sample_id for c in convs], "questions": len(asked),
                "rounds": by_round, "same_hits": same, "searches": rounds * len(asked),
                "kept_setting": bench.settings.search_kept_plans, "backends": backends,
                "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


def report(results: dict[str, Any]) -> str:
    rows = [[r + 1, *(f"{got[mode]['p50_ms']:.1f} / {got[mode]['p95_ms']:.1f}" for mode in MODES),
             f"{got['kept']['p50_ms'] / got['planned']['p50_ms']:.2f}"]
            for r, got in enumerate(results["rounds"])]
    search = [b for b in results["backends"] if b["generic"] or b["custom"]]
    return "\n".join([
        f"{results['questions']} questions of {len(results['conversations'])} conversations in one namespace",
        table(["round", "planned p50 / p95 ms", "kept p50 / p95 ms", "kept / planned p50"], rows, 10),
        f"same hits (ids and scores): {results['same_hits']} of {results['searches']}",
        "backends (MB in plans, prepared statements, generic / custom plans run): "
        + ", ".join(f"{b['mb']} MB {b['statements']} {b['generic']} / {b['custom']}" for b in search)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "kept_plans.json")
    args = parser.parse_args()
    if args.conversations < 1 or args.questions < 1 or args.rounds < 1:
        parser.error("--conversations, --questions and --rounds must be at least 1")
    results = asyncio.run(run(args.dataset, args.conversations, args.questions, args.rounds))
    publish(results, args.out, report(results))


if __name__ == "__main__":
    main()
