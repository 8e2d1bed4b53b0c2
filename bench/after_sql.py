"""The Python stage after the SQL one (retrieval/reorder.py: versions newest first, the subject's
memories that answer a question about the present, successors, placed scores) replayed offline
on the knowledge-update sets, in seconds instead of a full load per try.

`capture` loads each set once (one copy, the insertion order of bench/knowledge_update.py's
first copy) and keeps every question's SQL-stage rows; `run` replays the stage over them with the
working tree's code and the local embedder (masked texts cached in a file beside the captures)
and prints newest-first / newest@1 for the changing facts and the share of stable facts in the
top 3, as bench/knowledge_update.py counts them. `--misses N` prints the top N of every question
whose newest version is not first, with each hit's lists, subject factor and masked closeness.
Each miss is also put in the first of these that holds (what it would take to get it right):
  no focus          the question has no time word, so the subject's memories are not re-ordered
  not in window     the newest version is not among the subject's memories compared
  closest is other  the memory closest to the question (subject masked) is another fact
  too narrow        the newest version was not grouped with the closest
  too wide          a newer memory that is another fact was grouped with it
  other             none of these (a question about no one, or the embedder not answering)
Rows are the SQL stage's: a change to the statement needs a new capture.

Stores other than the set as written: `capture --superseded` marks every earlier version
replaced by the next (what an agent or a model that supersedes exactly the earlier versions
leaves); bench/versions_related.py --capture keeps each of its modes' stores (none, listed,
oracle: what its agents left). `run --store NAME` replays one of them.

Usage: python bench/after_sql.py capture circle crm ... [--superseded]
       python bench/after_sql.py run circle crm ... [--misses 8] [--store superseded|none|listed|oracle]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pickle
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from knowledge_update import judge, load, load_copy, shift_of, user_of
from locomo import REPO, bench_database, bench_principal, machine, table

from mcp_memory.config import Settings
from mcp_memory.retrieval import answering, focus, parse_query
from mcp_memory.retrieval.query import ParsedQuery
from mcp_memory.retrieval.reorder import after_sql
from mcp_memory.retrieval.statement import build_search
from mcp_memory.retrieval.versions import newest_of_conflicts
from mcp_memory.review import Review
from mcp_memory.vectors import embedder_from

SETS = REPO / "bench" / "knowledge_update"
STORE = REPO / "bench" / "results" / "after_sql"
LIMIT = 50
SEED = 7  # bench/knowledge_update.py's first copy
MISSES = ("no focus", "not in window", "closest is other", "too narrow", "too wide", "other")


async def sql_stage(service: Any, p: Any, record: dict[str, Any]) -> dict[str, Any]:
    """One question's SQL-stage rows, as the Python stage receives them."""
    parsed = parse_query(record["query"])
    statement = build_search(p, parsed, None, limit=LIMIT, settings=service.settings,
                             vector=await service.vectors.query(parsed.text),
                             model=service.vectors.model, dimension=service.vectors.dimension)
    assert statement is not None
    async with service.repo.transaction(p, **statement.gucs) as conn:
        rows = [dict(row) for row in await conn.fetch(statement.sql, *statement.args)]
    return {"record": record, "rows": rows, "past": statement.past, "conflict": statement.conflict}


def capture_path(name: str, store: str = "") -> Path:
    """Where a set's capture is kept: the set as written, or another `store` of it."""
    return STORE / (f"{name}_{store}.pkl" if store else f"{name}.pkl")


def save_capture(name: str, ids: dict[str, Any], questions: list[dict[str, Any]], store: str = "") -> None:
    path = capture_path(name, store)
    STORE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"ids": ids, "questions": questions}))
    print(f"captured {path.stem}: {len(questions)} questions", file=sys.stderr)


async def capture(name: str, superseded: bool = False) -> None:
    records = load(SETS / f"{name}.jsonl")
    shift = shift_of(records)
    async with bench_database(None, "after-sql") as bench:
        ids = await load_copy(bench, "after-sql", records, shift, SEED, [])
        if superseded:
            await supersede_earlier(bench, records, ids)
        await bench.analyze()
        service = bench.service()
        assert service.vectors is not None
        questions = [await sql_stage(service, bench_principal(user_of("after-sql", r)), r) for r in records]
    save_capture(name, ids, questions, "superseded" if superseded else "")


async def supersede_earlier(bench: Any, records: list[dict[str, Any]], ids: dict[str, Any]) -> None:
    """Every earlier version marked replaced by the next one: the store an agent or a model that
    supersedes exactly the earlier versions leaves behind."""
    review = Review(bench.service().repo, Settings())
    for r in records:
        versions = sorted(r["versions"], key=lambda v: v["occurred_at"])
        for older, newer in itertools.pairwise(versions):
            await review.supersede(bench_principal(user_of("after-sql", r)), ids[newer["key"]], [ids[older["key"]]])


class CachedVectors:
    """The local embedder behind a file cache: replays embed each masked text once."""

    def __init__(self, path: Path) -> None:
        embedder = embedder_from(Settings())
        if embedder is None:
            raise SystemExit("the local embedder is not available")
        self.embedder, self.path = embedder, path
        self.known: dict[tuple[str, str], list[float]] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self.size = len(self.known)

    async def query(self, text: str) -> list[float] | None:
        if ("q", text) not in self.known:
            self.known["q", text] = await self.embedder.embed_query(text)
        return self.known["q", text]

    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None:
        missing = list(dict.fromkeys(t for t in texts if ("d", t) not in self.known))
        if missing:
            for text, vector in zip(missing, await self.embedder.embed_documents(missing), strict=True):
                self.known["d", text] = vector
        return [self.known["d", t] for t in texts]

    def save(self) -> None:
        if len(self.known) != self.size:
            self.path.write_bytes(pickle.dumps(self.known))


