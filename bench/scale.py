"""Search latency at scale: 100,000 memories in one scope, with and without filters.

The memories are generated: a few thousand distinct sentences are embedded with the configured
model, and each memory is one of them with its own suffix and a slightly perturbed copy of its
vector, bulk-loaded with COPY (embedding 100,000 texts one by one would take longer than the
benchmark). Query embeddings are computed once before timing, so the figures are the search
itself (one SQL statement); the query embedding is timed separately.

Usage: python bench/scale.py [--memories 100000] [--queries 200] [--data-dir DIR]
                              [--out bench/results/scale.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.models import ALL_PERMISSIONS, MemoryFilter, Principal
from mcp_memory.repository.embeddings import index_name
from mcp_memory.retrieval import parse_query
from mcp_memory.service import MemoryService
from mcp_memory.validation import content_hash

sys.path.insert(0, str(Path(__file__).parent))
from stats import summary  # noqa: E402
from stdio_latency import OBJECTS, QUERIES, SUBJECTS, VERBS  # noqa: E402

KINDS = ["fact", "preference", "decision", "episode", "note"]
PLACES = ["Lisbon", "Oslo", "Berlin", "Nairobi", "Lima", "Osaka", "Toronto", "Auckland", "Seville", "Tartu"]
EXTRA_QUERIES = ["who moved to Oslo", "Kafka", "nightly backups failing", "what did the team decide about Rust",
                 "feature flags in the mobile app", "Tartu", "PostgreSQL upgrade plan", "green tea"]





def jittered(base: np.ndarray, seed: int) -> np.ndarray:
    """A unit vector near `base`: a generated memory close to, not equal to, its embedded sentence."""
    v = base + np.random.default_rng(seed).normal(0, 0.02, base.shape[0]).astype(np.float32)
    return v / np.linalg.norm(v)


async def run(n: int, queries: int, data_dir: Path) -> dict:
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING")
    db = await open_database(settings)
    service = await MemoryService.open(db, settings)
    vectors = service.vectors
    p = Principal(user_id="scale", project_id="big", permissions=ALL_PERMISSIONS, actor="bench")
    rng = random.Random(3)
    try:
        bases = sorted({f"{s} {v} {o} in {rng.choice(PLACES)}" for s in SUBJECTS for v in VERBS for o in OBJECTS})
        rng.shuffle(bases)
        bases = bases[:3000]
        async with db.admin.acquire() as conn:
            loaded = await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = $1", p.user_id)
        if loaded == n:  # a kept --data-dir: measure again without reloading
            return {"memories": n, "distinct_texts": len(bases), "embed_distinct_s": None, "copy_s": None,
                    "index_build_s": None, **await measure(service, p, queries, datetime.now(UTC))}
        started = time.perf_counter()
        base_vectors = np.asarray(await vectors.embedder.embed_documents(bases), dtype=np.float32)
        embed_s = time.perf_counter() - started
        now = datetime.now(UTC)
        records = []
        for i in range(n):
            j = rng.randrange(len(bases))
            v = jittered(base_vectors[j], i)
            text = f"{bases[j]} (record {i}, batch {i % 97})"
            if i % 5 == 0:  # questions pass their score to the next episode: measure that path too
                text = f"Is it true that {text}?"
            records.append((p.user_id, uuid.uuid4(), None, p.project_id, rng.choice(KINDS), text, content_hash(text),
                            [f"t{i % 20}"], v, vectors.model, now - timedelta(days=rng.uniform(0, 720))))
        async with db.admin.acquire() as conn:
            # Bulk load first, index after: building HNSW once beats inserting 100k rows into it.
            await conn.execute(f"DROP INDEX IF EXISTS {index_name(vectors.model, vectors.dimension)}")
            started = time.perf_counter()
            await conn.copy_records_to_table(
                "memories", records=records,
                columns=["user_id", "id", "agent_id", "project_id", "kind", "content", "content_hash", "tags",
                         "embedding", "embedding_model", "occurred_at"])
            load_s = time.perf_counter() - started
            await conn.execute("VACUUM ANALYZE memories")  # a store in use is vacuumed; measure that
        started = time.perf_counter()
        await vectors.repo.ensure_index(vectors.model, vectors.dimension)
        index_s = time.perf_counter() - started
        measured = await measure(service, p, queries, now)
    finally:
        await db.close()
    return {"memories": n, "distinct_texts": len(bases), "embed_distinct_s": round(embed_s, 1),
            "copy_s": round(load_s, 1), "index_build_s": round(index_s, 1), **measured}


async def measure(service: MemoryService, p: Principal, queries: int, now: datetime) -> dict:
    vectors = service.vectors
    qs = [QUERIES[i % len(QUERIES)] if i % 2 else EXTRA_QUERIES[i % len(EXTRA_QUERIES)] for i in range(queries)]
    embed_t = []
    await vectors.embedder.embed_query("warm up")  # the model loads on first use
    for q in set(qs):
        for _ in range(10):
            t = time.perf_counter()
            await vectors.embedder.embed_query(q)
            embed_t.append(time.perf_counter() - t)
        await vectors.query(parse_query(q).text)  # later searches (what they embed) hit the query cache
    filters = {
        "no filter": None,
        "kind = decision": MemoryFilter(kinds=["decision"]),
        "tag t7 (5%)": MemoryFilter(tags=["t7"]),
        "last 30 days": MemoryFilter(since=now - timedelta(days=30)),
    }
    results = {}
    for label, f in filters.items():
        times, found, by_query = [], 0, {}
        for q in qs:
            t = time.perf_counter()
            hits = (await service.search(p, q, f, limit=10)).hits
            times.append(time.perf_counter() - t)
            by_query.setdefault(q, []).append(times[-1])
            found += bool(hits)
        slowest = sorted(((max(v) * 1000, q) for q, v in by_query.items()), reverse=True)[:5]
        results[label] = {**summary(times), "queries_with_hits": found,
                          "slowest_ms": {q: round(ms, 1) for ms, q in slowest}}
    return {"query_embedding": summary(embed_t), "search": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale.json"))
    parser.add_argument("--data-dir", type=Path, help="keep the database here and reuse it on the next run")
    args = parser.parse_args()
    if args.data_dir:
        results = asyncio.run(run(args.memories, args.queries, args.data_dir))
    else:
        with tempfile.TemporaryDirectory(prefix="mcp-memory-scale-") as tmp:
            results = asyncio.run(run(args.memories, args.queries, Path(tmp)))
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"{results['memories']:,} memories in one scope (COPY {results['copy_s']} s, "
          f"index build {results['index_build_s']} s)")
    for label, s in results["search"].items():
        print(f"  slowest, {label}: " + ", ".join(f"{q!r} {ms} ms" for q, ms in s["slowest_ms"].items()))
    print(f"{'search (excluding query embedding)':<40}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    for label, s in results["search"].items():
        print(f"{label:<40}{s['p50_ms']:>10.1f}{s['p95_ms']:>10.1f}{s['n']:>6}")
    e = results["query_embedding"]
    print(f"{'query embedding':<40}{e['p50_ms']:>10.1f}{e['p95_ms']:>10.1f}{e['n']:>6}")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
