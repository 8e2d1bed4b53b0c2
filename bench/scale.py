"""Search latency at scale: 100,000 memories in one scope, with and without filters, and the
same protocol at 1,000,000 (`--memories 1000000`) with the build time and the index sizes.
`--users N` spreads the memories over N users instead (a team's or a hosted server's store: one
HNSW index over everyone's rows, each search in one user's scope), searches as the first of them,
and reports how many of that user's exact ten nearest the index's filtered walk finds.

The memories are generated: a few thousand distinct sentences are embedded with the configured
model (the topic centroids), and each memory is one of them with its own suffix and its own vector:
the sentence's vector plus Gaussian noise of `--spread` per dimension, normalised (0.02 puts a
memory at cosine ~0.93 from its centroid, 0.04 at ~0.78: at a million rows the wider spread keeps
the ~330 memories of a topic from being near-copies, so the HNSW graph is built over distinct
neighbours as a real store's would be). They are bulk-loaded with COPY in chunks, the secondary
indexes (full text, trigram, tags, ...) and the HNSW index dropped first and built after, each
timed (building once beats maintaining them row by row). On the embedded server the build runs with
`--maintenance-work-mem` (ALTER SYSTEM in the benchmark's own data directory; left alone on a
server named by MCP_MEMORY_DATABASE_URL). Query embeddings are computed once before timing, so the
figures are the search itself (one SQL statement); the query embedding is timed separately.

Usage: python bench/scale.py [--memories 100000] [--queries 200] [--data-dir DIR] [--spread 0.02]
                              [--maintenance-work-mem 2GB] [--users 1] [--out bench/results/scale.json]
  1M:  python bench/scale.py --memories 1000000 --spread 0.04 --out bench/results/scale_1m.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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
# The one user whose scope holds every generated memory.
BIG = Principal(user_id="scale", project_id="big", permissions=ALL_PERMISSIONS, actor="bench")
PLACES = ["Lisbon", "Oslo", "Berlin", "Nairobi", "Lima", "Osaka", "Toronto", "Auckland", "Seville", "Tartu"]
EXTRA_QUERIES = ["who moved to Oslo", "Kafka", "nightly backups failing", "what did the team decide about Rust",
                 "feature flags in the mobile app", "Tartu", "PostgreSQL upgrade plan", "green tea"]


def jittered(base: np.ndarray, seed: int) -> np.ndarray:
    """A unit vector near `base`: a generated memory close to, not equal to, its embedded sentence."""
    v = base + np.random.default_rng(seed).normal(0, 0.02, base.shape[0]).astype(np.float32)
    return v / np.linalg.norm(v)


async def run(n: int, queries: int, data_dir: Path, spread: float, work_mem: str, users: int = 1) -> dict:
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING")
    db = await open_database(settings)
    service = await MemoryService.open(db, settings)
    vectors = service.vectors
    p = BIG if users == 1 else BIG.model_copy(update={"user_id": user_of(0, users)})
    rng = random.Random(3)
    try:
        bases = sorted({f"{s} {v} {o} in {rng.choice(PLACES)}" for s in SUBJECTS for v in VERBS for o in OBJECTS})
        rng.shuffle(bases)
        bases = bases[:3000]
        async with db.admin.acquire() as conn:
            loaded = await conn.fetchval("SELECT count(*) FROM memories")
        if loaded == n:  # a kept --data-dir: measure again without reloading
            return {"memories": n, "users": users, "distinct_texts": len(bases), "embed_distinct_s": None,
                    "copy_s": None, "index_build_s": None, **await measure(service, p, queries, datetime.now(UTC)),
                    **await scoped_recall(db.admin, service, p, users), "sizes_mb": await sizes(db.admin)}
        started = time.perf_counter()
        base_vectors = np.asarray(await vectors.embedder.embed_documents(bases), dtype=np.float32)
        embed_s = time.perf_counter() - started
        now = datetime.now(UTC)
        built = await bulk_load(db, vectors, generated(n, bases, base_vectors, p, vectors.model, now, spread, rng,
                                                       users=users), work_mem)
        measured = await measure(service, p, queries, now)
        recall = await scoped_recall(db.admin, service, p, users)
        sized = await sizes(db.admin)
    finally:
        await db.close()
    return {"memories": n, "users": users, "distinct_texts": len(bases), "spread": spread,
            "embed_distinct_s": round(embed_s, 1), **built, **measured, **recall, "sizes_mb": sized}


def user_of(i: int, users: int) -> str:
    return BIG.user_id if users == 1 else f"scale-{i % users}"


async def scoped_recall(admin: Any, service: MemoryService, p: Principal, users: int) -> dict[str, Any]:
    """Of the searching user's ten nearest memories to each query (exact: no index), how many the
    HNSW index's walk finds under the same scope, with the server's settings for it (ef_search,
    iterative scan); only with --users, where the scope is a small part of the index."""
    if users == 1:
        return {}
    settings = service.settings
    found, times = [], []
    async with admin.acquire() as conn:
        mine = await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = $1", p.user_id)
        for q in sorted(set(QUERIES))[:40]:
            vector = await service.vectors.query(parse_query(q).text)
            sql = ("SELECT id FROM memories WHERE user_id = $1 AND deleted_at IS NULL "
                   "ORDER BY embedding <=> $2 LIMIT 10")
            async with conn.transaction():
                await conn.execute("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off")
                exact = {r["id"] for r in await conn.fetch(sql, p.user_id, vector)}
            async with conn.transaction():
                await conn.execute(f"SET LOCAL hnsw.ef_search = {int(settings.hnsw_ef_search)}; "
                                   "SET LOCAL hnsw.iterative_scan = relaxed_order")
                started = time.perf_counter()
                walked = {r["id"] for r in await conn.fetch(sql, p.user_id, vector)}
                times.append(time.perf_counter() - started)
            found.append(len(exact & walked) / max(1, len(exact)))
    return {"scope_memories": mine, "scoped_vector_recall_at_10": round(float(np.mean(found)), 3),
            "scoped_vector_walk": summary(times)}


async def bulk_load(db: Any, vectors: Any, chunks: Iterable[list[tuple]], work_mem: str,
                    vector_index: bool = True) -> dict[str, Any]:
    """The rows loaded by COPY with the indexes dropped first and built after, each timed (building
    once beats maintaining them row by row); the HNSW index with `work_mem` on the embedded server,
    or a stand-in under its name (`vector_index` false, `stand_in_vector_index`)."""
    tuned = db.embedded is not None and await tune_builds(db.admin, work_mem)
    async with db.admin.acquire() as conn:
        await conn.execute(f"DROP INDEX IF EXISTS {index_name(vectors.model, vectors.dimension)}")
        secondary = await drop_secondary_indexes(conn)
        started = time.perf_counter()
        for rows in chunks:
            await conn.copy_records_to_table("memories", records=rows, columns=COLUMNS)
        load_s = time.perf_counter() - started
        builds = {}
        for name, definition in secondary.items():
            started = time.perf_counter()
            await conn.execute(definition)
            builds[name] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        await conn.execute("VACUUM ANALYZE memories")  # a store in use is vacuumed; measure that
        vacuum_s = time.perf_counter() - started
    started = time.perf_counter()
    if vector_index:
        await vectors.repo.ensure_index(vectors.model, vectors.dimension)
    else:
        await stand_in_vector_index(db.admin, vectors.model, vectors.dimension)
    return {"maintenance_work_mem": work_mem if tuned else "server default", "copy_s": round(load_s, 1),
            "index_build_s": round(time.perf_counter() - started, 1) if vector_index else None,
            "secondary_index_build_s": builds,
            "vacuum_analyze_s": round(vacuum_s, 1)}


async def stand_in_vector_index(admin: Any, model: str, dimension: int) -> None:
    """An empty index under the name of the model's HNSW index, so that a server started on the store
    (a measurement again with --data-dir) finds it there and builds nothing: at ten million memories
    the build takes hours on two cores. Only a scope the vector list sorts (retrieval/narrowing.py)
    is searched as with the real index; DROP INDEX the stand-in and a server's next start builds it."""
    await admin.execute(f"CREATE INDEX IF NOT EXISTS {index_name(model, dimension)} ON memories (id) WHERE false")


