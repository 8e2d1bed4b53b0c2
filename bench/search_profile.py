"""Where a search's and a write's time goes, in process (no MCP, no pipes).

Loads LoCoMo conversations through `MemoryService.write`, runs ANALYZE, then times
`service.search` whole and each stage of `retrieval.search` as the service runs it (query vectors
cached; `SearchStages` wraps what the search calls, so the stages are the search's own): BEGIN
and its settings, the narrowing estimate, the question's names looked up among the known entities,
building the statement, the statement (and, from EXPLAIN ANALYZE on the same statement, how much
of it is planning), the keyed facts, the hop, the summaries' sources, the Python stage after SQL,
the keyed order and the result's serialization; then the writes of bench/side_by_side.py (turns as
episodes, one call each, into an empty scope) by stage (embedding, insert, neighbours, the `related`
list), with each stage's mean over the slowest quarter of the writes beside the rest's. Each stage's
p50 / p95 is printed as a table and written as JSON.

Usage: python bench/search_profile.py [DATASET] [--limit-conversations 1] [--searches 300]
                                      [--writes 100] [--out bench/results/search_profile.json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).parent))
from locomo import (  # noqa: E402
    DEFAULT_DATASET,
    bench_database,
    bench_principal,
    load_conversation,
    load_dataset,
    turn_text,
    warm_query,
)
from stats import summary  # noqa: E402

from mcp_memory.models import Principal  # noqa: E402
from mcp_memory.retrieval.statement import SearchStatement  # noqa: E402
from mcp_memory.server.results import compact  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

T = TypeVar("T")


class Stages:
    """Seconds per named stage, appended in call order."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)

    async def timed(self, name: str, work: Awaitable[T]) -> T:
        t = time.perf_counter()
        out = await work
        self.times[name].append(time.perf_counter() - t)
        return out

    def run(self, name: str, work: Callable[[], T]) -> T:
        t = time.perf_counter()
        out = work()
        self.times[name].append(time.perf_counter() - t)
        return out


class SearchStages:
    """Each stage of `retrieval.search` timed as the service runs it, by wrapping the functions the
    search module calls for the run (so the profile cannot fall out of step with the search): the
    transaction's first round trip (BEGIN and its settings), the narrowing estimate, the lookup of
    the question's names among the known entities, their speakers' shares and conversations, the
    planner's estimates of the question's words, building the statement (once, or twice when the
    names are known), the statement itself, the keyed facts, the hop, the summaries' sources, the
    Python stage after SQL and the keyed order. The last statement run is kept for EXPLAIN."""

    CALLS = ("narrowing", "named_in", "spoken_shares", "told_apart", "word_rows", "facts_named", "one_hop",
             "sources_of", "after_sql", "keyed_first")

    def __init__(self, service: MemoryService, stages: Stages) -> None:
        self.stages, self.last = stages, None
        module = importlib.import_module("mcp_memory.retrieval.search")
        for name in self.CALLS:
            setattr(module, name, self._timed(getattr(module, name), name))
        build = module.build_search

        def built(*args: Any, **kwargs: Any) -> Any:
            statement = stages.run("build statement", lambda: build(*args, **kwargs))
            self.last = statement
            return statement
        module.build_search = built
        reading = service.repo.reading

        @asynccontextmanager
        async def timed_reading(p: Principal, **gucs: str) -> AsyncIterator[Any]:
            t = time.perf_counter()
            async with reading(p, **gucs) as conn:
                stages.times["BEGIN + settings"].append(time.perf_counter() - t)
                yield _Timed(conn, self, stages)
        service.repo.reading = timed_reading  # type: ignore[method-assign]

    def _timed(self, work: Callable[..., Awaitable[T]], name: str) -> Callable[..., Awaitable[T]]:
        async def timed(*args: Any, **kwargs: Any) -> T:
            return await self.stages.timed(name, work(*args, **kwargs))
        return timed


class _Timed:
    """A connection whose run of the search's statement is timed as "statement"."""

    def __init__(self, conn: Any, search: SearchStages, stages: Stages) -> None:
        self._conn, self._search, self._stages = conn, search, stages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    async def fetch(self, sql: str, *args: Any) -> Any:
        last = self._search.last
        if last is not None and sql == last.sql:
            return await self._stages.timed("statement", self._conn.fetch(sql, *args))
        return await self._conn.fetch(sql, *args)


async def planning(service: MemoryService, p: Principal, statement: SearchStatement) -> tuple[float, float]:
    """(planning ms, execution ms) as EXPLAIN ANALYZE reports them for a search's statement."""
    async with service.repo.transaction(p, **statement.gucs) as conn:
        text = await conn.fetchval(f"EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) {statement.sql}", *statement.args)
    plan = json.loads(text)[0]
    return plan["Planning Time"], plan["Execution Time"]


