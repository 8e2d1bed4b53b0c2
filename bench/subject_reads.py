"""What reading whom the best results are about costs a question about the user, in process.

A question about the user alone ("Who is my manager?") reads, for the memories among its best
results that the graph files about a named entity, how the store introduced that entity (its first
notes: repository `subjects_named`, whose.py `about_their_people`). Its worst case is a store where
one name is in thousands of notes and every result is about it: this writes `--notes` notes naming
"Tom Hale" (and one saying he is the user's manager), then times `--searches` searches of "Who is my
manager?" through `MemoryService.search`, in turn with the read and with that stage left out (its
function replaced by one returning the question as it came: the search as before the read), and
the read alone over twenty results' memories. On a tree without the read
(`PYTHONPATH=<tree> python bench/subject_reads.py`) only the search is timed.

Usage: python bench/subject_reads.py [--notes 3000] [--searches 100] [--out bench/results/subject_reads.json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import bench_database, bench_principal, machine, publish, table  # noqa: E402
from stats import summary  # noqa: E402

from mcp_memory.models import WriteItem  # noqa: E402

try:
    from mcp_memory.repository.graph_reads import subjects_named
except ImportError:  # a tree from before the read: the search alone is timed
    subjects_named = None
stage = importlib.import_module("mcp_memory.retrieval.search")
READ = getattr(stage, "_their_people_read", None)


async def _left_out(conn: Any, p: Any, parsed: Any, rows: Any) -> Any:
    return parsed

QUESTION = "Who is my manager?"
BATCH = 200


async def run(notes: int, searches: int) -> dict[str, Any]:
    async with bench_database(None, "subject-reads") as bench:
        service, p = bench.service(), bench_principal("subject-reads")
        await service.write(p, "My manager is Tom Hale.")
        named = []
        for start in range(0, notes, BATCH):
            written = await service.write_many(p, [WriteItem(content=f"Tom Hale posted update {i} on the rollout "
                                                             f"in Slack channel {i % 37}.")
                                                   for i in range(start, min(notes, start + BATCH))])
            named += [m.id for m in written.memories]
        await bench.analyze()
        for _ in range(3):
            await service.search(p, QUESTION)
        took: dict[str, list[float]] = {"search": [], "search without the read": []}
        for i in range(2 * searches if READ else searches):
            without = READ is not None and i % 2 == 1
            if READ is not None:
                stage._their_people_read = _left_out if without else READ
            started = time.perf_counter()
            await service.search(p, QUESTION)
            took["search without the read" if without else "search"].append(time.perf_counter() - started)
        if READ is not None:
            stage._their_people_read = READ
        results: dict[str, Any] = {"notes": notes, **{what: summary(t) for what, t in took.items() if t}}
        if subjects_named is not None:
            read = []
            async with service.repo.reading(p) as conn:
                for _ in range(searches):
                    started = time.perf_counter()
                    await subjects_named(conn, p, named[:20], 5)
                    read.append(time.perf_counter() - started)
            results["read"] = summary(read)
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=3000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "subject_reads.json")
    args = parser.parse_args()
    results = asyncio.run(run(args.notes, args.searches))
    rows = [[what, results[what]["n"], results[what]["p50_ms"], results[what]["p95_ms"], results[what]["max_ms"]]
            for what in ("search", "search without the read", "read") if what in results]
    publish({**results, "machine": machine()}, args.out,
            f"{QUESTION!r} over {args.notes} notes naming one person\n"
            + table(["timed", "n", "p50 ms", "p95 ms", "max ms"], rows))


if __name__ == "__main__":
    main()
