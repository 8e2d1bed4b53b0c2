"""What `memory_write` shows of earlier versions, and what an agent acting on it gets.

Writes a knowledge-update set (bench/knowledge_update/*.jsonl) through `MemoryService.write` in
the order it happened, once per mode, each into its own user:
  none     nothing acts on `related` (the store as written);
  listed   an agent that writes again with `supersedes` naming every entry of `related` whose
           `earlier_version` is true;
  oracle   the same agent told the truth (supersedes only the entries that are earlier versions of
           the fact): the ceiling of what `related` allows.
Each write through the service is timed (embedding included; the agents' second writes not).
For each update (a later version of a changing fact) it reports whether `related` held an earlier
version and how many other memories it listed, and, per write, the memories it listed that are no
version of the new one; for the agents, the supersedes that named no earlier version (wrong).
Every `related` list is also judged by the decisions' guard (decisions/guard.py, with the graph's
stored mentions as the decisions read them) as if a model replaced every entry: of entries that
are no earlier version, the share it accepts (its false-accept bound against a model that replaces
everything), and of true earlier versions, the share it accepts (its recall with a model that
names exactly those).
Then it asks every question of the set (bench/knowledge_update.py's judge): newest-first and
newest@1 over changing facts, stable facts in the top 3.

With `--writer about` (or `about-key`) every write also passes who the memory is about (and the
attribute it states) in the writer's own words, varying per write, as bench/knowledge_update.py's
writer does: `related` then reads the subject off the graph's stored mentions where the writer
said it.

Usage: python bench/versions_related.py bench/knowledge_update/circle.jsonl [--modes none,listed,oracle]
       [--writer none|about|about-key] [--writer-words FILE]
       [--out bench/results/versions_related.json] [--misses 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from after_sql import save_capture, sql_stage
from knowledge_update import (
    WRITER_WORDS,
    WRITERS,
    Writer,
    judge,
    load,
    load_writer,
    parse_time,
    shift_of,
    summarize,
    user_of,
)
from locomo import REPO, bench_database, bench_principal, machine, table
from stats import percentile

from mcp_memory.decisions import guard

MODES = ("none", "listed", "oracle")


async def write_in_order(service: Any, user: str, records: list[dict[str, Any]], shift: timedelta,
                         mode: str, writer: Writer | None = None,
                         writer_mode: str = "none") -> tuple[dict[str, Any], dict[str, Any]]:
    memories = sorted(((r, m) for r in records for m in (*r["versions"], *r["distractors"])),
                      key=lambda rm: rm[1]["occurred_at"])
    key_of: dict[Any, str] = {}
    ids: dict[str, Any] = {}
    versions_of = {v["key"]: {x["key"] for x in r["versions"]} for r in records for v in r["versions"]}
    updates = found = unrelated_updates = unrelated_all = writes = superseded = wrong = 0
    flagged = flagged_right = 0
    guard_others = guard_others_kept = guard_versions = guard_versions_kept = 0
    guard_wrong: list[dict[str, Any]] = []
    content_of: dict[str, str] = {}
    misses: list[dict[str, Any]] = []
    wrong_flags: list[dict[str, Any]] = []
    write_ms: list[float] = []
    words = random.Random("writer:0")  # the writer's choice of words, per write in this order
    said: dict[str, dict[str, Any]] = {}  # what each write passed, for the agent's second write
    lists: list[tuple[set[str], set[str], list[tuple[str | None, bool]]]] = []  # for `shapes`
    for r, m in memories:
        p = bench_principal(user_of(user, r))
        said[m["key"]] = extra = writer.pick(r, m, words, writer_mode) if writer is not None else {}
        started = time.perf_counter()
        result = await service.write(p, m["content"], kind="fact", occurred_at=parse_time(m["occurred_at"]) + shift,
                                     **extra)
        write_ms.append((time.perf_counter() - started) * 1000)
        ids[m["key"]] = result.memory.id
        key_of[result.memory.id] = m["key"]
        mine = versions_of.get(m["key"], set())
        earlier = {v["key"] for v in r["versions"] if v["occurred_at"] < m["occurred_at"]} if mine else set()
        listed = [(key_of.get(x.id), x) for x in result.related]
        lists.append((mine, earlier, [(k, bool(getattr(x, "earlier_version", False))) for k, x in listed]))
        writes += 1
        unrelated_all += sum(k not in mine for k, _ in listed)
        for k, x in listed:
            if getattr(x, "earlier_version", None) is not None:
                flagged += bool(x.earlier_version)
                flagged_right += bool(x.earlier_version) and k in earlier
                if x.earlier_version and k not in earlier and len(wrong_flags) < 400:
                    wrong_flags.append({"new": m["content"], "flagged": x.snippet})
        if earlier:
            updates += 1
            hit = bool({k for k, _ in listed} & earlier)
            found += hit
            unrelated_updates += sum(k not in mine for k, _ in listed)
            if not hit and len(misses) < 400:
                misses.append({"new": m["content"], "earlier": [v["content"] for v in r["versions"]
                                                                if v["key"] in earlier],
                               "listed": [x.snippet for _, x in listed]})
        if listed:  # every candidate judged by the guard as if a model replaced them all (issue 27 item 11)
            texts = [(x.id, content_of[k]) for k, x in listed]
            # Whom each is about as the graph stored it, as the decisions' guard reads it.
            stored = await service.repo.subjects(p, [result.memory.id, *(x.id for _, x in listed)])
            verdict = await guard.check(m["content"], texts, service.vectors, among=texts, stored=stored,
                                        new_id=result.memory.id)
            for k, x in listed:
                accepted = x.id in verdict.allowed
                if k in earlier:
                    guard_versions, guard_versions_kept = guard_versions + 1, guard_versions_kept + accepted
                else:
                    guard_others, guard_others_kept = guard_others + 1, guard_others_kept + accepted
                    if accepted and len(guard_wrong) < 400:
                        guard_wrong.append({"new": m["content"], "accepted": content_of[k]})
        content_of[m["key"]] = m["content"]
        if mode == "none" or not listed:
            continue
        if mode == "oracle":
            chosen = [x.id for k, x in listed if k in earlier]
        else:
            chosen = [x.id for _, x in listed if getattr(x, "earlier_version", True)]
        if chosen:
            await service.write(p, m["content"], kind="fact", occurred_at=parse_time(m["occurred_at"]) + shift,
                                supersedes=chosen, **said[m["key"]])
            superseded += len(chosen)
            wrong += sum(key_of[c] not in earlier for c in chosen)
    quality = {"writes": writes, "updates": updates,
               "write_ms_p50": round(statistics.median(write_ms), 2),
               "write_ms_p95": round(percentile(write_ms, 95), 2),
               "earlier_version_listed": round(found / max(updates, 1), 4),
               "unrelated_per_update": round(unrelated_updates / max(updates, 1), 3),
               "unrelated_per_write": round(unrelated_all / max(writes, 1), 3),
               "flag_precision": round(flagged_right / flagged, 4) if flagged else None,
               "supersedes": superseded, "wrong_supersedes": wrong,
               "wrong_share": round(wrong / superseded, 4) if superseded else 0.0, "misses": misses,
               "wrong_flags": wrong_flags,
               "guard_accepts_others": round(guard_others_kept / guard_others, 4) if guard_others else None,
               "guard_accepts_versions": round(guard_versions_kept / guard_versions, 4) if guard_versions else None,
               "guard_wrong": guard_wrong, "shapes": shapes(lists)}
    return ids, quality


# Shorter lists than `related` shows, judged on the same writes (issue 30 item 2: an earlier
# version for >= 90% of updates with <= 2 others per write): what a cut would cost before making it.
SHAPES: dict[str, Any] = {
    "first 3": lambda lst: lst[:3],
    "first 2": lambda lst: lst[:2],
    "2 unless one is flagged": lambda lst: lst if any(f for _, f in lst) else lst[:2],
    "1 unless one is flagged": lambda lst: lst if any(f for _, f in lst) else lst[:1],
    "3 if one is flagged, else 2": lambda lst: lst[:3] if any(f for _, f in lst) else lst[:2],
}


def shapes(lists: list[tuple[set[str], set[str], list[tuple[str | None, bool]]]]) -> dict[str, dict[str, float]]:
    """For each of SHAPES: the share of updates whose list still holds an earlier version, and the
    others (no version of the new memory) per write."""
    out = {}
    for name, cut in SHAPES.items():
        found = others = updates = 0
        for mine, earlier, listed in lists:
            kept = cut(listed)
            others += sum(k not in mine for k, _ in kept)
            if earlier:
                updates += 1
                found += any(k in earlier for k, _ in kept)
        out[name] = {"earlier_version_listed": round(found / max(updates, 1), 4),
                     "unrelated_per_write": round(others / max(len(lists), 1), 3)}
    return out


async def main_async(args: argparse.Namespace) -> None:
    records = load(args.dataset)
    shift = shift_of(records)
    modes = args.modes.split(",")
    writer = load_writer(args.dataset, records, args.writer_words) if args.writer != "none" else None
    report: dict[str, Any] = {"benchmark": "versions-related", "dataset": str(args.dataset), "modes": {},
                              "writer": args.writer, "writer_words": str(args.writer_words),
                              "machine": machine()}
    async with bench_database(None, "vr") as bench:
        service = bench.service()
        for mode in modes:
            user = f"vr-{mode}"
            ids, quality = await write_in_order(service, user, records, shift, mode, writer, args.writer)
            await bench.analyze()
            rows = []
            for r in records:
                found = await service.search(bench_principal(user_of(user, r)), r["query"], limit=50)
                row = judge(r, [h.id for h in found.hits], ids)
                row["time_words"] = r.get("time_words")
                rows.append(row)
            if args.capture:  # the SQL stage's rows, for bench/after_sql.py run --store MODE
                save_capture(args.dataset.stem, ids,
                             [await sql_stage(service, bench_principal(user_of(user, r)), r) for r in records], mode)
            changing = [x for x in rows if x["type"] != "stable"]
            stable = [x for x in rows if x["type"] == "stable"]
            by_words = {str(w): summarize([x for x, r in zip(rows, records, strict=True)
                                           if x["type"] != "stable" and r.get("time_words") == w])
                        for w in (True, False)}
            report["modes"][mode] = {"related": quality, "overall": summarize(changing),
                                     "stable_top_3": summarize(stable).get("top_3"), "by_time_words": by_words,
                                     "per_entity": rows}
            print(f"{mode}: done", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\n{args.dataset.stem}: {len(records)} questions, written in order, writer {args.writer}")
    head = ["mode", "earlier listed", "others/update", "others/write", "flag precision", "guard others",
            "guard versions", "wrong supersedes",
            "newest-first", "newest@1", "stable top-3", "nf time words", "@1 time words", "nf plain", "@1 plain",
            "write p50 ms", "write p95 ms"]
    rows = []
    for mode, r in report["modes"].items():
        q, o, w = r["related"], r["overall"], r["by_time_words"]
        rows.append([mode, q["earlier_version_listed"], q["unrelated_per_update"], q["unrelated_per_write"],
                     q["flag_precision"], q["guard_accepts_others"], q["guard_accepts_versions"],
                     f"{q['wrong_supersedes']}/{q['supersedes']}", o["newest_first"],
                     o["newest_at_1"], r["stable_top_3"], w["True"].get("newest_first"), w["True"].get("newest_at_1"),
                     w["False"].get("newest_first"), w["False"].get("newest_at_1"),
                     q["write_ms_p50"], q["write_ms_p95"]])
    print(table(head, rows))
    for mode, r in report["modes"].items():
        cut = r["related"]["shapes"]
        print(f"{mode}, shorter lists (earlier version listed / others per write): "
              + "; ".join(f"{name} {v['earlier_version_listed']} / {v['unrelated_per_write']}"
                          for name, v in cut.items()))
    for mode, r in report["modes"].items():
        for miss in r["related"]["misses"][:args.misses]:
            print(f"  miss ({mode}): {miss['new']!r} earlier {miss['earlier']} listed {miss['listed']}")
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--misses", type=int, default=5, help="print this many `related` misses per mode")
    parser.add_argument("--capture", action="store_true",
                        help="keep each mode's SQL-stage rows for bench/after_sql.py run --store MODE")
    parser.add_argument("--writer", choices=WRITERS, default="none",
                        help="what each write passes besides its text, as bench/knowledge_update.py's --writer")
    parser.add_argument("--writer-words", type=Path, default=WRITER_WORDS,
                        help="the writer's words (bench/knowledge_update/writer_words_heldout.json: held out)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "versions_related.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
