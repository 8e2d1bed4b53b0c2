"""LoCoMo retrieval benchmark through the project's own write and search path.

Protocol (shared/datasets/locomo/README.md): one memory per dialog turn ("Speaker: text", plus
" [shares <caption>]" for an image), written with `MemoryService.write` (`occurred_at` = the
session's date), one scope (user) per conversation; for every question of categories 1-4,
`MemoryService.search` over that conversation and score Recall@5, Recall@10 (fraction of the
evidence turns in the top k), nDCG@10 (binary relevance), MRR (first relevant hit within the
search limit) and the latency of the `search` call (its query embedding computed beforehand), overall
and per category.

Variants change Settings (`VARIANTS` below) and run over the same loaded database; a variant
whose settings do not exist yet is skipped with a note. This module also holds what
`bench/knowledge_update.py` shares with it (variants, database, tables).

Usage:
  python bench/locomo.py [DATASET] [--variants a,b] [--set key=value ...] [--limit-conversations N]
                         [--one-namespace]
                         [--limit 10] [--dates original|rebased] [--database-url URL] [--loads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.models import Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.retrieval import parse_query
from mcp_memory.retrieval.dates import YEAR
from mcp_memory.service import Decider, MemoryService, memory_repository
from mcp_memory.vectors import Vectors

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import (  # noqa: E402
    CATEGORIES,
    DEFAULT_DATASET,
    METRICS,
    REPO,
    SESSION,
    evidence_ids,
    mean_metrics,
    score,
    turn_text,
)
from stats import percentile  # noqa: E402

# --- variants (shared with knowledge_update.py) ------------------------------------------------

# Settings that switch a retrieval feature off, applied only where the setting exists so that a
# variant about one list is not disturbed by features added later.
NO_VECTOR = {"weight_vector": 0.0}
NO_RECENCY = {"recency_floor": 1.0}


@dataclass(frozen=True)
class Variant:
    name: str
    about: str
    set: dict[str, Any] = field(default_factory=dict)   # required: skip the variant if a key is unknown
    off: dict[str, Any] = field(default_factory=dict)   # applied only if the setting exists
    requires: tuple[str, ...] = ()                       # further settings that must exist

    def settings(self, base: Settings) -> Settings | str:
        """Settings for this variant, or why it is skipped."""
        known = Settings.model_fields
        missing = [k for k in (*self.set, *self.requires) if k not in known]
        if missing:
            return f"Settings has no {', '.join(missing)} yet"
        update = {k: v for k, v in self.off.items() if k in known and k not in self.set}
        update.update(self.set)
        copy = base.model_copy(update=update)
        try:  # model_copy does not validate; check the values against the fields' constraints
            Settings(**copy.model_dump())
        except ValidationError as e:
            return f"invalid settings: {e.errors()[0]['loc']} {e.errors()[0]['msg']}"
        return copy

    def effective(self, base: Settings) -> dict[str, Any]:
        """The retrieval settings this variant runs with (for the JSON report)."""
        s = self.settings(base)
        assert isinstance(s, Settings)
        keys = ("search_candidates", "rrf_k", "trigram_threshold")
        retrieval = {k: v for k, v in s.model_dump().items()
                     if k.startswith(("weight_", "recency_")) or k in keys or k in self.set}
        return retrieval


VARIANTS: list[Variant] = [
    Variant("default", "the shipped defaults, whatever they are"),
    Variant("fulltext", "full text only", set={"weight_fulltext": 1.0, "weight_trigram": 0.0},
            off={**NO_VECTOR, **NO_RECENCY}),
    Variant("trigram", "trigram only", set={"weight_fulltext": 0.0, "weight_trigram": 1.0},
            off={**NO_VECTOR, **NO_RECENCY}),
    Variant("lexical", "full text 1 + trigram 0.5, no vector, no recency",
            set={"weight_fulltext": 1.0, "weight_trigram": 0.5}, off={**NO_VECTOR, **NO_RECENCY}),
    Variant("lexical-eq", "full text 1 + trigram 1",
            set={"weight_fulltext": 1.0, "weight_trigram": 1.0}, off={**NO_VECTOR, **NO_RECENCY}),
    Variant("lexical-t.25", "full text 1 + trigram 0.25",
            set={"weight_fulltext": 1.0, "weight_trigram": 0.25}, off={**NO_VECTOR, **NO_RECENCY}),
    # Added once the settings exist (skipped until then).
    Variant("vector", "vector only",
            set={"weight_vector": 1.0, "weight_fulltext": 0.0, "weight_trigram": 0.0}, off=NO_RECENCY),
    Variant("hybrid", "default weights with the vector list, no recency",
            requires=("weight_vector",), off=NO_RECENCY),
    Variant("hybrid+recency", "default weights and default recency",
            requires=("weight_vector", "recency_floor", "recency_half_life_days")),
    Variant("no-replies", "the defaults without passing scores between neighbouring turns",
            set={"reply_weight": 0.0, "preceding_weight": 0.0}),
    Variant("no-preceding", "the defaults without passing scores back to the turn a question follows up on",
            set={"preceding_weight": 0.0}, requires=("preceding_weight",)),
    Variant("no-period", "the defaults without lifting what was written in the period a query names",
            set={"period_boost": 1.0}, requires=("period_boost",)),
]


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set takes key=value, not {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def add_variant_arguments(parser: argparse.ArgumentParser, dataset: Path) -> None:
    """The dataset (default `dataset`) and the variant choice, as every benchmark built on this
    module takes them."""
    parser.add_argument("dataset", nargs="?", type=Path, default=dataset)
    parser.add_argument("--variants", help=f"comma-separated subset of: {', '.join(v.name for v in VARIANTS)}")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra 'custom' variant with these settings (alone unless --variants is given)")


def choose_variants(names: str | None, sets: list[str]) -> list[Variant]:
    by_name = {v.name: v for v in VARIANTS}
    chosen = list(VARIANTS)
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
        chosen = [by_name[n] for n in wanted]
    if sets:
        update = parse_sets(sets)
        chosen.append(Variant("custom", " ".join(sets), set=update))
        if not names:
            chosen = [chosen[-1]]
    return chosen


def resolve_variants(chosen: list[Variant], base: Settings) -> tuple[list[tuple[Variant, Settings]], dict[str, str]]:
    runnable, skipped = [], {}
    for v in chosen:
        s = v.settings(base)
        if isinstance(s, str):
            skipped[v.name] = s
            print(f"skipping variant {v.name!r}: {s}", file=sys.stderr)
        else:
            runnable.append((v, s))
    return runnable, skipped


# --- database ------------------------------------------------------------------------------------

@dataclass
class Bench:
    """The database a benchmark runs on: the repository the service uses, the base settings,
    and the owner's pool for maintenance (ANALYZE, clean-up, checks across row-level security)."""

    repo: MemoryRepository
    settings: Settings
    admin: Any
    vectors: Vectors | None = None

    def service(self, settings: Settings | None = None,
                decider: Callable[[MemoryService], Decider] | None = None) -> MemoryService:
        """A service on this database for `settings`, with the repository they ask for (decision
        jobs or none) and `decider` (decisions/runtime.py's Workers) when writes should tell a worker."""
        settings = settings or self.settings
        repo = self.repo if settings.decisions_provider == "none" else memory_repository(self.repo.pool, settings)
        return MemoryService(repo, settings, self.vectors, decider=decider)

    async def analyze(self) -> None:
        """Planner statistics as autovacuum would have them in steady state (right after a bulk
        load they are missing and plans differ)."""
        async with self.admin.acquire() as conn:
            await conn.execute("ANALYZE memories")

    async def drop_users(self, user_ids: list[str]) -> None:
        """Remove this run's rows from a database we did not create (best effort)."""
        try:
            async with self.admin.acquire() as conn, conn.transaction():
                for table in ("memories", "memory_history", "idempotency_keys"):
                    await conn.execute(f"DELETE FROM {table} WHERE user_id = ANY($1::text[])", user_ids)
        except Exception as e:  # noqa: BLE001
            print(f"warning: could not remove benchmark rows ({e}); users {user_ids}", file=sys.stderr)


