"""The first searches after a server starts on a big store whose pages no cache holds, with the
search's pages read at start (db/warmup.py, `MCP_MEMORY_WARM_PAGES`) and without.

Takes a store bench/scale_text.py kept (`--data-dir`). Before each start its files are dropped
from the operating system's page cache (posix_fadvise DONTNEED: no root needed), as after a reboot
or after the machine's other work evicted them; then a server opens the store (its warm-up, when
on, in the background as `House.start` runs it) and the labelled conversation's questions are
searched in the big scope, no filter, pass after pass: the first pass is what a user meets, the
later ones the steady state. `--pace S` waits S seconds after each search (an agent's pace, with
quiet moments the warm-up reads in; 0: back to back, the most contention), `--questions N` takes
the first N. Starts alternate between on and off, `--rounds` of each.

Usage: python bench/start_pages.py --data-dir DIR [LOCOMO_JSON] [--rounds 2] [--passes 3] [--pace 0]
                                   [--questions N] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.db.warmup import Warmed, warm_pages
from mcp_memory.models import MemoryFilter
from mcp_memory.service import MemoryService

sys.path.insert(0, str(Path(__file__).parent))
from locomo import load_dataset, warm_query  # noqa: E402
from locomo_data import DEFAULT_DATASET  # noqa: E402
from scale_text import BIG  # noqa: E402
from stats import summary  # noqa: E402


def evict(data_dir: Path) -> int:
    """Drop every file of the stopped store from the OS page cache; how many files."""
    count = 0
    for root, _, files in os.walk(data_dir):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


async def one_start(data_dir: Path, questions: list[str], *, warm: bool, passes: int, pace: float) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING", warm_pages=warm)
    started = time.perf_counter()
    db = await open_database(settings)
    warmed: dict[str, Any] = {}
    try:
        service = await MemoryService.open(db, settings)
        for q in questions:  # the query vectors cached: the statement and the stages after it
            await warm_query(service, q)

        async def read_pages() -> None:
            result: Warmed = await warm_pages(db.admin, busy=service.activity.busy)  # as House.start does
            warmed.update(done_s=round(time.perf_counter() - started, 1), blocks=sum(b for _, b in result.read),
                          skipped=result.skipped)

        out: dict[str, Any] = {"warm_pages": warm, "open_s": round(time.perf_counter() - started, 1), "passes": []}
        async with anyio.create_task_group() as tg:
            if warm:
                tg.start_soon(read_pages)
            for _ in range(passes):
                times, during = [], 0
                for q in questions:
                    t = time.perf_counter()
                    await service.search(BIG, q, MemoryFilter(), limit=10)
                    times.append(time.perf_counter() - t)
                    during += int(warm and "done_s" not in warmed)
                    await anyio.sleep(pace)
                out["passes"].append({**summary(times), "during_warm_up": during,
                                      "ended_s": round(time.perf_counter() - started, 1)})
        out["warm_up"] = warmed or None
        return out
    finally:
        await db.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = [q["question"] for q in load_dataset(args.dataset, None)[args.labelled].questions
                 if q.get("category") in (1, 2, 3, 4)][:args.questions]
    starts = []
    for _ in range(args.rounds):
        for warm in (False, True):
            await anyio.sleep(2)  # the embedded server of the start before gone
            os.sync()
            evict(args.data_dir)
            starts.append(await one_start(args.data_dir, questions, warm=warm, passes=args.passes, pace=args.pace))
    return {"questions": len(questions), "pace_s": args.pace, "starts": starts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--data-dir", type=Path, required=True, help="a store bench/scale_text.py kept")
    parser.add_argument("--labelled", type=int, default=0, help="as given to bench/scale_text.py")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--pace", type=float, default=0.0, help="seconds between searches")
    parser.add_argument("--questions", type=int, help="the first N of the labelled questions")
    parser.add_argument("--out", type=Path, default=Path("bench/results/start_pages.json"))
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report["machine"] = {"cpus": os.cpu_count(), "load_average_1m_at_end": round(os.getloadavg()[0], 2)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['questions']} questions, big scope, no filter, {report['pace_s']} s between searches, "
          "the store's files out of the OS cache at each start")
    print(f"{'start':<12}{'pass':>5}{'p50 ms':>9}{'p95 ms':>9}{'ended s':>9}  searches during the warm-up")
    for start in report["starts"]:
        label = "pages read" if start["warm_pages"] else "not read"
        for i, p in enumerate(start["passes"], 1):
            print(f"{label:<12}{i:>5}{p['p50_ms']:>9.1f}{p['p95_ms']:>9.1f}{p['ended_s']:>9}  "
                  + (str(p["during_warm_up"]) if start["warm_pages"] else "-"))
        if warm := start["warm_up"]:
            print(f"{'':<12}warm-up: {warm['blocks']:,} blocks read, done at {warm['done_s']} s"
                  + (f" ({warm['skipped']})" if warm["skipped"] else ""))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
