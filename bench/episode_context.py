"""Episodes' vectors holding the turn before them (`embedding_turn_weight`): what it gives LoCoMo
retrieval, and what it costs a write, in one interleaved run.

Two fresh embedded stores, one embedding every episode alone (`embedding_turn_weight=0`, the
default), one with `--weight` (its own vector plus that much of the turn before's, within
`embedding_turn_minutes`). LoCoMo's turns are written to
both through `MemoryService.write`, one turn at a time as bench/locomo.py does, alternating which
store takes a turn first so that neither has the quieter moments; each write is timed. Each store
has its own embedding cache, so neither finds the other's vectors made. Then every question of
categories 1-4 is searched in both, and R@5, R@10, nDCG@10, MRR and the write latency are
reported per mode, overall and per category.

Usage:
  python bench/episode_context.py ../shared/datasets/locomo/locomo10-dev.json [--one-namespace] [--weight 1]
                                  [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter
from typing import Any

from mcp_memory.service import MemoryService
from mcp_memory.vectors import Vectors

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    Bench,
    Conversation,
    bench_database,
    bench_principal,
    latency,
    load_dataset,
    machine,
    publish,
    rebased,
    table,
    warm_query,
)
from locomo_data import CATEGORIES, DEFAULT_DATASET, METRICS, REPO, evidence_ids, mean_metrics, score, turn_text  # noqa: E402


def service_for(bench: Bench, weight: float) -> MemoryService:
    assert bench.vectors is not None
    vectors = Vectors(bench.vectors.embedder, bench.vectors.repo,
                      bench.vectors.settings.model_copy(update={"embedding_turn_weight": weight}))
    return MemoryService(bench.repo, bench.settings, vectors)


async def run(convs: list[Conversation], one_namespace: bool, weight: float) -> dict[str, Any]:
    modes = {"alone": 0.0, f"with the turn before, weight {weight:g}": weight}
    async with AsyncExitStack() as stack:
        services = {mode: service_for(await stack.enter_async_context(bench_database(None, "episode-context")),
                                      w) for mode, w in modes.items()}
        benches = list(services)
        times: dict[str, list[float]] = {mode: [] for mode in services}
        ids: dict[str, dict[tuple[str, str], Any]] = {mode: {} for mode in services}
        written = 0
        for conv in convs:
            p = bench_principal("locomo-all" if one_namespace else f"locomo-{conv.sample_id}")
            for _, when, turns in conv.sessions:
                for turn in turns:
                    order = benches if written % 2 == 0 else benches[::-1]
                    written += 1
                    for mode in order:
                        started = perf_counter()
                        result = await services[mode].write(p, turn_text(turn), kind="episode", occurred_at=when,
                                                            source="locomo")
                        times[mode].append(perf_counter() - started)
                        ids[mode][(conv.sample_id, turn["dia_id"])] = result.memory.id
        results: dict[str, Any] = {}
        for mode, service in services.items():
            async with service.repo.pool.acquire() as conn:
                await conn.execute("ANALYZE memories")
            scores = []
            for conv in convs:
                p = bench_principal("locomo-all" if one_namespace else f"locomo-{conv.sample_id}")
                for q in conv.questions:
                    evidence = [ids[mode][(conv.sample_id, d)] for d in evidence_ids(q.get("evidence", []))
                                if (conv.sample_id, d) in ids[mode]]
                    if not evidence:
                        continue
                    await warm_query(service, q["question"])
                    hits = (await service.search(p, q["question"], limit=10)).hits
                    scores.append({**score([h.id for h in hits], evidence), "category": q["category"]})
            results[mode] = {"overall": mean_metrics(scores), "write": latency(times[mode]),
                             "by_category": {str(c): mean_metrics([r for r in scores if r["category"] == c])
                                             for c in CATEGORIES}}
        return results


async def main_async(args: argparse.Namespace) -> None:
    now = datetime.now(UTC)
    convs = [rebased(conv, now) for conv in load_dataset(args.dataset, None)]
    results = await run(convs, args.one_namespace, args.weight)
    rows = [[mode, r["overall"]["n"], *(r["overall"][m] for m in METRICS), r["write"]["p50_ms"], r["write"]["p95_ms"]]
            for mode, r in results.items()]
    for c, label in CATEGORIES.items():
        rows += [[f"{mode}, {label}", r["by_category"][str(c)]["n"], *(r["by_category"][str(c)][m] for m in METRICS),
                  "", ""] for mode, r in results.items()]
    where = "every conversation in one namespace" if args.one_namespace else "a namespace per conversation"
    report = f"LoCoMo, episodes embedded alone or with the turn before them; {where}\n" + \
        table(["embedded", "n", *METRICS, "write p50 ms", "write p95 ms"], rows, first_width=36)
    publish({"benchmark": "episode-context", "dataset": str(args.dataset), "one_namespace": args.one_namespace,
             "weight": args.weight,
             "modes": results, "machine": machine(), "finished_at": now.isoformat(timespec="seconds")},
            args.out, report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--one-namespace", action="store_true")
    parser.add_argument("--weight", type=float, default=1.0, help="embedding_turn_weight of the second store")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "episode_context.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
