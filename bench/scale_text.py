"""Search at a million memories of real conversation text, with recall measured on a labelled subset.

bench/scale.py builds its store from a generator of ~60 words, which makes full text far costlier
than on real memories (each query word matches 7-10% of rows). Here every memory is real text: one
to three turns of LoCoMo conversations, drawn at random and joined (one more turn where that draw
was made already), so the store holds the dataset's own words at their own frequencies.
Their vectors are synthesized, not embedded (a million embeddings take hours on two cores): each
memory's is the normalised sum of its turns' real embeddings plus Gaussian noise of `--spread` per
dimension, so the vectors cluster as the texts do.

One conversation is kept out of the pool and written through the service (real embeddings, the
graph, episodes with their sessions' dates) twice: into the big scope the million are loaded into,
and into a small scope of its own user. Its questions (categories 1-4) are the timed queries, and
their recall is measured in both scopes before the million are loaded and after: the small scope's
must not move (the big scope's HNSW graph and plans must not cost a small user its nearest), the big
scope's shows what a million real distractors cost. Written before the million, the big scope's
labelled turns sit at the head of the table, where full text's sample of a common question's matches
is read first (the first `fulltext_scan` the scan meets): its recall after the million is the best
case of that sample; with the turns spread among the user's rows (`--cluster`) it was .62 against
.72 (docs/benchmarks.md, "A user's rows together, and what full text's sample holds").

`--users N` spreads the million over N users instead (memory i is user i mod N's; the big scope is
the first user's, which holds the labelled conversation too): a hosted or team server's store, one
set of indexes over everyone's rows, each search in one user's scope.

Usage: python bench/scale_text.py [LOCOMO_JSON] [--memories 1000000] [--labelled 0] [--data-dir DIR]
                                  [--spread 0.01] [--maintenance-work-mem 3GB] [--users 1] [--cluster]
                                  [--no-vector-index] [--out FILE]
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
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.db.warmup import warm_pages
from mcp_memory.models import ALL_PERMISSIONS, MemoryFilter, Principal
from mcp_memory.repository.embeddings import EmbeddingRepository
from mcp_memory.service import MemoryService
from mcp_memory.validation import content_hash

sys.path.insert(0, str(Path(__file__).parent))
from locomo import Conversation, load_conversation, load_dataset, warm_query  # noqa: E402
from locomo_data import DEFAULT_DATASET, evidence_ids, mean_metrics, score, turn_text  # noqa: E402
from scale import KINDS, bulk_load, filters, sizes, stand_in_vector_index  # noqa: E402
from stats import summary  # noqa: E402

BIG = Principal(user_id="scale", project_id="big", permissions=ALL_PERMISSIONS, actor="bench")
SMALL = Principal(user_id="labelled", project_id="small", permissions=ALL_PERMISSIONS, actor="bench")
CHUNK = 20_000


async def recall(service: MemoryService, p: Principal, conv: Conversation, ids: dict[str, Any]) -> dict[str, Any]:
    """R@5 / R@10 / nDCG@10 / MRR of the conversation's questions in `p`'s scope."""
    rows = []
    for q in conv.questions:
        evidence = [ids[e] for e in evidence_ids(q.get("evidence", [])) if e in ids]
        if not evidence:
            continue
        await warm_query(service, q["question"])
        hits = (await service.search(p, q["question"], limit=10)).hits
        rows.append(score([h.id for h in hits], evidence))
    return mean_metrics(rows)


def owner(i: int, users: int) -> str:
    """Whose memory i of the million is: the big scope's user's, or one of the `users` - 1 others'."""
    return BIG.user_id if i % users == 0 else f"{BIG.user_id}-{i % users}"


