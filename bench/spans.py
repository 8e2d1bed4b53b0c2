"""Questions about a span of time: does search put the value that held then first?

Loads a knowledge-update set (bench/knowledge_update/SET.jsonl) as bench/knowledge_update.py does,
its dates rebased so the set's `as_of` is today, and for each changed fact asks, of every version
but the newest, what the attribute was in a calendar month that lies wholly between that version and
the next (a version followed within the same month has no such month and is left out), in one of
`FORMS` taken in turn: the month or a day of it, before or after the words asked. It reports:
  then@1   the version that held in that month is the top hit;
  then@3   it is among the first three;
  newest@1 the newest version is the top hit instead (what a question about now would want);
  MRR      reciprocal rank of the version that held then;
and each search's time (the question new to the embedder);
per writer (`--writers none,about-key`: nobody passing anything, or the writer saying who each
memory is about and which attribute it states, in its own words varying per write), and writes
JSON. One copy of the set per writer.

`--bound value` asks instead what held before a version's value or after it ("What was Ana's manager
before Marco?"), the value a word of that version no other version of the fact holds; then@1 is then
the version next to it that way.

Usage: python bench/spans.py [SET.jsonl ...] [--writers none,about-key] [--bound month|value] [--limit 10]
                             [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from knowledge_update import load, load_copy, load_writer, parse_time, shift_of, user_of
from locomo import REPO, bench_database, bench_principal, latency, machine, table

SETS = [REPO / "bench" / "knowledge_update" / f"{name}.jsonl"
        for name in ("workbench", "assistant", "crm", "circle", "life", "ops", "dataset")]


def _month_after(moment: datetime) -> datetime:
    """The first moment of the calendar month after the one `moment` falls in."""
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


# The question's shapes, taken in turn: {e} the entity, {a} the attribute, {m} "March 2025", {d} "14 March
# 2025", a day in the middle of that month.
FORMS = ("What was {e}'s {a} in {m}?", "In {m}, what was {e}'s {a}?", "What {a} did {e} have on {d}?",
         "Back in {m}, what was {e}'s {a}?", "Which {a} did {e} have during {m}?")


def questions(record: dict[str, Any], shift: timedelta, first_form: int = 0) -> list[tuple[str, str]]:
    """(question, the key of the version that held in the month it names), one per version but the
    newest that is followed by a whole calendar month before the next, the forms taken in turn from
    `first_form`."""
    versions = sorted(record["versions"], key=lambda v: v["occurred_at"])
    asked = []
    for version, following in zip(versions, versions[1:], strict=False):
        start = _month_after(parse_time(version["occurred_at"]) + shift)
        if _month_after(start) > parse_time(following["occurred_at"]) + shift:
            continue
        month = f"{calendar.month_name[start.month]} {start.year}"
        form = FORMS[(first_form + len(asked)) % len(FORMS)]
        asked.append((form.format(e=record["entity"], a=record["attribute"], m=month, d=f"14 {month}"),
                      version["key"]))
    return asked


# `--bound value`: the question places what it asks before or after a version's value instead of a date,
# {v} a word of that version no other version of the fact holds. Before a version: the one before it.
VALUE_FORMS = {"before": ("What was {e}'s {a} before {v}?", "Which {a} did {e} have before {v}?"),
               "after": ("What was {e}'s {a} after {v}?", "Which {a} did {e} have after {v}?")}
WORD = re.compile(r"[\w][\w'.:-]*\w|\w")


def value_word(version: dict[str, Any], record: dict[str, Any]) -> str | None:
    """A word naming `version`'s value: the first written with a capital (not the text's first word)
    or with a digit that no other version of `record` holds, nor the entity's name; None if none."""
    def plain(word: str) -> str:
        return word.lower().removesuffix("'s")

    others = {plain(w) for v in record["versions"] if v is not version for w in WORD.findall(v["content"])}
    others |= {plain(w) for w in WORD.findall(record["entity"])}
    words = WORD.findall(version["content"])
    for word in words[1:]:
        if (word[:1].isupper() or any(c.isdigit() for c in word)) and plain(word) not in others:
            return word.removesuffix("'s")
    return None


