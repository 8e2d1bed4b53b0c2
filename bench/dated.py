"""Dated questions: does search put what happened in the period a question names first?

Loads bench/dated/worklog.jsonl (see generate.py there: a team's work log, three or four events
per system told in the same words, some written days late) through `MemoryService.write` into one
scope, asks each question with `MemoryService.search`, and reports per variant (the table in
bench/locomo.py) and per form of date (a day, a month and year, a month alone, a year, "before"):
  @1     the event asked about is the top hit;
  top 3  it is among the first three;
  MRR    reciprocal rank of it (0 beyond the limit);
and search latency. Without the period only chance separates a system's events (1 / 3.5).

Usage: python bench/dated.py [DATASET] [--variants default,no-period] [--set key=value ...] [--limit 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo import (
    REPO,
    add_variant_arguments,
    bench_database,
    bench_principal,
    choose_variants,
    latency,
    machine,
    resolve_variants,
    table,
    warm_query,
)

DEFAULT_DATASET = REPO / "bench" / "dated" / "worklog.jsonl"
FORMS = ("day", "month", "month_only", "year", "before")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0, "at_1": 0.0, "top_3": 0.0, "mrr": 0.0}
    return {"n": len(rows), "at_1": round(statistics.fmean(r["rank"] == 1 for r in rows), 4),
            "top_3": round(statistics.fmean(r["rank"] is not None and r["rank"] <= 3 for r in rows), 4),
            "mrr": round(statistics.fmean(1 / r["rank"] if r["rank"] else 0.0 for r in rows), 4)}


async def main_async(args: argparse.Namespace) -> None:
    lines = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    memories = [x for x in lines if x["type"] == "memory"]
    questions = [x for x in lines if x["type"] == "question"]
    user = "dated"
    async with bench_database(args.database_url, "dated") as bench:
        loader, ids = bench.service(), {}
        for m in memories:
            ids[m["key"]] = (await loader.write(bench_principal(user), m["content"], source="dated",
                                                occurred_at=datetime.fromisoformat(m["occurred_at"]))).memory.id
        await bench.analyze()
        variants, skipped = resolve_variants(choose_variants(args.variants, args.set), bench.settings)
        results: dict[str, Any] = {}
        for v, s in variants:
            service = bench.service(s)
            rows, times = [], []
            for q in questions:
                await warm_query(service, q["query"])  # the query embedding is not what is timed
                t = time.perf_counter()
                found = await service.search(bench_principal(user), q["query"], limit=args.limit)
                times.append(time.perf_counter() - t)
                ranked = [h.id for h in found.hits]
                answer = ids[q["answer"]]
                rows.append({"form": q["form"], "rank": ranked.index(answer) + 1 if answer in ranked else None})
            results[v.name] = {"about": v.about, "overall": summarize(rows),
                               "by_form": {f: summarize([r for r in rows if r["form"] == f]) for f in FORMS},
                               "latency": latency(times)}
        if args.database_url:
            await bench.drop_users([user])

    report = {"benchmark": "dated", "dataset": str(args.dataset), "memories": len(memories),
              "questions": len(questions), "limit": args.limit, "variants": results, "skipped_variants": skipped,
              "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))

    print(f"\nDated questions ({args.dataset.stem}): {len(questions)} questions, {len(memories)} memories, "
          f"limit {args.limit}")
    print(table(["variant", "@1", "top 3", "MRR", "p50 ms", "p95 ms"],
                [[name, r["overall"]["at_1"], r["overall"]["top_3"], r["overall"]["mrr"], r["latency"]["p50_ms"],
                  r["latency"]["p95_ms"]] for name, r in results.items()]))
    print("\n@1 by the form of the date (questions)")
    print(table(["variant", *(f"{f} ({next(iter(results.values()))['by_form'][f]['n']})" for f in FORMS)],
                [[name, *(r["by_form"][f]["at_1"] for f in FORMS)] for name, r in results.items()]))
    print(f"\nwrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_variant_arguments(parser, DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--database-url", help="use this PostgreSQL instead of a temporary embedded one")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "dated.json")
    args = parser.parse_args()
    if not args.variants and not args.set:
        args.variants = "default,no-period"
    asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
