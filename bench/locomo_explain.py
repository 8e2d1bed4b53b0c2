"""Why a LoCoMo question finds its evidence where it does: the first hits with their `explain`, and
where each evidence turn ranks.

Loads the conversations as `bench/locomo.py` does (each in its own namespace, or all in one with
`--one-namespace`), then searches the chosen questions with `explain` and prints, for each, the
first hits (the conversation each turn is from, its score, the lists that found it and the factors
that moved it) and every evidence turn's rank among the first `--depth` (or that it is not there).
Read the misses before changing a knob: `--details` of the bench names them (`R@10` below 1).

Usage: python bench/locomo_explain.py DATASET "What did Evan" "Which country was Evan visiting"
                                      [--one-namespace] [--dates rebased] [--hits 5] [--depth 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    bench_database,
    bench_principal,
    load_conversation,
    load_dataset,
    namespace_of,
    rebased,
)
from locomo_data import evidence_ids, turn_text  # noqa: E402


async def explain(args: argparse.Namespace) -> None:
    convs = load_dataset(args.dataset, None)
    async with bench_database(None, "locomo-explain") as bench:
        service = bench.service()
        said: dict[UUID, tuple[str, str]] = {}  # memory id -> (conversation, the turn as written)
        chosen: list[tuple[Any, dict[str, Any], list[UUID]]] = []
        now = datetime.now(UTC)
        for conv in convs:
            conv = rebased(conv, now) if args.dates == "rebased" else conv
            p = bench_principal(namespace_of(conv.sample_id, args.one_namespace))
            ids, _ = await load_conversation(service, p, conv, [])
            for _, _, turns in conv.sessions:
                for turn in turns:
                    said[ids[turn["dia_id"]]] = (conv.sample_id, turn_text(turn))
            chosen += [(p, q, [ids[d] for d in evidence_ids(q.get("evidence", [])) if d in ids])
                       for q in conv.questions if any(q["question"].startswith(x) for x in args.questions)]
        if not chosen:
            raise SystemExit("no question starts with any of those words")
        await bench.analyze()
        for p, q, evidence in chosen:
            found = await service.search(p, q["question"], limit=args.depth, explain=True)
            place = {hit.id: k for k, hit in enumerate(found.hits, 1)}
            print(f"\n{q['question']}  (category {q.get('category')}, answer: {q.get('answer')})")
            for k, hit in enumerate(found.hits[:args.hits], 1):
                conv_id, text = said[hit.id]
                print(f"  {k:2} {conv_id} {hit.score:.4f} {text[:80]:80} {json.dumps(hit.explain)}")
            for e in evidence:
                conv_id, text = said[e]
                where = f"rank {place[e]:2}" if e in place else f"not in the first {args.depth}"
                print(f"  evidence {where}: {conv_id} {text[:100]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("questions", nargs="+", help="the first words of each question to explain")
    parser.add_argument("--one-namespace", action="store_true", help="every conversation in one user's store")
    parser.add_argument("--dates", choices=("original", "rebased"), default="rebased")
    parser.add_argument("--hits", type=int, default=5, help="hits printed per question")
    parser.add_argument("--depth", type=int, default=50, help="how deep to look for the evidence")
    asyncio.run(explain(parser.parse_args()))


if __name__ == "__main__":
    main()