def value_questions(record: dict[str, Any], first_form: int = 0) -> list[tuple[str, str]]:
    """(question, the key of the version it asks for): of each two versions in a row, what held
    before the later one's value and what held after the earlier one's, the forms taken in turn."""
    versions = sorted(record["versions"], key=lambda v: v["occurred_at"])
    asked = []
    for version, following in zip(versions, versions[1:], strict=False):
        for kind, named, answer in (("before", following, version), ("after", version, following)):
            word = value_word(named, record)
            if word is None:
                continue
            forms = VALUE_FORMS[kind]
            form = forms[(first_form + len(asked)) % len(forms)]
            asked.append((form.format(e=record["entity"], a=record["attribute"], v=word), answer["key"]))
    return asked


async def run_set(path: Path, writers: list[str], limit: int, bound: str = "month") -> dict[str, Any]:
    records = [r for r in load(path) if r["type"] != "stable"]
    shift = shift_of(records)
    asked = [(r, q, key) for i, r in enumerate(records)
             for q, key in (questions(r, shift, i) if bound == "month" else value_questions(r, i))]
    out: dict[str, Any] = {"set": path.stem, "records": len(records), "questions": len(asked)}
    for writer_mode in writers:
        async with bench_database(None, "spans") as bench:
            writer = load_writer(path, records) if writer_mode != "none" else None
            user = f"spans-{writer_mode}"
            ids = await load_copy(bench, user, records, shift, 7, [], writer=writer, mode=writer_mode)
            await bench.analyze()
            service = bench.service()
            rows, times = [], []
            for r, question, key in asked:
                started = time.perf_counter()
                hits = (await service.search(bench_principal(user_of(user, r)), question, limit=limit)).hits
                times.append(time.perf_counter() - started)
                ranked = [h.id for h in hits]
                then = ranked.index(ids[key]) + 1 if ids[key] in ranked else None
                rows.append({"record": r["id"], "question": question, "rank": then,
                             "newest_at_1": bool(ranked) and ranked[0] == ids[r["newest"]]})
        n = len(rows) or 1
        out[writer_mode] = {
            "then_at_1": round(sum(x["rank"] == 1 for x in rows) / n, 3),
            "then_at_3": round(sum(x["rank"] is not None and x["rank"] <= 3 for x in rows) / n, 3),
            "newest_at_1": round(sum(x["newest_at_1"] for x in rows) / n, 3),
            "mrr": round(sum(1 / x["rank"] for x in rows if x["rank"]) / n, 3),
            "latency": latency(times),
            "per_question": rows,
        }
    return out


async def main_async(args: argparse.Namespace) -> None:
    writers = args.writers.split(",")
    results = [await run_set(path, writers, args.limit, args.bound) for path in args.sets]
    print(table(["set", "questions", "writer", "then@1", "then@3", "newest@1", "MRR", "p50 ms", "p95 ms"],
                [[r["set"], r["questions"], w, r[w]["then_at_1"], r[w]["then_at_3"], r[w]["newest_at_1"], r[w]["mrr"],
                  r[w]["latency"]["p50_ms"], r[w]["latency"]["p95_ms"]] for r in results for w in writers]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "spans", "limit": args.limit, "sets": results, "machine": machine(),
                                    "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}, indent=2,
                                   default=str))
    print(f"wrote {args.out}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", type=Path, default=SETS)
    parser.add_argument("--writers", default="none,about-key", help="none, about-key or both, comma-separated")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--bound", choices=("month", "value"), default="month",
                        help="month: a calendar month between two versions (default); value: before the later "
                             "version's value or after the earlier one's ('before Lisbon')")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "spans.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