def spliced(n: int, pool: list[str], pool_vectors: np.ndarray, model: str, now: datetime, spread: float,
            rng: random.Random, users: int = 1, first: int = 0) -> Iterator[list[tuple]]:
    """The million in chunks: each one to three pool turns joined, its vector their embeddings'
    sum plus noise, normalised; memory i (counted from `first`) is `owner(i, users)`'s."""
    noise = np.random.default_rng(5)
    seen: set[tuple[int, ...]] = set()  # a text is stored once per scope

    def pick() -> tuple[int, ...]:
        turns = tuple(rng.randrange(len(pool)) for _ in range(rng.choice((1, 2, 2, 3))))
        while turns in seen:
            turns = (*turns, rng.randrange(len(pool)))
        seen.add(turns)
        return turns

    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        picks = [list(pick()) for _ in range(size)]
        v = np.stack([pool_vectors[p].sum(axis=0) for p in picks])
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        v += noise.normal(0, spread, v.shape).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        rows = []
        for k, turns in enumerate(picks):
            i = first + start + k
            text = " ".join(pool[t] for t in turns)
            rows.append((owner(i, users), uuid.uuid4(), None, BIG.project_id, rng.choice(KINDS), text,
                         content_hash(text), [f"t{i % 20}"], v[k], model, now - timedelta(days=rng.uniform(0, 720))))
        yield rows


async def timed(service: MemoryService, p: Principal, questions: list[str],
                searches: dict[str, MemoryFilter | None]) -> dict[str, Any]:
    """Search latency (the query vector cached: the statement and the stages after it) per filter."""
    for q in questions:
        await warm_query(service, q)
    out = {}
    for label, f in searches.items():
        times = []
        for q in questions:
            t = time.perf_counter()
            await service.search(p, q, f, limit=10)
            times.append(time.perf_counter() - t)
        out[label] = summary(times)
    return out


