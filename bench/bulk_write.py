"""Bulk writes: memories per second through `memory_write_many`'s service path (batches embedded
together, one transaction per call) against one `memory_write` per memory, with the local model.

Texts are LoCoMo turns (the dataset path is an argument). Usage:
python bench/bulk_write.py [DATASET] [--memories 1000] [--batch 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from burst import DEFAULT_DATASET, corpus, variant_texts  # noqa: E402
from locomo import REPO, bench_database, bench_principal, machine, table  # noqa: E402

from mcp_memory.models import WriteItem  # noqa: E402


async def main_async(args: argparse.Namespace) -> None:
    texts, _ = corpus(args.dataset)
    texts = variant_texts(texts, 2 * args.memories)
    rows = []
    async with bench_database(args.database_url, "bulk") as bench:
        service = bench.service()
        await service.vectors.query("warm up")
        one, many = texts[: args.memories], texts[args.memories:]
        started = time.perf_counter()
        for text in one:
            await service.write(bench_principal("single"), text, kind="episode")
        rows.append(["memory_write", len(one), round(len(one) / (time.perf_counter() - started), 1)])
        started = time.perf_counter()
        for i in range(0, len(many), args.batch):
            batch = [WriteItem(content=t, kind="episode") for t in many[i:i + args.batch]]
            await service.write_many(bench_principal("bulk"), batch)
        per_s = len(many) / (time.perf_counter() - started)
        rows.append([f"memory_write_many ({args.batch})", len(many), round(per_s, 1)])
        started = time.perf_counter()
        await service.vectors.documents_or_none(texts[:200])  # cached now: the rest of the path alone
        cached = time.perf_counter() - started
    report = {"benchmark": "bulk_write",
              "rows": [dict(zip(["path", "memories", "per_s"], r, strict=True)) for r in rows],
              "embedder_cached_200_s": round(cached, 3), "machine": machine(),
              "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["path", "memories", "memories/s"], rows, first_width=24))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "bulk_write.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