def miss_lines(r: dict[str, Any], hits: list[Any], key_of: dict[Any, str], judged: dict[str, Any],
               top: int) -> list[str]:
    versions = {v["key"] for v in r["versions"]}
    lines = [f"## {r['id']}  {r['query']}  newest at {judged['newest_rank']}, "
             f"best stale at {judged['best_stale_rank']}"]
    for i, h in enumerate(hits[:top]):
        key = key_of.get(h.id, "?")
        mark = "N" if key == r["newest"] else "s" if key in versions else " "
        e = h.explain or {}
        lines.append(f"  {i + 1:2d} {mark} score {h.score:.3f} sql {e.get('sql_score', h.score):.3f} "
                     f"vec {e.get('vector')} fts {e.get('fulltext')} subject {e.get('subject')} "
                     f"on_topic {e.get('on_topic')} linked {e.get('linked')} {h.occurred_at.date()} {h.snippet[:80]}")
    return lines


async def why_missed(q: dict[str, Any], parsed: ParsedQuery, key_of: dict[Any, str], vectors: CachedVectors,
                     settings: Settings) -> str:
    """Which step of the present-tense focus (retrieval/focus.py) a miss went wrong at."""
    r = q["record"]
    if q["past"] or not (settings.present_focus and focus.applies(parsed)):
        return "no focus"
    rows = newest_of_conflicts(list(q["rows"]), q["conflict"])
    closeness = await focus.similarities(rows, parsed, vectors, q["conflict"])
    keys = {key_of.get(memory_id): memory_id for memory_id in closeness}
    if not closeness:
        return "other"
    if r["newest"] not in keys:
        return "not in window"
    versions = {v["key"] for v in r["versions"]}
    if key_of.get(next(k for k, c in closeness.items() if c.joined == 0)) not in versions:
        return "closest is other"
    if keys[r["newest"]] not in answering.answering(closeness, settings.present_margin):
        return "too narrow"
    return "too wide"


async def replay(name: str, vectors: CachedVectors, settings: Settings, misses: int,
                 store: str = "") -> dict[str, Any]:
    captured = pickle.loads(capture_path(name, store).read_bytes())
    ids = captured["ids"]
    key_of = {memory_id: key for key, memory_id in ids.items()}
    judged = []
    why: dict[str, int] = {}
    for q in captured["questions"]:
        r = q["record"]
        parsed = parse_query(r["query"])
        hits = (await after_sql(q["rows"], parsed, past=q["past"], conflict=q["conflict"],
                                settings=settings, explain=True, vectors=vectors)).hits
        result = judge(r, [h.id for h in hits], ids)
        judged.append(result)
        if r["type"] != "stable" and not result["newest_at_1"]:
            reason = await why_missed(q, parsed, key_of, vectors, settings)
            why[reason] = why.get(reason, 0) + 1
            if misses:
                print("\n".join([*miss_lines(r, hits, key_of, result, misses), f"  ({reason})"]))
    changing = [j for j in judged if j["type"] != "stable"]
    stable = [j for j in judged if j["type"] == "stable"]
    return {"set": name, "changing": len(changing), "stable": len(stable),
            "newest_first": round(statistics.fmean(j["newest_first"] for j in changing), 4),
            "newest_at_1": round(statistics.fmean(j["newest_at_1"] for j in changing), 4),
            "stable_top_3": round(statistics.fmean(j["top_3"] for j in stable), 4) if stable else None,
            "missed_newest_at_1": {reason: why.get(reason, 0) for reason in MISSES}}


async def run(names: list[str], misses: int, store: str = "") -> list[dict[str, Any]]:
    vectors = CachedVectors(STORE / "vectors.pkl")
    settings = Settings()
    try:
        return [await replay(name, vectors, settings, misses, store) for name in names]
    finally:
        vectors.save()


def report(results: list[dict[str, Any]], out: Path) -> None:
    cols = ["set", "changing", "newest_first", "newest_at_1", "stable", "stable_top_3"]
    print(table(cols, [[r[c] for c in cols] for r in results]))
    print("\nchanging facts whose newest version is not first, by the step that went wrong")
    print(table(["set", *MISSES], [[r["set"], *r["missed_newest_at_1"].values()] for r in results]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "after-sql", "results": results, "machine": machine(),
                               "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}, indent=2))
    print(f"wrote {out}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("capture", "run"))
    parser.add_argument("sets", nargs="+", help="names of bench/knowledge_update/*.jsonl")
    parser.add_argument("--misses", type=int, default=0, help="print this many hits of every miss")
    parser.add_argument("--superseded", action="store_true",
                        help="capture: supersede every earlier version by the next (the store a perfect agent leaves)")
    parser.add_argument("--store", default="", help="run: replay another capture of each set: superseded (above), "
                        "or none / listed / oracle (bench/versions_related.py --capture)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "after_sql.json")
    args = parser.parse_args()
    if args.action == "capture":
        for name in args.sets:
            asyncio.run(capture(name, args.superseded))
    else:
        report(asyncio.run(run(args.sets, args.misses, args.store)), args.out)


if __name__ == "__main__":
    main()
