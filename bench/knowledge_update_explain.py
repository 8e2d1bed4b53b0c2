"""Why a knowledge-update record ranks as it does: each chosen record's hits with their `explain`.

Loads a set as `bench/knowledge_update.py` loads its first copy (the same user, seed and dates,
nobody passing anything), then searches each chosen record's question with `explain` and prints the
first hits: the version or distractor each is (its key, its date, its text), the SQL stage's lists
and score, and what the present-tense focus made of it (`on_topic`, `linked`). Read the misses
before changing a knob (`--details` of the bench names them: `newest_first` false). `--writer`
loads as the bench's writer of that name does, and each hit shows what its write passed.

Usage: python bench/knowledge_update_explain.py bench/knowledge_update/workbench.jsonl h05.1 h27.0
                                                [--hits 10] [--seed 7] [--dates rebased]
                                                [--writer none|about-key|about-key-half|about]
                                                [--questions as-written|no-time-words]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from knowledge_update import WRITERS, load, load_copy, load_writer, shift_of, user_of, without_time_words  # noqa: E402
from locomo import bench_database, bench_principal  # noqa: E402

USER = "knowledge-update-0"  # the bench's first copy


async def explain(dataset: Path, chosen: list[str], hits: int, seed: int, dates: str, mode: str,
                  questions: str) -> None:
    records = load(dataset)
    if questions == "no-time-words":
        records = without_time_words(records)
    unknown = sorted(set(chosen) - {r["id"] for r in records})
    if unknown:
        raise SystemExit(f"no record {', '.join(unknown)} in {dataset}")
    shift = shift_of(records, dates)
    async with bench_database(None, "ku-explain") as bench:
        writer = load_writer(dataset, records) if mode != "none" else None
        passed: dict[str, dict[str, object]] = {}
        ids = await load_copy(bench, USER, records, shift, seed, [], writer=writer, mode=mode, said=passed)
        await bench.analyze()
        said = {ids[m["key"]]: m for r in records for m in (*r["versions"], *r["distractors"])}
        service = bench.service()
        for r in (r for r in records if r["id"] in chosen):
            found = await service.search(bench_principal(user_of(USER, r)), r["query"], limit=hits, explain=True)
            print(f"\n{r['id']} ({r['type']}) {r['query']}  newest: {r['newest']}")
            for place, hit in enumerate(found.hits, 1):
                m = said.get(hit.id, {"key": "?", "occurred_at": "?", "content": hit.snippet})
                print(f"  {place:2} {hit.score:.4f} {m['key']:12} {m['occurred_at'][:10]} {m['content'][:60]:60} "
                      f"{json.dumps(passed.get(m['key']) or {})} {json.dumps(hit.explain)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("records", nargs="+", help="record ids, as the set's `id` field")
    parser.add_argument("--hits", type=int, default=10, help="hits printed per record")
    parser.add_argument("--seed", type=int, default=7, help="insertion order shuffle (the bench's first copy: 7)")
    parser.add_argument("--dates", choices=("original", "rebased"), default="rebased")
    parser.add_argument("--writer", choices=WRITERS, default="none", help="what each write passes, as the bench's")
    parser.add_argument("--questions", choices=("as-written", "no-time-words"), default="as-written",
                        help="no-time-words: each question without its words for the present, as the bench's")
    args = parser.parse_args()
    asyncio.run(explain(args.dataset, args.records, args.hits, args.seed, args.dates, args.writer, args.questions))


if __name__ == "__main__":
    main()
