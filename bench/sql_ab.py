"""The search statement of two source trees, side by side: interleaved timings and the same rows.

Loads LoCoMo conversations into one store (kept with --data-dir, so later runs skip the load),
embeds every question once, then has each tree build the statement of every question (in its
own process, the tree first on PYTHONPATH, its own default settings) and runs the two
statements of each question in turn, alternating which goes first, `--reps` times. A question's
time is its fastest run (the least disturbed by other load), so the ratio is a property of the
statements, not of the machine's mood; a change must return the same rows (ids, scores to 1e-6)
for every question, which the table says.

Usage: python bench/sql_ab.py --before /tmp/base --after . [--conversations 2] [--reps 3]
                              [--data-dir /tmp/sql-ab] [--out bench/results/sql_ab.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import DEFAULT_DATASET, bench_principal, load_conversation, load_dataset  # noqa: E402

from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.repository import MemoryRepository  # noqa: E402
from mcp_memory.retrieval import parse_query  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

LOADED = "loaded.json"


def store_settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, log_level="WARNING", pool_min_size=1, pool_max_size=2)


async def load(data_dir: Path, dataset: Path, conversations: int) -> dict[str, Any]:
    """The store, loaded once per data directory, and each question's cached query vector."""
    settings = store_settings(data_dir)
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        assert service.vectors is not None, "the statement needs the local embedder"
        convs = load_dataset(dataset, conversations)
        marker = data_dir / LOADED
        if not marker.exists() or json.loads(marker.read_text()) != [c.sample_id for c in convs]:
            for conv in convs:
                await load_conversation(service, bench_principal(f"sql-ab-{conv.sample_id}"), conv, [])
            async with db.admin.acquire() as conn:
                await conn.execute("ANALYZE memories")
            marker.write_text(json.dumps([c.sample_id for c in convs]))
        questions = [(f"sql-ab-{c.sample_id}", q["question"]) for c in convs for q in c.questions]
        vectors = {}
        for _, question in questions:
            text = parse_query(question).text
            if text and text not in vectors:
                vectors[text] = await service.vectors.query(text)
        return {"questions": questions, "vectors": vectors, "model": service.vectors.model,
                "dimension": service.vectors.dimension}
    finally:
        await db.close()


def dump(inputs: Path, out: Path) -> None:
    """(In a tree's own process.) Each question's statement as this tree builds it."""
    from mcp_memory.retrieval.statement import build_search

    got = pickle.loads(inputs.read_bytes())
    settings = Settings(log_level="WARNING")
    statements = []
    for user, question in got["questions"]:
        parsed = parse_query(question)
        st = build_search(bench_principal(user), parsed, None, limit=10, settings=settings,
                          vector=got["vectors"].get(parsed.text), model=got["model"], dimension=got["dimension"])
        statements.append(None if st is None else (user, st.sql, st.args, st.gucs))
    out.write_bytes(pickle.dumps(statements))


def statements_of(tree: str, inputs: Path, tmp: Path, name: str) -> list[Any]:
    out = tmp / f"{name}.pkl"
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    subprocess.run([sys.executable, __file__, "--dump", str(inputs), str(out)], env=env, check=True)
    return pickle.loads(out.read_bytes())


async def compare(data_dir: Path, questions: list[tuple[str, str]], before: list[Any], after: list[Any],
                  reps: int) -> dict[str, Any]:
    db = await open_database(store_settings(data_dir))
    repo = MemoryRepository(db.pool)
    times: dict[str, list[float]] = {"before": [], "after": []}
    ratios, differing = [], []
    try:
        for i, pair in enumerate(zip(before, after, strict=True)):
            if None in pair:
                continue
            rows: dict[str, list[tuple[str, float]]] = {}
            best = {"before": float("inf"), "after": float("inf")}
            for r in range(reps):
                order = ["before", "after"] if (i + r) % 2 == 0 else ["after", "before"]
                for name in order:
                    user, sql, args, gucs = pair[0] if name == "before" else pair[1]
                    async with repo.transaction(bench_principal(user), **gucs) as conn:
                        t = time.perf_counter()
                        got = await conn.fetch(sql, *args)
                        best[name] = min(best[name], time.perf_counter() - t)
                    rows[name] = [(str(x["id"]), round(x["score"], 6)) for x in got]
            if rows["before"] != rows["after"]:
                differing.append(questions[i][1])
            for name in times:
                times[name].append(best[name])
            ratios.append(best["after"] / best["before"])
    finally:
        await db.close()
    return {"questions": len(ratios), "differing_rows": len(differing), "differing": differing[:20],
            "before_p50_ms": statistics.median(times["before"]) * 1000,
            "after_p50_ms": statistics.median(times["after"]) * 1000,
            "median_ratio": statistics.median(ratios), "mean_ratio": statistics.mean(ratios), "reps": reps}


def main() -> None:
    if sys.argv[1:2] == ["--dump"]:
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--before", required=True, help="source tree (a worktree or an archive of a commit)")
    parser.add_argument("--after", default=".")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, help="keep the loaded store here for later runs")
    parser.add_argument("--out", type=Path, default=Path("bench/results/sql_ab.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-sql-ab-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "store"
        data_dir.mkdir(parents=True, exist_ok=True)
        got = asyncio.run(load(data_dir, args.dataset, args.conversations))
        inputs = Path(tmp) / "inputs.pkl"
        inputs.write_bytes(pickle.dumps(got))
        before = statements_of(args.before, inputs, Path(tmp), "before")
        after = statements_of(args.after, inputs, Path(tmp), "after")
        results = asyncio.run(compare(data_dir, got["questions"], before, after, args.reps))
    print(f"{'questions':<10}{'same rows':>10}{'before p50 ms':>15}{'after p50 ms':>14}{'after/before':>14}")
    print(f"{results['questions']:<10}{results['questions'] - results['differing_rows']:>10}"
          f"{results['before_p50_ms']:>15.2f}{results['after_p50_ms']:>14.2f}{results['median_ratio']:>14.3f}")
    for question in results["differing"]:
        print(f"  other rows: {question}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"before": args.before, "after": args.after, **results}, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