COLUMNS = ["user_id", "id", "agent_id", "project_id", "kind", "content", "content_hash", "tags",
           "embedding", "embedding_model", "occurred_at"]


def generated(n: int, bases: list[str], base_vectors: np.ndarray, p: Principal, model: str, now: datetime,
              spread: float, rng: random.Random, chunk: int = 20_000, users: int = 1) -> Iterator[list[tuple]]:
    """The memories in chunks (a million rows with their vectors do not fit in memory as tuples):
    each one a topic sentence with its own suffix, and the sentence's vector plus noise."""
    noise = np.random.default_rng(5)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        picks = [rng.randrange(len(bases)) for _ in range(size)]
        v = base_vectors[picks] + noise.normal(0, spread, (size, base_vectors.shape[1])).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        rows = []
        for k, j in enumerate(picks):
            i = start + k
            text = f"{bases[j]} (record {i}, batch {i % 97})"
            if i % 5 == 0:  # questions pass their score to the next episode: measure that path too
                text = f"Is it true that {text}?"
            rows.append((user_of(i, users), uuid.uuid4(), None, p.project_id, rng.choice(KINDS), text,
                         content_hash(text), [f"t{i % 20}"], v[k], model, now - timedelta(days=rng.uniform(0, 720))))
        yield rows


async def tune_builds(admin: Any, work_mem: str) -> bool:
    """Give index builds the memory to hold the HNSW graph (built in memory it takes a fraction of
    the time); only ever on the benchmark's own embedded server."""
    async with admin.acquire() as conn:
        await conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{work_mem}'")
        await conn.execute("SELECT pg_reload_conf()")
    return True


