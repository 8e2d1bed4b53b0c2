"""Episodes embedded with the turn before them: what it would give LoCoMo retrieval (a probe).

A conversation's reply often says little on its own ("Some fun ones like charades and a scavenger
hunt."): what it is about is in the turn it answers. This loads LoCoMo's turns into fresh
embedded stores through `MemoryService.write_many` with the vectors made here, once per mode: each
turn alone (what the server stores), each turn after the one before it in its session ("the turn
before\\nthe turn"), and the two vectors summed; the stored text is the turn in every mode, so
full text, trigrams and the ranking's stages see the same rows and only the vector differs. Then
every question of categories 1-4 is searched as bench/locomo.py does, and R@5, R@10, nDCG@10 and
MRR are reported per mode, overall and per category.

Usage:
  python bench/episode_context.py ../shared/datasets/locomo/locomo10-dev.json [--one-namespace] [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory.models import WriteItem
from mcp_memory.vectors import Vectors

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    Conversation,
    bench_database,
    bench_principal,
    load_dataset,
    machine,
    publish,
    rebased,
    table,
)
from locomo_data import CATEGORIES, DEFAULT_DATASET, METRICS, REPO, evidence_ids, mean_metrics, score, turn_text  # noqa: E402

MODES = ("alone", "after the turn before", "both, summed")
BATCH = 100


def after_the_one_before(texts: list[str]) -> list[str]:
    return [f"{texts[i - 1]}\n{text}" if i else text for i, text in enumerate(texts)]


async def session_vectors(vectors: Vectors, texts: list[str], mode: str) -> list[list[float]]:
    """Each of a session's turns' vector: its own, the one of it after the turn before, or the
    two summed and scaled back to length 1."""
    if mode == "alone":
        return await vectors.documents(texts)
    context = await vectors.documents(after_the_one_before(texts))
    if mode == "after the turn before":
        return context
    own = await vectors.documents(texts)
    summed = [np.asarray(a) + np.asarray(b) for a, b in zip(own, context, strict=True)]
    return [(v / np.linalg.norm(v)).tolist() for v in summed]


async def run_mode(convs: list[Conversation], mode: str, one_namespace: bool) -> list[dict[str, Any]]:
    scores: list[dict[str, Any]] = []
    jobs = []
    async with bench_database(None, "episode-context") as bench:
        service = bench.service()
        assert service.vectors is not None
        for conv in convs:
            p = bench_principal("locomo-all" if one_namespace else f"locomo-{conv.sample_id}")
            ids: dict[str, Any] = {}
            for _, when, turns in conv.sessions:
                texts = [turn_text(t) for t in turns]
                vectors = await session_vectors(service.vectors, texts, mode)
                for start in range(0, len(turns), BATCH):
                    items = [WriteItem(content=text, kind="episode", occurred_at=when)
                             for text in texts[start:start + BATCH]]
                    written = await service.write_many(p, items, source="locomo",
                                                       embeddings=vectors[start:start + BATCH])
                    for turn, item in zip(turns[start:start + BATCH], written.memories, strict=True):
                        ids[turn["dia_id"]] = item.id
            for q in conv.questions:
                evidence = [ids[d] for d in evidence_ids(q.get("evidence", [])) if d in ids]
                if evidence:
                    jobs.append((p, q, evidence))
        await bench.analyze()
        for p, q, evidence in jobs:
            hits = (await service.search(p, q["question"], limit=10)).hits
            scores.append({**score([h.id for h in hits], evidence), "category": q["category"]})
    return scores


async def main_async(args: argparse.Namespace) -> None:
    now = datetime.now(UTC)
    convs = [rebased(conv, now) for conv in load_dataset(args.dataset, None)]
    results = {}
    for mode in MODES:
        scores = await run_mode(convs, mode, args.one_namespace)
        results[mode] = {"overall": mean_metrics(scores),
                         "by_category": {str(c): mean_metrics([r for r in scores if r["category"] == c])
                                         for c in CATEGORIES}}
    rows = [[mode, r["overall"]["n"], *(r["overall"][m] for m in METRICS)] for mode, r in results.items()]
    for c, label in CATEGORIES.items():
        rows += [[f"{mode}, {label}", r["by_category"][str(c)]["n"], *(r["by_category"][str(c)][m] for m in METRICS)]
                 for mode, r in results.items()]
    where = "every conversation in one namespace" if args.one_namespace else "a namespace per conversation"
    report = f"LoCoMo, episodes embedded alone or after the turn before them; {where}\n" + \
        table(["embedded", "n", *METRICS], rows, first_width=36)
    publish({"benchmark": "episode-context", "dataset": str(args.dataset), "one_namespace": args.one_namespace,
             "modes": results, "machine": machine(), "finished_at": now.isoformat(timespec="seconds")},
            args.out, report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--one-namespace", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "episode_context.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
