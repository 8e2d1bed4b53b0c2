"""Knowledge-update benchmark: does search put the newest version of a changed fact first?

Loads bench/knowledge_update/dataset.jsonl (see generate.py there) through `MemoryService.write`
into one scope (records with a `scope`, assistant.jsonl's and workbench.jsonl's households, into
one each): every version and distractor is a memory with its `occurred_at`. For each entity's
question it runs `MemoryService.search` and reports, per variant (the table in bench/locomo.py):
  newest-first  the newest version ranks above every stale version of that entity (a stale version
                missing from the hits counts as below); the chance level of a ranking blind to
                time is the mean of 1 / number of versions;
  newest@1      the newest version is the top hit;
  MRR           reciprocal rank of the newest version (0 if not within the limit);
  found@10      the newest version is in the top 10;
and search latency. It also checks lexical parity: the share of entities whose every version
contains every word of the question (full text), so the ranking cannot be decided by wording.

Dates are shifted so that the dataset's `as_of` is now (`--dates rebased`, the default): a
recency factor relative to now then sees the ages the set was built with.

Each copy of the set is loaded for its own user (own ids, own insertion order) and the results of
`--repeat` copies are pooled, because stale and newest versions tie lexically by design and ties
fall to random ids.

Usage: python bench/knowledge_update.py [DATASET] [--variants a,b] [--set key=value ...] [--limit 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from decisions_mode import add_arguments as add_decision_arguments
from decisions_mode import drain as drain_decisions
from decisions_mode import settings_for as decision_settings
from locomo import (
    REPO,
    Bench,
    add_variant_arguments,
    bench_database,
    bench_principal,
    choose_variants,
    latency,
    machine,
    resolve_variants,
    table,
)

DEFAULT_DATASET = REPO / "bench" / "knowledge_update" / "dataset.jsonl"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def user_of(user: str, record: dict[str, Any]) -> str:
    """Records with a `scope` (assistant.py's and workbench.py's households: one user each) load
    under their own user."""
    return f"{user}-{record['scope']}" if "scope" in record else user


async def lexical_parity(bench: Bench, user: str, records: list[dict[str, Any]],
                         ids: dict[str, Any]) -> dict[str, float]:
    """Share of records whose versions all contain every query word (websearch AND), and whose
    versions all match at least one query word."""
    all_words = any_word = 0
    async with bench.admin.acquire() as conn:
        for r in records:
            keys = [ids[v["key"]] for v in r["versions"]]
            row = await conn.fetchrow(
                """SELECT bool_and(m.fts @@ websearch_to_tsquery('english', $2)) AS all_words,
                          bool_and(m.fts @@ regexp_replace(websearch_to_tsquery('english', $2)::text,
                                                           ' & ', ' | ', 'g')::tsquery) AS any_word
                   FROM memories m WHERE m.user_id = $1 AND m.id = ANY($3::uuid[])""",
                user_of(user, r), r["query"], keys)
            all_words += bool(row["all_words"])
            any_word += bool(row["any_word"])
    return {"all_query_words_in_every_version": round(all_words / len(records), 4),
            "some_query_word_in_every_version": round(any_word / len(records), 4)}


def judge(r: dict[str, Any], ranked: list[Any], ids: dict[str, Any]) -> dict[str, Any]:
    position = {mid: i + 1 for i, mid in reversed(list(enumerate(ranked)))}
    newest = position.get(ids[r["newest"]])
    stale = [position.get(ids[v["key"]]) for v in r["versions"] if v["key"] != r["newest"]]
    best_stale = min((s for s in stale if s is not None), default=None)
    return {
        "id": r["id"], "type": r["type"], "versions": len(r["versions"]), "newest_rank": newest,
        "best_stale_rank": best_stale,
        "newest_first": newest is not None and (best_stale is None or newest < best_stale),
        "newest_at_1": newest == 1,
        "rr": 0.0 if newest is None else 1 / newest,
        "found_at_10": newest is not None and newest <= 10,
        "top_3": newest is not None and newest <= 3,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    ranks = [r["newest_rank"] for r in rows if r["newest_rank"] is not None]
    return {
        "n": len(rows),
        "newest_first": round(statistics.fmean(r["newest_first"] for r in rows), 4),
        "newest_at_1": round(statistics.fmean(r["newest_at_1"] for r in rows), 4),
        "mrr": round(statistics.fmean(r["rr"] for r in rows), 4),
        "found_at_10": round(statistics.fmean(r["found_at_10"] for r in rows), 4),
        "top_3": round(statistics.fmean(r["top_3"] for r in rows), 4),
        "median_rank": statistics.median(ranks) if ranks else None,
        "not_found": len(rows) - len(ranks),
        "chance_newest_first": round(statistics.fmean(1 / r["versions"] for r in rows), 4),
    }


async def load_copy(bench: Bench, user: str, records: list[dict[str, Any]], shift: timedelta, seed: int,
                    write_times: list[float], in_order: bool = False) -> dict[str, Any]:
    """Write every version and distractor for one user, in a shuffled order (insertion order
    says nothing about age); returns key -> memory id."""
    memories = [(r, m) for r in records for m in (*r["versions"], *r["distractors"])]
    random.Random(seed).shuffle(memories)
    if in_order:  # decisions judge each memory against those that came before it, as they arrive
        memories.sort(key=lambda rm: rm[1]["occurred_at"])
    loader, ids = bench.service(), {}
    for r, m in memories:
        t = time.perf_counter()
        result = await loader.write(bench_principal(user_of(user, r)), m["content"], kind="fact",
                                    occurred_at=parse_time(m["occurred_at"]) + shift,
                                    metadata={"key": m["key"], "record": r["id"]}, source="knowledge-update")
        write_times.append(time.perf_counter() - t)
        if result.status != "created":
            raise SystemExit(f"{m['key']} duplicates another memory's text; regenerate the dataset")
        ids[m["key"]] = result.memory.id
    return ids


async def related_quality(bench: Bench, user: str, records: list[dict[str, Any]], shift: timedelta) -> dict[str, Any]:
    """Write every memory in the order it happened and judge `related` on each later version: does
    it list an earlier version of the same fact, and how many others does it list?"""
    memories = sorted(((r, m) for r in records for m in (*r["versions"], *r["distractors"])),
                      key=lambda rm: rm[1]["occurred_at"])
    service, ids = bench.service(), {}
    found = judged = unrelated = 0
    for r, m in memories:
        result = await service.write(bench_principal(user_of(user, r)), m["content"], kind="fact",
                                     occurred_at=parse_time(m["occurred_at"]) + shift)
        ids[result.memory.id] = m["key"]
        earlier = {v["key"] for v in r["versions"] if v["occurred_at"] < m["occurred_at"]}
        if m in r["versions"] and earlier:
            listed = {ids.get(x.id) for x in result.related}
            judged += 1
            found += bool(listed & earlier)
            unrelated += len(listed - {v["key"] for v in r["versions"]})
    return {"updates": judged, "earlier_version_listed": round(found / max(judged, 1), 4),
            "unrelated_per_update": round(unrelated / max(judged, 1), 3)}


async def main_async(args: argparse.Namespace) -> None:
    records = load(args.dataset)
    # A record of type "stable" has one version, written long ago: it must stay near the top.
    types = sorted({r["type"] for r in records})
    changing = [r for r in records if r["type"] != "stable"]
    chosen = choose_variants(args.variants, args.set)
    as_of = parse_time(records[0]["as_of"])
    shift = timedelta(days=(datetime.now(UTC) - as_of).days) if args.dates == "rebased" else timedelta(0)
    n_memories = sum(len(r["versions"]) + len(r["distractors"]) for r in records)
    run = "" if not args.database_url else f"-{uuid.uuid4().hex[:8]}"
    users = [f"knowledge-update{run}-{i}" for i in range(args.repeat)]

    async with bench_database(args.database_url, "ku") as bench:
        bench.settings = decision_settings(args, bench.settings)  # --decisions: a model decides on each write
        base = bench.settings
        variants, skipped = resolve_variants(chosen, base)
        # Stale and newest versions often tie lexically, and ties fall to random ids: each copy
        # is loaded separately (own ids, own insertion order) and the copies' results pooled.
        write_times: list[float] = []
        copies = [(u, await load_copy(bench, u, records, shift, args.seed + i, write_times,
                                      in_order=args.decisions != "none"))
                  for i, u in enumerate(users)]
        decisions = await drain_decisions(bench, base) if args.decisions != "none" else None
        await bench.analyze()
        parity = await lexical_parity(bench, users[0], records, copies[0][1])
        print(f"loaded {args.repeat} x {n_memories} memories ({len(records)} entities); lexical parity {parity}",
              file=sys.stderr)
        loader = bench.service()
        for r in records[:20]:  # warm-up, untimed
            await loader.search(bench_principal(user_of(users[0], r)), r["query"], limit=args.limit)

        results: dict[str, Any] = {}
        details: dict[str, list[dict[str, Any]]] = {}
        for v, s in variants:
            service = bench.service(s)
            rows, times = [], []
            for u, ids in copies:
                for r in records:
                    t = time.perf_counter()
                    found = await service.search(bench_principal(user_of(u, r)), r["query"], limit=args.limit)
                    times.append(time.perf_counter() - t)
                    rows.append(judge(r, [h.id for h in found.hits], ids))
            details[v.name] = rows
            by_versions = {str(n): summarize([x for x in rows if x["versions"] == n]) for n in (2, 3, 4)}
            by_type = {k: summarize([x for x in rows if x["type"] == k]) for k in types}
            results[v.name] = {"about": v.about, "settings": v.effective(base),
                               "overall": summarize([x for x in rows if x["type"] != "stable"]),
                               "by_versions": by_versions, "by_type": by_type, "latency": latency(times)}
        related = await related_quality(bench, users[0] + "-related", records, shift)
        if args.database_url:
            await bench.drop_users(sorted({user_of(u, r) for u in [*users, users[0] + "-related"] for r in records}))

    report = {
        "benchmark": "knowledge-update", "dataset": str(args.dataset), "entities": len(records),
        "memories": n_memories, "copies": args.repeat, "limit": args.limit, "dates": args.dates,
        "shift_days": shift.days,
        "lexical_parity": parity, "write_latency": latency(write_times), "variants": results, "related": related,
        "skipped_variants": skipped, "decisions": decisions, "machine": machine(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if args.details:
        report["per_entity"] = details
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))

    chance = next(iter(results.values()))["overall"]["chance_newest_first"] if results else None
    print(f"\nKnowledge update ({args.dataset.stem}: {len(changing)} changing facts, "
          f"{len(records) - len(changing)} stable), {len(records)} entities x {args.repeat} copies, "
          f"{n_memories} memories per copy, "
          f"limit {args.limit}, dates {args.dates} (chance newest-first {chance})")
    cols = ["newest_first", "newest_at_1", "mrr", "found_at_10", "median_rank", "not_found"]
    rows = [[name, *(r["overall"][c] for c in cols), r["latency"]["p50_ms"], r["latency"]["p95_ms"]]
            for name, r in results.items()]
    print(table(["variant", "newest-first", "newest@1", "MRR", "found@10", "median rank", "not found",
                 "p50 ms", "p95 ms"], rows))
    print("\nnewest-first by number of versions (chance) and by entity type; stable facts: share in the top 3")
    header = ["variant", *(f"{n} versions" for n in (2, 3, 4)), *types]

    def by_type(r: dict[str, Any], k: str, metric: str = "newest_first") -> Any:
        return r["by_type"][k]["top_3" if k == "stable" and metric == "newest_first" else metric]

    rows = [[name, *(r["by_versions"][str(n)]["newest_first"] for n in (2, 3, 4)),
             *(by_type(r, k) for k in types)]
            for name, r in results.items()]
    if results:
        first = next(iter(results.values()))
        rows.append(["(chance)", *(first["by_versions"][str(n)]["chance_newest_first"] for n in (2, 3, 4)),
                     *("" if k == "stable" else by_type(first, k, "chance_newest_first") for k in types)])
    print(table(header, rows))
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    print(f"\nrelated on write (default settings): {related}")
    if decisions:
        print(f"decisions: {decisions}")
    print(f"lexical parity: {parity}; wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_variant_arguments(parser, DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=50, help="search limit; ranks beyond it count as not found")
    parser.add_argument("--dates", choices=("original", "rebased"), default="rebased",
                        help="rebased (default) shifts every date so the dataset's as_of is today")
    parser.add_argument("--repeat", type=int, default=3, help="independently loaded copies whose results are pooled")
    parser.add_argument("--seed", type=int, default=7, help="insertion order shuffle (copy i uses seed + i)")
    parser.add_argument("--database-url", help="use this PostgreSQL instead of a temporary embedded one")
    parser.add_argument("--details", action="store_true", help="keep per-entity ranks in the JSON")
    add_decision_arguments(parser)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "knowledge_update.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