@asynccontextmanager
async def bench_database(database_url: str | None, prefix: str) -> AsyncIterator[Bench]:
    """A fresh embedded server in a temp dir, or the given URL."""
    with tempfile.TemporaryDirectory(prefix=f"mcp-memory-{prefix}-") as tmp:
        base = Settings(database_url=database_url, data_dir=Path(tmp), log_level="WARNING",
                        pool_min_size=1, pool_max_size=4)
        db = await open_database(base)
        try:
            service = await MemoryService.open(db, base)
            yield Bench(service.repo, base, db.admin, service.vectors)
        finally:
            await db.close()


async def warm_query(service: MemoryService, question: str) -> None:
    """Put the vector a search of `question` embeds in the service's query cache: the question
    without its words about time (what the search matches), not the question as asked."""
    if service.vectors is not None:
        await service.vectors.query(parse_query(question).text)


def namespace_of(sample_id: str, one_namespace: bool, run_id: str = "") -> str:
    """The user a conversation is loaded under: its own, or with `one_namespace` the one every
    conversation shares (a user's store of many sessions); `run_id` keeps a run's users apart on a
    shared database."""
    sample = "all" if one_namespace else sample_id
    return f"locomo-{run_id}-{sample}" if run_id else f"locomo-{sample}"


def bench_principal(user: str) -> Principal:
    return Principal(user_id=user, agent_id=None, project_id=None, actor=f"bench:{user}", client="bench")


