"""What the graph room costs in space: the graph's tables and indexes beside the memories', after N
memories written through `memory_write_many`'s service path (names read by rules on every write;
`--keyed` of them also pass `about` and a `key`, as a writer that says who and what would).

Texts are LoCoMo turns (the dataset path is an argument), repeated with a number past the corpus
so the store can outgrow it; the subject of a keyed write is the turn's speaker and its key one of
a few attributes in turn. Latency is not measured here: `bench/stdio_latency.py --variant
before=<tree> --variant after=.` times writes and searches of two trees interleaved.

Usage: python bench/graph_cost.py [DATASET] [--memories 100000] [--batch 250] [--keyed 0.2]
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

TABLES = ("memories", "entities", "memory_entities", "memory_facts", "memory_edges")
KEYS = ("home city", "employer", "job title", "partner", "car", "editor")


def item(text: str, i: int, keyed: float) -> WriteItem:
    speaker = text.split(":", 1)[0] if ":" in text[:40] else None
    if speaker and (i * keyed) % 1 + keyed >= 1:  # an even spread of `keyed` of the writes
        return WriteItem(content=text, kind="fact", about=[speaker], key=KEYS[i % len(KEYS)])
    return WriteItem(content=text, kind="episode")


async def main_async(args: argparse.Namespace) -> None:
    texts, _ = corpus(args.dataset)
    texts = variant_texts(texts, args.memories)
    async with bench_database(args.database_url, "graph-cost") as bench:
        service = bench.service()
        p = bench_principal("graph")
        started = time.perf_counter()
        for i in range(0, len(texts), args.batch):
            await service.write_many(p, [item(t, i + k, args.keyed) for k, t in enumerate(texts[i:i + args.batch])])
            if (i // args.batch) % 40 == 0:
                print(f"  {i + args.batch:,} written, {time.perf_counter() - started:.0f} s", file=sys.stderr)
        seconds = time.perf_counter() - started
        async with bench.admin.acquire() as conn:
            await conn.execute("ANALYZE")
            rows = []
            for name in TABLES:
                count = await conn.fetchval(f"SELECT count(*) FROM {name}")
                heap = await conn.fetchval("SELECT pg_table_size($1::regclass)", name)
                indexes = await conn.fetchval("SELECT pg_indexes_size($1::regclass)", name)
                rows.append([name, count, round(heap / 2**20, 1), round(indexes / 2**20, 1)])
    graph = sum(r[2] + r[3] for r in rows[1:])
    memories = rows[0][2] + rows[0][3]
    report = {"benchmark": "graph_cost", "memories": args.memories, "keyed": args.keyed, "batch": args.batch,
              "write_s": round(seconds, 1),
              "tables": [dict(zip(["table", "rows", "heap_mib", "indexes_mib"], r, strict=True)) for r in rows],
              "graph_mib": round(graph, 1), "memories_mib": round(memories, 1), "machine": machine(),
              "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["table", "rows", "heap MiB", "indexes MiB"], rows))
    print(f"graph {graph:.1f} MiB beside memories {memories:.1f} MiB ({100 * graph / memories:.1f}%); "
          f"{args.memories:,} written in {seconds:.0f} s; wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--keyed", type=float, default=0.2, help="share of writes passing about and key")
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "graph_cost.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
