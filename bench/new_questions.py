"""What a question no search asked before costs, in process, on a knowledge-update dev set.

Loads a set's memories as `bench/knowledge_update.py` does (nobody passing keys), then asks each
record's question, worded anew each time (a ticket number added: its vector, and the vector of the
question without its subject that the present's focus compares by, are in no cache), and times
`service.search` whole. The first round is untimed (the subjects' memories are compared with the
subject masked the first time: those texts are embedded once and kept). Prints p50 / p95 for the
questions about the present and for the rest, and writes JSON.

Usage: python bench/new_questions.py [bench/knowledge_update/workbench.jsonl] [--rounds 3]
                                     [--out bench/results/new_questions.json]
A tree against another: the same command with PYTHONPATH=<other tree> first, in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from knowledge_update import load, load_copy, shift_of, user_of  # noqa: E402
from locomo import bench_database, bench_principal  # noqa: E402
from stats import summary  # noqa: E402

from mcp_memory.retrieval import parse_query  # noqa: E402

DEFAULT_SET = Path(__file__).parent / "knowledge_update" / "workbench.jsonl"


def worded_anew(question: str, rng: random.Random) -> str:
    """`question` as no search asked it before: its subject and what it asks are the same."""
    return f"{question.rstrip('?')} for ticket {rng.randrange(10**6)}?"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    records = load(args.dataset)
    async with bench_database(None, "new-questions") as bench:
        await load_copy(bench, "nq", records, shift_of(records), seed=0, write_times=[])
        await bench.analyze()
        service = bench.service()
        rng = random.Random(args.seed)
        times: dict[str, list[float]] = {"present": [], "other": []}
        for round_ in range(args.rounds + 1):
            for r in records:
                question = worded_anew(r["query"], rng)
                kind = "present" if parse_query(question).tense == "present" else "other"
                t = time.perf_counter()
                await service.search(bench_principal(user_of("nq", r)), question, limit=10)
                if round_:
                    times[kind].append(time.perf_counter() - t)
    return {"dataset": str(args.dataset), "rounds": args.rounds,
            "search": {kind: summary(seconds) for kind, seconds in times.items() if seconds}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_SET)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench/results/new_questions.json"))
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(f"{'new questions':<28}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}")
    for kind, s in results["search"].items():
        print(f"{kind:<28}{s['n']:>6}{s['p50_ms']:>10.2f}{s['p95_ms']:>10.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