# --- numbers and tables ------------------------------------------------------------------------

def latency(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 95), 2),
            "p99_ms": round(percentile(ms, 99), 2), "max_ms": round(max(ms), 2),
            "mean_ms": round(statistics.fmean(ms), 2)}


def table(header: list[str], rows: list[list[Any]], first_width: int = 16) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
        return str(v)
    widths = [max(len(h), *(len(cell(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    widths[0] = max(widths[0], first_width)
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(header, widths, strict=True)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(cell(v).ljust(w) if i == 0 else cell(v).rjust(w)
                               for i, (v, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


def publish(results: dict[str, Any], out: Path, report: str) -> None:
    """Write a benchmark's `results` as JSON to `out`, then print its `report` and where they went."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(report)
    print(f"\nwrote {out}")


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": sys.version.split()[0]}


# --- LoCoMo --------------------------------------------------------------------------------------

def parse_when(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


@dataclass
class Conversation:
    sample_id: str
    sessions: list[tuple[int, datetime, list[dict[str, Any]]]]
    questions: list[dict[str, Any]]


def _years_later(when: datetime, years: int) -> datetime:
    try:
        return when.replace(year=when.year + years)
    except ValueError:  # 29 February
        return when.replace(year=when.year + years, day=28)


def rebased(conv: Conversation, now: datetime) -> Conversation:
    """The conversation moved by whole years, so that its last session lies within the past year,
    and the years its questions name moved with it. A shift by whole years keeps every date a
    question names true of the moved store ("What did Maria donate in December 2023?" still asks
    about the month its answer was said in, which a shift by days would move into the next one);
    a recency factor relative to now then sees ages of under a year plus the conversation's own."""
    last = conv.sessions[-1][1]
    years = now.year - last.year - (_years_later(last, now.year - last.year) > now)
    sessions = [(number, _years_later(when, years), turns) for number, when, turns in conv.sessions]
    questions = [{**q, "question": YEAR.sub(lambda m: str(int(m[1]) + years), q["question"])}
                 for q in conv.questions]
    return Conversation(conv.sample_id, sessions, questions)


def load_dataset(path: Path, limit: int | None) -> list[Conversation]:
    data = json.loads(path.read_text())
    out = []
    for item in data[:limit] if limit else data:
        conv = item["conversation"]
        sessions = sorted(
            (int(m[1]), parse_when(conv[f"{k}_date_time"]), conv[k])
            for k in conv if (m := SESSION.match(k)))
        questions = [q for q in item["qa"] if q.get("category") in CATEGORIES]
        out.append(Conversation(item.get("sample_id", f"conv-{len(out)}"), sessions, questions))
    return out


async def load_conversation(service: MemoryService, p: Principal, conv: Conversation,
                            write_times: list[float]) -> tuple[dict[str, Any], int]:
    """Write every turn; returns dia_id -> memory id and how many writes were duplicates."""
    ids: dict[str, Any] = {}
    duplicates = 0
    for number, when, turns in conv.sessions:
        for turn in turns:
            t = time.perf_counter()
            result = await service.write(
                p, turn_text(turn), kind="episode", occurred_at=when, source="locomo",
                metadata={"dia_id": turn["dia_id"], "conversation": conv.sample_id, "session": number})
            write_times.append(time.perf_counter() - t)
            ids[turn["dia_id"]] = result.memory.id
            duplicates += result.status == "duplicate"
    return ids, duplicates


async def run_variant(service: MemoryService, jobs: list[tuple[Principal, dict[str, Any], list[Any]]],
                      limit: int) -> tuple[list[dict[str, float]], list[float]]:
    scores, times = [], []
    for p, q, evidence in jobs:
        if service.vectors is not None:
            # The query embedding is timed on its own (bench/embedders.py); the search then
            # finds it in the service's query cache.
            await warm_query(service, q["question"])
        t = time.perf_counter()
        result = await service.search(p, q["question"], limit=limit)
        times.append(time.perf_counter() - t)
        scores.append({**score([h.id for h in result.hits], evidence), "category": q["category"],
                       "hits": len(result.hits), "ms": round(times[-1] * 1000, 2), "question": q["question"]})
    return scores, times


@dataclass
class Load:
    """One load of the conversations into a fresh database, every variant run over it."""

    jobs: int
    memories: int
    seconds: float
    write_times: list[float]
    dropped: dict[str, int]
    scores: dict[str, list[dict[str, Any]]]  # variant -> per-question scores
    times: dict[str, list[float]]  # variant -> search seconds
    about: dict[str, tuple[str, dict[str, Any]]]  # variant -> (about, effective settings)
    skipped: dict[str, str]


async def load_and_run(args: argparse.Namespace, convs: list[Conversation], chosen: list[Variant]) -> Load:
    run_id = uuid.uuid4().hex[:8]
    async with bench_database(args.database_url, "locomo") as bench:
        base = bench.settings
        variants, skipped = resolve_variants(chosen, base)
        if args.dates == "original" and any(getattr(s, "recency_floor", 1.0) < 1 for _, s in variants):
            print("note: --dates original puts every memory years in the past, where a bounded recency "
                  "factor is near its floor for all of them; --dates rebased shows what recency costs",
                  file=sys.stderr)
        loader = bench.service()
        jobs: list[tuple[Principal, dict[str, Any], list[Any]]] = []
        write_times: list[float] = []
        users: list[str] = []
        dropped = {"no_evidence": 0, "unknown_evidence_ids": 0, "duplicates": 0}
        started = time.perf_counter()
        now = datetime.now(UTC)
        for conv in convs:
            if args.dates == "rebased":
                conv = rebased(conv, now)
            # --one-namespace: every conversation in one user's store, as a user's memory holds many
            # sessions about many people; a question must find its conversation among all of them.
            user = namespace_of(conv.sample_id, args.one_namespace, run_id if args.database_url else "")
            if user not in users:
                users.append(user)
            p = bench_principal(user)
            ids, dups = await load_conversation(loader, p, conv, write_times)
            dropped["duplicates"] += dups
            for q in conv.questions:
                wanted = evidence_ids(q.get("evidence", []))
                known = [ids[d] for d in wanted if d in ids]
                dropped["unknown_evidence_ids"] += len(wanted) - len(known)
                if not known:
                    dropped["no_evidence"] += 1
                    continue
                jobs.append((p, q, known))
        load_s = time.perf_counter() - started
        await bench.analyze()
        print(f"loaded {len(write_times)} memories from {len(convs)} conversations in {load_s:.1f} s "
              f"({len(write_times) / load_s:.0f}/s); {len(jobs)} questions scored, {dropped['no_evidence']} without "
              f"usable evidence skipped, {dropped['unknown_evidence_ids']} unknown evidence ids, "
              f"{dropped['duplicates']} duplicate turns", file=sys.stderr)

        # Warm up caches and plans once, untimed.
        for p, q, _ in jobs[:200]:
            await loader.search(p, q["question"], limit=args.limit)

        scores: dict[str, list[dict[str, Any]]] = {}
        times: dict[str, list[float]] = {}
        for v, s in variants:
            t = time.perf_counter()
            scores[v.name], times[v.name] = await run_variant(bench.service(s), jobs, args.limit)
            print(f"variant {v.name}: {len(jobs)} searches in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        if args.database_url:
            await bench.drop_users(users)
    return Load(len(jobs), len(write_times), load_s, write_times, dropped, scores, times,
                {v.name: (v.about, v.effective(base)) for v, _ in variants}, skipped)


async def main_async(args: argparse.Namespace) -> None:
    convs = load_dataset(args.dataset, args.limit_conversations)
    chosen = choose_variants(args.variants, args.set)
    # Each load builds a new vector index (random levels) and new ids (which break ties between
    # equal scores), so the same code scores a little differently from one load to the next.
    loads = [await load_and_run(args, convs, chosen) for _ in range(args.loads)]
    first = loads[0]
    results: dict[str, Any] = {}
    for name, (about, effective) in first.about.items():
        scores = [r for load in loads for r in load.scores[name]]
        times = [t for load in loads for t in load.times[name]]
        by_cat = {str(c): mean_metrics([r for r in scores if r["category"] == c]) for c in CATEGORIES}
        results[name] = {
            "about": about, "settings": effective,
            "overall": mean_metrics(scores), "by_category": by_cat, "latency": latency(times),
            "empty_results": sum(r["hits"] == 0 for r in scores) // len(loads),
        }
        if len(loads) > 1:
            results[name]["per_load"] = [mean_metrics(load.scores[name]) for load in loads]
    write_times = [t for load in loads for t in load.write_times]
    report = {
        "benchmark": "locomo-retrieval", "dataset": str(args.dataset), "conversations": [c.sample_id for c in convs],
        "questions": first.jobs, "memories": first.memories, "limit": args.limit, "dates": args.dates,
        "loads": len(loads), "one_namespace": args.one_namespace,
        "load": {"seconds": round(statistics.fmean(load.seconds for load in loads), 2),
                 "write_latency": latency(write_times), **first.dropped},
        "categories": CATEGORIES, "variants": results, "skipped_variants": first.skipped,
        "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if args.details:
        report["per_question"] = {name: [r for load in loads for r in load.scores[name]] for name in results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))

    of_loads = f", mean of {len(loads)} loads" if len(loads) > 1 else ""
    print(f"\nLoCoMo retrieval, {first.jobs} questions, {first.memories} memories, limit {args.limit}, "
          f"dates {args.dates}{of_loads}{', one namespace' if args.one_namespace else ''}")
    rows = [[name, r["overall"]["n"], *(r["overall"][m] for m in METRICS), r["latency"]["p50_ms"],
             r["latency"]["p95_ms"], r["latency"]["max_ms"]] for name, r in results.items()]
    print(table(["variant", "n", *METRICS, "p50 ms", "p95 ms", "max ms"], rows))
    if len(loads) > 1:
        print("\nper load (R@10 / nDCG@10)")
        print(table(["variant", *(f"load {i + 1}" for i in range(len(loads)))],
                    [[name, *(f"{m['R@10']:.4f} / {m['nDCG@10']:.4f}" for m in r["per_load"])]
                     for name, r in results.items()]))
    for c, label in CATEGORIES.items():
        rows = [[name, r["by_category"][str(c)]["n"], *(r["by_category"][str(c)].get(m, 0.0) for m in METRICS)]
                for name, r in results.items()]
        print(f"\ncategory {c} ({label})")
        print(table(["variant", "n", *METRICS], rows))
    for name, reason in first.skipped.items():
        print(f"skipped {name}: {reason}")
    print(f"\nwrite latency p50 {report['load']['write_latency']['p50_ms']} ms, "
          f"p95 {report['load']['write_latency']['p95_ms']} ms; wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_variant_arguments(parser, DEFAULT_DATASET)
    parser.add_argument("--limit-conversations", type=int)
    parser.add_argument("--limit", type=int, default=10, help="search limit; MRR counts hits within it")
    parser.add_argument("--one-namespace", action="store_true",
                        help="write every conversation into one namespace (default: one each)")
    parser.add_argument("--dates", choices=("original", "rebased"), default="original",
                        help="rebased moves each conversation by whole years so its last session lies within the "
                        "past year, and the years its questions name with it")
    parser.add_argument("--database-url", help="use this PostgreSQL instead of a temporary embedded one")
    parser.add_argument("--details", action="store_true", help="keep per-question scores in the JSON")
    parser.add_argument("--loads", type=int, default=1,
                        help="load the conversations into this many fresh databases and report the mean (and each)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "locomo.json")
    args = parser.parse_args()
    if args.loads < 1:
        parser.error("--loads must be at least 1")
    if args.limit < 10:
        parser.error("--limit must be at least 10 (R@10, nDCG@10)")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