async def run(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    convs = load_dataset(args.dataset, None)
    labelled, rest = convs[args.labelled], [c for i, c in enumerate(convs) if i != args.labelled]
    pool = sorted({turn_text(t) for c in rest for _, _, turns in c.sessions for t in turns})
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING")
    db = await open_database(settings)
    if not args.vector_index and (built := await EmbeddingRepository(db.pool, db.admin).built_with()):
        await stand_in_vector_index(db.admin, built["model"], built["dimension"])
    service = await MemoryService.open(db, settings)
    vectors = service.vectors
    # As a server reads the search's pages when it starts (House.start), here awaited, so the
    # searches below are those of a server up for that long; MCP_MEMORY_WARM_PAGES=false: not read.
    warmed = await warm_pages(db.admin) if settings.warm_pages else None
    assert vectors is not None, "the benchmark needs the embedder"
    report: dict[str, Any] = {"memories": args.memories, "users": args.users, "labelled": labelled.sample_id,
                              "pool_turns": len(pool), "questions": len(labelled.questions), "spread": args.spread,
                              "pages_read_at_start": None if warmed is None else {
                                  "seconds": round(warmed.seconds, 1), "relations": dict(warmed.read),
                                  "left_out": warmed.left_out, "skipped": warmed.skipped}}
    try:
        ids: dict[str, dict[str, Any]] = {}
        for name, p in (("big", BIG), ("small", SMALL)):
            async with db.admin.acquire() as conn:
                rows = await conn.fetch("SELECT id, metadata->>'dia_id' AS dia FROM memories WHERE user_id = $1 "
                                        "AND metadata ? 'dia_id'", p.user_id)
            ids[name] = {r["dia"]: r["id"] for r in rows} or (await load_conversation(service, p, labelled, []))[0]
        async with db.admin.acquire() as conn:
            loaded = await conn.fetchval("SELECT count(*) FROM memories WHERE project_id = $1 "
                                         "AND NOT metadata ? 'dia_id'", BIG.project_id)
        now = datetime.now(UTC)
        if loaded < args.memories:
            report["recall_before"] = {name: await recall(service, p, labelled, ids[name])
                                       for name, p in (("big", BIG), ("small", SMALL))}
            started = time.perf_counter()
            pool_vectors = np.asarray(await vectors.embedder.embed_documents(pool), dtype=np.float32)
            report["embed_pool_s"] = round(time.perf_counter() - started, 1)
            chunks = spliced(args.memories - loaded, pool, pool_vectors, vectors.model, now, args.spread,
                             random.Random(3), args.users, loaded)
            report.update(await bulk_load(db, vectors, chunks, args.maintenance_work_mem, args.vector_index))
            if args.cluster:
                report["cluster_s"] = await cluster(db.admin, args.maintenance_work_mem)
        report["load_average_before_searches"] = round(os.getloadavg()[0], 2)
        report["recall_after"] = {name: await recall(service, p, labelled, ids[name])
                                  for name, p in (("big", BIG), ("small", SMALL))}
        questions = [q["question"] for q in labelled.questions]
        report["search"] = await timed(service, BIG, questions, filters(now))
        report["search_small_scope"] = (await timed(service, SMALL, questions, {"no filter": None}))["no filter"]
        report["sizes_mb"] = await sizes(db.admin)
    finally:
        await db.close()
    return report


async def cluster(admin: Any, work_mem: str) -> float:
    """Each user's rows put together in the order of their ids (the primary key leads with the user),
    which spreads the labelled turns among their user's rows: seconds taken, with VACUUM ANALYZE."""
    started = time.perf_counter()
    async with admin.acquire() as conn:
        await conn.execute("SELECT set_config('maintenance_work_mem', $1, false)", work_mem)
        await conn.execute("CLUSTER memories USING memories_pkey", timeout=None)
        await conn.execute("VACUUM ANALYZE memories", timeout=None)
    return round(time.perf_counter() - started, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--labelled", type=int, default=0, help="which conversation is the labelled subset")
    parser.add_argument("--spread", type=float, default=0.01, help="noise per dimension on a memory's vector")
    parser.add_argument("--maintenance-work-mem", default="3GB", help="for the index builds, embedded server only")
    parser.add_argument("--data-dir", type=Path, help="keep the database here and measure it again next time")
    parser.add_argument("--users", type=int, default=1, help="spread the million over this many users' scopes")
    parser.add_argument("--cluster", action="store_true",
                        help="after loading, each user's rows together by id (CLUSTER), the labelled turns among them")
    parser.add_argument("--no-vector-index", dest="vector_index", action="store_false",
                        help="load without building the HNSW index (hours at ten million on 2 cores); only a "
                             "scope the vector list sorts (retrieval/narrowing.py) is then searched as with it")
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale_text.json"))
    args = parser.parse_args()
    if args.data_dir:
        report = asyncio.run(run(args, args.data_dir))
    else:
        with tempfile.TemporaryDirectory(prefix="mcp-memory-scale-text-") as tmp:
            report = asyncio.run(run(args, Path(tmp)))
    report["machine"] = {"cpus": os.cpu_count(), "load_average_1m_at_end": round(os.getloadavg()[0], 2)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['memories']:,} memories over {report['users']} user(s) of {report['pool_turns']:,} real turns "
          f"spliced; labelled {report['labelled']} ({report['questions']} questions)")
    if warmed := report["pages_read_at_start"]:
        print(f"  pages read at start: {sum(warmed['relations'].values()):,} in {warmed['seconds']} s"
              + (f" (no room for {', '.join(warmed['left_out'])})" if warmed["left_out"] else "")
              + (f" ({warmed['skipped']})" if warmed["skipped"] else ""))
    for key in ("copy_s", "index_build_s", "vacuum_analyze_s", "cluster_s"):
        if key in report:
            print(f"  {key}: {report[key]}")
    for name, s in (report.get("secondary_index_build_s") or {}).items():
        print(f"  build {name}: {s} s")
    for when in ("recall_before", "recall_after"):
        for scope, m in (report.get(when) or {}).items():
            print(f"  {when} {scope}: " + ", ".join(f"{k} {v}" for k, v in m.items()))
    print(f"{'search (query vector cached)':<32}{'p50 ms':>9}{'p95 ms':>9}{'n':>6}")
    for label, s in {**report["search"], "small scope, no filter": report["search_small_scope"]}.items():
        print(f"{label:<32}{s['p50_ms']:>9.1f}{s['p95_ms']:>9.1f}{s['n']:>6}")
    for name, mb in report["sizes_mb"].items():
        print(f"  {name}: {mb} MB")
    print(f"load (1 min) before the searches {report['load_average_before_searches']}, at the end "
          f"{report['machine']['load_average_1m_at_end']}; wrote {args.out}")


if __name__ == "__main__":
    main()
