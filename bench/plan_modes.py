"""Custom or generic plans for the search statement, on a store whose scopes differ in size.

The pools plan every statement with its values (plan_cache_mode = force_custom_plan, mcp_memory/db),
and a search no filter narrows asks for the generic plan its prepared statement keeps on the
connection instead (MCP_MEMORY_SEARCH_KEPT_PLANS, retrieval/narrowing.py plan_kept): planning is
~4 ms of a LoCoMo search's statement. This keeps the evidence for both. It takes a kept store of
bench/scale.py (100,000 memories of one user), adds one LoCoMo conversation as a second, small
user (once), and for every search, per user and filter:
- the statement as the search builds it, run both ways in turn (custom, generic; best of --reps
  each), comparing the rows (ids in order) and the times: where a generic plan would be wrong;
- the search whole (`MemoryService.search`, its query vector cached) with kept plans off and on,
  in turn, comparing the hits and the times: what the setting does.

Usage: python bench/plan_modes.py --data-dir DIR [--questions 80] [--reps 3] [--out FILE]
  the store first: python bench/scale.py --data-dir DIR
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    DEFAULT_DATASET,
    bench_principal,
    load_conversation,
    load_dataset,
    machine,
    publish,
    table,
)
from scale import BIG, EXTRA_QUERIES  # noqa: E402
from stats import summary  # noqa: E402
from stdio_latency import QUERIES  # noqa: E402

from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.models import MemoryFilter, Principal  # noqa: E402
from mcp_memory.retrieval import parse_query  # noqa: E402
from mcp_memory.retrieval.statement import SearchStatement  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

MODES = ("custom", "generic")
SEARCHES = ("planned", "kept")
SMALL = bench_principal("plan-modes-small")


def cases(conv: Any, questions: int, now: datetime) -> list[tuple[str, Principal, str, MemoryFilter | None]]:
    """(group, caller, query, filter): the big user's queries with scale.py's filters, the small
    user's LoCoMo questions without and with one."""
    big = list(dict.fromkeys(QUERIES + EXTRA_QUERIES))
    filters = {"none": None, "kind": MemoryFilter(kinds=["decision"]), "tag": MemoryFilter(tags=["t7"]),
               "30 days": MemoryFilter(since=now - timedelta(days=30))}
    asked = [q["question"] for q in conv.questions[:questions]]
    return ([(f"big, {label}", BIG, q, f) for label, f in filters.items() for q in big]
            + [("small, none", SMALL, q, None) for q in asked]
            + [("small, kind", SMALL, q, MemoryFilter(kinds=["episode"])) for q in asked[: questions // 2]])


class Built:
    """The last statement the search module built (it builds one or two a search; the last runs)."""

    def __init__(self) -> None:
        self.last: SearchStatement | None = None
        module = importlib.import_module("mcp_memory.retrieval.search")
        build = module.build_search

        def built(*args: Any, **kwargs: Any) -> Any:
            self.last = build(*args, **kwargs)
            return self.last
        module.build_search = built


async def _statement(service: MemoryService, p: Principal, st: SearchStatement, mode: str) -> tuple[float, list[str]]:
    async with service.repo.reading(p, **st.gucs) as conn:
        await conn.execute(f"SET LOCAL plan_cache_mode = force_{mode}_plan")
        t = time.perf_counter()
        got = await conn.fetch(st.sql, *st.args)
        return time.perf_counter() - t, [str(x["id"]) for x in got]


async def _search(service: MemoryService, p: Principal, query: str, f: MemoryFilter | None) -> tuple[float, list[str]]:
    t = time.perf_counter()
    hits = (await service.search(p, query, f, limit=10)).hits
    return time.perf_counter() - t, [str(h.id) for h in hits]


async def run(data_dir: Path, questions: int, reps: int) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING")
    db = await open_database(settings)
    built = Built()
    try:
        service = await MemoryService.open(db, settings)
        services = {"planned": MemoryService(service.repo, settings.model_copy(update={"search_kept_plans": 0}),
                                             service.vectors),
                    "kept": MemoryService(service.repo, settings, service.vectors)}
        vectors = service.vectors
        assert vectors is not None, "the statement needs the local embedder"
        conv = load_dataset(DEFAULT_DATASET, 1)[0]
        async with db.admin.acquire() as conn:
            if not await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = $1", BIG.user_id):
                raise SystemExit(f"--data-dir: no bench/scale.py store in {data_dir}; "
                                 f"build one with python bench/scale.py --data-dir {data_dir}")
            if not await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = $1", SMALL.user_id):
                await load_conversation(service, SMALL, conv, [])
                await conn.execute("ANALYZE memories")
            sizes = dict(await conn.fetch("SELECT user_id, count(*) FROM memories GROUP BY user_id"))
        groups: dict[str, dict[str, Any]] = {}
        for i, (group, p, query, f) in enumerate(cases(conv, questions, datetime.now(UTC))):
            await vectors.query(parse_query(query).text)  # cached: the searches below time no model
            await services["planned"].search(p, query, f, limit=10)
            st = built.last
            if st is None:
                continue
            best = {m: float("inf") for m in (*MODES, *SEARCHES)}
            rows: dict[str, list[str]] = {}
            for r in range(reps):
                for mode in MODES if (i + r) % 2 == 0 else MODES[::-1]:
                    took, rows[mode] = await _statement(service, p, st, mode)
                    best[mode] = min(best[mode], took)
                for mode in SEARCHES if (i + r) % 2 == 0 else SEARCHES[::-1]:
                    took, rows[mode] = await _search(services[mode], p, query, f)
                    best[mode] = min(best[mode], took)
            g = groups.setdefault(group, {"same": 0, "same_hits": 0, "overlap": [],
                                          **{m: [] for m in (*MODES, *SEARCHES)}})
            g["same"] += rows["custom"] == rows["generic"]
            g["same_hits"] += rows["planned"] == rows["kept"]
            g["overlap"].append(len(set(rows["custom"]) & set(rows["generic"])) / max(1, len(rows["custom"])))
            for m in (*MODES, *SEARCHES):
                g[m].append(best[m])
        return {"benchmark": "plan-modes", "memories": sizes, "reps": reps,
                "groups": {name: {"searches": len(g["custom"]), "same_rows": g["same"],
                                  "top10_overlap": round(statistics.mean(g["overlap"]), 3),
                                  "same_hits_kept": g["same_hits"],
                                  **{m: summary(g[m]) for m in (*MODES, *SEARCHES)}} for name, g in groups.items()},
                "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    finally:
        await db.close()


def report(results: dict[str, Any]) -> str:
    def ms(g: dict[str, Any], mode: str) -> str:
        return f"{g[mode]['p50_ms']:.1f} / {g[mode]['p95_ms']:.1f}"
    rows = [[name, g["searches"], g["same_rows"], g["top10_overlap"], ms(g, "custom"), ms(g, "generic"),
             g["same_hits_kept"], ms(g, "planned"), ms(g, "kept")] for name, g in results["groups"].items()]
    return "\n".join([f"memories per user: {results['memories']}",
                      table(["user, filter", "searches", "statement: same rows", "top-10 overlap",
                             "custom p50 / p95 ms", "generic p50 / p95 ms", "search: same hits",
                             "kept off p50 / p95 ms", "kept on p50 / p95 ms"], rows, 14)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a store kept by bench/scale.py --data-dir")
    parser.add_argument("--questions", type=int, default=80, help="the small user's LoCoMo questions")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "plan_modes.json")
    args = parser.parse_args()
    if args.questions < 2 or args.reps < 1:
        parser.error("--questions must be at least 2 and --reps at least 1")
    results = asyncio.run(run(args.data_dir, args.questions, args.reps))
    publish(results, args.out, report(results))


if __name__ == "__main__":
    main()