class WriteStages:
    """Each write's time by stage, taken by wrapping the service's parts for the run: its vector
    (with the masked companion a note about the user embeds beside it), the insert's transaction,
    the nearest memories (and, beside the insert, the earlier versions among them), the `related`
    list after the insert. The neighbours run beside the insert, so the stages overlap."""

    PARTS = (("vectors", "document", "embed (write's batch)"), ("repo", "insert", "insert transaction"),
             ("versions", "neighbours", "neighbours (beside the insert)"), ("versions", "listed", "related list"))

    def __init__(self, service: MemoryService) -> None:
        self.current: dict[str, float] = {}
        self.writes: list[dict[str, float]] = []
        for owner, method, name in self.PARTS:
            part = getattr(service, owner)
            if part is not None:
                setattr(part, method, self._timed(getattr(part, method), name))

    def _timed(self, work: Callable[..., Awaitable[T]], name: str) -> Callable[..., Awaitable[T]]:
        async def timed(*args: Any, **kwargs: Any) -> T:
            t = time.perf_counter()
            try:
                return await work(*args, **kwargs)
            finally:
                self.current[name] = self.current.get(name, 0.0) + time.perf_counter() - t
        return timed

    async def write(self, service: MemoryService, p: Principal, turn: dict[str, Any], when: Any) -> None:
        self.current = {}
        t = time.perf_counter()
        await service.write(p, turn_text(turn), kind="episode", occurred_at=when,
                            metadata={"dia_id": turn["dia_id"]})
        self.current["service.write"] = time.perf_counter() - t
        self.writes.append(self.current)

    def summary(self) -> dict[str, Any]:
        """Each stage's p50 / p95 over all writes, and its mean over the slowest quarter of the
        writes beside its mean over the rest: where the tail's time goes."""
        names = [name for _, _, name in self.PARTS] + ["service.write"]
        order = sorted(self.writes, key=lambda w: w["service.write"])
        cut = len(order) * 3 // 4
        rest, slow = order[:cut], order[cut:]

        def mean_ms(writes: list[dict[str, float]], name: str) -> float:
            return round(1000 * sum(w.get(name, 0.0) for w in writes) / max(len(writes), 1), 2)

        return {name: {**summary([w.get(name, 0.0) for w in self.writes]),
                       "rest_mean_ms": mean_ms(rest, name), "slow_quarter_mean_ms": mean_ms(slow, name)}
                for name in names}


async def serialized(service: MemoryService, jobs: list[tuple[Principal, str]]) -> list[float]:
    """Seconds to turn each search's result into the tool's text and structured content."""
    times = []
    for p, question in jobs:
        result = await service.search(p, question, limit=10)
        t = time.perf_counter()
        compact(result), result.model_dump(mode="json")
        times.append(time.perf_counter() - t)
    return times


async def run(args: argparse.Namespace) -> dict[str, Any]:
    # One conversation more than the searches use: the writes', whose texts are then new to the
    # embedding cache (a turn written twice is embedded once).
    *convs, fresh = load_dataset(args.dataset, args.limit_conversations + 1)
    async with bench_database(None, "profile") as bench:
        service = bench.service()
        jobs: list[tuple[Principal, str]] = []
        for conv in convs:
            p = bench_principal(f"profile-{conv.sample_id}")
            await load_conversation(service, p, conv, [])
            jobs += [(p, q["question"]) for q in conv.questions]
        await bench.analyze()
        jobs = jobs[:args.searches]
        for p, question in jobs:  # untimed: vectors cached, statements prepared
            await warm_query(service, question)
            await service.search(p, question, limit=10)
        search, whole = Stages(), Stages()
        for p, question in jobs:
            await whole.timed("service.search", service.search(p, question, limit=10))
        serialize = await serialized(service, jobs)
        timed = SearchStages(service, search)
        statements = []
        for p, question in jobs:
            await whole.timed("service.search, stages timed", service.search(p, question, limit=10))
            statements.append((p, timed.last))
        plans = [await planning(service, p, statement) for p, statement in statements[:50] if statement]
        search.times["  of which planning (EXPLAIN)"] = [plan / 1000 for plan, _ in plans]
        search.times["  of which execution (EXPLAIN)"] = [execute / 1000 for _, execute in plans]
        search.times["serialize (text + structured)"] = serialize
        search.times |= whole.times
        # The writes of bench/side_by_side.py: a conversation's turns as episodes, one call each,
        # into a scope of their own (empty at first, as the side-by-side store is). No background
        # ANALYZE here (the server runs one every 50 writes at first: statistics.py).
        writes = WriteStages(service)
        p = bench_principal("profile-writes")
        turns = [(when, t) for _, when, session in fresh.sessions for t in session]
        for when, turn in turns[:args.writes]:
            await writes.write(service, p, turn, when)
    return {"search": {k: summary(v) for k, v in search.times.items()}, "write": writes.summary(),
            "searches": len(jobs), "writes": args.writes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit-conversations", type=int, default=1)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--writes", type=int, default=300,
                        help="turns of the next conversation written one by one (at most its length)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/search_profile.json"))
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(f"{'stage':<36}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    print("-- search")
    for name, s in results["search"].items():
        print(f"{name:<36}{s['p50_ms']:>10.2f}{s['p95_ms']:>10.2f}{s['n']:>6}")
    print(f"-- write{'':<29}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}{'mean, fastest 3/4':>19}{'slowest 1/4':>13}")
    for name, s in results["write"].items():
        print(f"{name:<36}{s['p50_ms']:>10.2f}{s['p95_ms']:>10.2f}{s['n']:>6}{s['rest_mean_ms']:>19.2f}"
              f"{s['slow_quarter_mean_ms']:>13.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