async def drop_secondary_indexes(conn: Any) -> dict[str, str]:
    """Drop the table's indexes that no constraint needs; returns name -> CREATE statement."""
    rows = await conn.fetch(
        """SELECT c.relname, pg_get_indexdef(i.indexrelid) AS definition
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE i.indrelid = 'memories'::regclass AND NOT i.indisprimary AND NOT i.indisunique""")
    for r in rows:
        await conn.execute(f'DROP INDEX "{r["relname"]}"')
    return {r["relname"]: r["definition"] for r in rows}


async def sizes(admin: Any) -> dict[str, float]:
    """Megabytes on disk: the table (heap, and with TOAST where vectors and long texts go) and
    each of its indexes."""
    async with admin.acquire() as conn:
        rows = await conn.fetch(
            """SELECT c.relname, pg_relation_size(c.oid) AS bytes
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE i.indrelid = 'memories'::regclass ORDER BY bytes DESC""")
        heap, table = await conn.fetchrow(
            "SELECT pg_relation_size('memories'), pg_table_size('memories')")
    mb = 1024 * 1024
    return {"table (heap)": round(heap / mb, 1), "table (with TOAST)": round(table / mb, 1),
            **{r["relname"]: round(r["bytes"] / mb, 1) for r in rows}}


def filters(now: datetime) -> dict[str, MemoryFilter | None]:
    """The searches timed at scale: none, a kind of five, one tag of twenty, the last 30 days."""
    return {"no filter": None, "kind = decision": MemoryFilter(kinds=["decision"]),
            "tag t7 (5%)": MemoryFilter(tags=["t7"]), "last 30 days": MemoryFilter(since=now - timedelta(days=30))}


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
    results = {}
    for label, f in filters(now).items():
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
    parser.add_argument("--spread", type=float, default=0.02,
                        help="noise per dimension around a memory's topic vector (0.04 for a million)")
    parser.add_argument("--maintenance-work-mem", default="2GB",
                        help="for the index builds, on the embedded server only")
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale.json"))
    parser.add_argument("--data-dir", type=Path, help="keep the database here and reuse it on the next run")
    parser.add_argument("--users", type=int, default=1,
                        help="spread the memories over this many users and search as one of them")
    args = parser.parse_args()
    if args.memories < 1 or args.queries < 1 or args.users < 1:
        parser.error("--memories, --queries and --users must be at least 1")
    if not 0 < args.spread < 1:
        parser.error("--spread must be between 0 and 1")
    if not re.fullmatch(r"[1-9][0-9]*(kB|MB|GB)", args.maintenance_work_mem):
        parser.error("--maintenance-work-mem takes a size such as 512MB or 2GB")
    if args.data_dir:
        results = asyncio.run(run(args.memories, args.queries, args.data_dir, args.spread, args.maintenance_work_mem,
                                  args.users))
    else:
        with tempfile.TemporaryDirectory(prefix="mcp-memory-scale-") as tmp:
            results = asyncio.run(run(args.memories, args.queries, Path(tmp), args.spread,
                                      args.maintenance_work_mem, args.users))
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "load_average_1m_at_end": round(os.getloadavg()[0], 2)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    where = "in one scope" if results["users"] == 1 else f"over {results['users']:,} users, searched as one"
    print(f"{results['memories']:,} memories {where} (COPY {results['copy_s']} s, "
          f"HNSW build {results['index_build_s']} s, maintenance_work_mem {results.get('maintenance_work_mem')})")
    for name, seconds in (results.get("secondary_index_build_s") or {}).items():
        print(f"  build {name}: {seconds} s")
    for label, s in results["search"].items():
        print(f"  slowest, {label}: " + ", ".join(f"{q!r} {ms} ms" for q, ms in s["slowest_ms"].items()))
    print(f"{'search (excluding query embedding)':<40}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    for label, s in results["search"].items():
        print(f"{label:<40}{s['p50_ms']:>10.1f}{s['p95_ms']:>10.1f}{s['n']:>6}")
    if "scoped_vector_walk" in results:
        w = results["scoped_vector_walk"]
        print(f"{'vector walk in the scope (SQL alone)':<40}{w['p50_ms']:>10.1f}{w['p95_ms']:>10.1f}{w['n']:>6}")
        print(f"the scope's {results['scope_memories']:,} memories: its exact ten nearest found by the index's walk "
              f"{results['scoped_vector_recall_at_10']:.3f}")
    e = results["query_embedding"]
    print(f"{'query embedding':<40}{e['p50_ms']:>10.1f}{e['p95_ms']:>10.1f}{e['n']:>6}")
    print(f"\n{'on disk':<40}{'MB':>10}")
    for name, mb in results["sizes_mb"].items():
        print(f"{name:<40}{mb:>10.1f}")
    print(f"\nload average (1 min) at the end: {results['machine']['load_average_1m_at_end']}; wrote {args.out}")


if __name__ == "__main__":
    main()
