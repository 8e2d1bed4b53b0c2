"""What joining concurrent calls to the local model into one batch saves (embeddings/coalescing.py).

LoCoMo questions (queries) and turns (documents), each embedded by its own call, with 1 and then
N calls in flight at once (tasks on one event loop, as a server's requests are): wall and process
CPU per text, and texts per model run. Rounds alternate the levels so a change of load on the
machine falls on all of them; CPU per text is what a loaded server pays, wall per text what one
waiting client sees. ``--join`` compares values of coalescing.JOIN_CHARACTERS in one run (0:
no call joins another, as before the queue).

Usage: python bench/embed_coalescing.py [DATASET] [--calls 256] [--concurrency 1,8,32]
        [--rounds 2] [--join 0,100] [--out bench/results/embed_coalescing.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
from locomo import publish, table
from locomo_data import DEFAULT_DATASET, SESSION, turn_text

from mcp_memory.embeddings import coalescing
from mcp_memory.embeddings.local import MiniLMEmbedder


def texts_of(dataset: Path, calls: int) -> dict[str, list[str]]:
    conversations = json.loads(dataset.read_text())
    questions = [qa["question"] for c in conversations for qa in c["qa"]]
    turns = [turn_text(t) for c in conversations for key, session in c["conversation"].items()
             if SESSION.match(key) for t in session]
    return {"questions": questions[:calls], "turns": turns[:calls]}


async def one_level(embedder: MiniLMEmbedder, texts: list[str], is_query: bool, concurrency: int) -> dict[str, float]:
    gate = anyio.Semaphore(concurrency)
    runs = embedder._queue.runs

    async def embed(text: str) -> None:
        async with gate:
            if is_query:
                await embedder.embed_query(text)
            else:
                await embedder.embed_documents([text])

    wall, cpu = time.perf_counter(), time.process_time()
    async with anyio.create_task_group() as tg:
        for text in texts:
            tg.start_soon(embed, text)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall_ms": wall / len(texts) * 1000, "cpu_ms": cpu / len(texts) * 1000,
            "texts_per_run": len(texts) / max(embedder._queue.runs - runs, 1)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpora = texts_of(args.dataset, args.calls)
    embedder = MiniLMEmbedder()
    await embedder.load()
    await embedder.embed_documents(corpora["turns"][:16])  # warm the session's first shapes
    samples: dict[tuple[str, int, int], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for join in args.join:
            coalescing.JOIN_CHARACTERS = join
            for kind, texts in corpora.items():
                for concurrency in args.concurrency:
                    got = await one_level(embedder, texts, kind == "questions", concurrency)
                    samples.setdefault((kind, join, concurrency), []).append(got)
    rows = [{"texts": kind, "join_characters": join, "concurrency": concurrency,
             **{k: round(statistics.median(s[k] for s in got), 2) for k in got[0]}}
            for (kind, join, concurrency), got in samples.items()]
    return {"calls": args.calls, "rounds": args.rounds, "model": embedder.model,
            "load_1m": round(os.getloadavg()[0], 2), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path, nargs="?", default=DEFAULT_DATASET)
    parser.add_argument("--calls", type=int, default=256)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--join", type=lambda s: [int(x) for x in s.split(",")],
                        default=[0, coalescing.JOIN_CHARACTERS])
    parser.add_argument("--out", type=Path, default=Path("bench/results/embed_coalescing.json"))
    args = parser.parse_args()
    results = anyio.run(run, args)
    rows = [[r["texts"], r["join_characters"], r["concurrency"], r["wall_ms"], r["cpu_ms"], r["texts_per_run"]]
            for r in results["rows"]]
    report = table(["texts", "join", "in flight", "wall ms/text", "CPU ms/text", "texts/run"], rows, 10)
    publish(results, args.out, f"{results['model']}, {args.calls} calls per level, median of "
                               f"{args.rounds} rounds\n{report}")


if __name__ == "__main__":
    main()
