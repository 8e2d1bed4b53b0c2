"""Decisions by a real model, and what our guard keeps of them (issue 27 item 11).

The knowledge-update dev sets (bench/knowledge_update/*.jsonl) are written in the order they
happened, each memory gets its decision job, and the queue is drained through an OpenAI-compatible
endpoint (a local model: /work/shared/models/serve_local_llm.py). Then, per set:
  decisions         jobs that asked the model (a memory with close older ones)
  right             UPDATE/DELETE of an earlier version of the same fact, as the model proposed
                    (before) and as applied (after the guard)
  wrong             memories marked replaced (UPDATE/DELETE/NONE) by one about something else
                    (another record's memory, or a distractor); wrong_pct: the share of
                    decisions with at least one such target
  missed            earlier versions still current at the end (of all versions that have a later one)
  suggested         replaces the guard kept as suggestions instead of applying
  stable@3          a stable fact's memory within the top 3 for its question
  s/decision        wall-clock seconds per model decision
"before" is what the model proposed in the same run, "after" what was applied; with --guard off
the store also evolves unguarded (then before = after). What leaves the machine: the decision
prompt (mcp_memory/decisions/prompting.py) with the sets' synthetic facts, to --base-url.

    python bench/decisions_model.py --sets life,circle --entities 6 \\
        --base-url http://127.0.0.1:8181/v1 --model local-qwen2.5-coder-1.5b-instruct-q4 --guard on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from decisions_mode import drain
from knowledge_update import judge, load, load_copy, parse_time, user_of
from locomo import REPO, bench_database, bench_principal


def subset(records: list[dict[str, Any]], entities: int) -> list[dict[str, Any]]:
    """Every record of the first `entities` entities (scopes for the household sets)."""
    chosen: list[str] = []
    for r in records:
        key = r.get("scope") or r["entity"]
        if key not in chosen:
            chosen.append(key)
    keep = set(chosen[:entities])
    return [r for r in records if (r.get("scope") or r["entity"]) in keep]


async def one_set(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    records = subset(load(path), args.entities)[: args.records or None]
    user = f"dm-{path.stem}"
    async with bench_database(None, "dm") as bench:
        settings = bench.settings.model_copy(update={
            "decisions_provider": "openai-compatible", "decisions_base_url": args.base_url,
            "decisions_model": args.model, "decisions_api_key": None, "decisions_per_minute": 0,
            "decisions_tokens_per_day": 0, "decisions_retry_base_s": 1, "decisions_max_attempts": 3,
            "decisions_timeout_s": args.timeout, "decisions_lease_s": args.timeout + 120,
            "decisions_guard": args.guard == "on"})
        bench.settings = settings
        as_of = parse_time(records[0]["as_of"])
        shift = timedelta(days=(datetime.now(UTC) - as_of).days)
        ids = await load_copy(bench, user, records, shift, 0, [], in_order=True)
        started = time.perf_counter()
        drained = await drain(bench, settings)
        elapsed = time.perf_counter() - started
        key_of = {v: k for k, v in ids.items()}
        record_of = {m["key"]: r for r in records for m in (*r["versions"], *r["distractors"])}
        order = {v["key"]: i for r in records for i, v in enumerate(r["versions"])}

        def earlier_version(new: str, old: str) -> bool:
            r = record_of[new]
            return record_of[old] is r and new in order and old in order and order[old] < order[new]

        rows = await bench.admin.fetch("SELECT memory_id, result FROM memory_jobs WHERE result IS NOT NULL")
        decisions = right_before = right_after = wrong_before = wrong_after = suggested = bad_before = bad_after = 0
        examples: list[str] = []
        for row in rows:
            res = row["result"] if isinstance(row["result"], dict) else json.loads(row["result"])
            if res.get("provider") == "none":
                continue
            decisions += 1
            new = key_of[row["memory_id"]]
            proposed = [key_of[UUID(t)] for t in res.get("proposed", res["targets"])]
            applied = [key_of[UUID(t)] for t in res["applied"]]
            if res["action"] == "NONE":  # the new memory linked to an old one: it is hidden
                applied = [key_of[UUID(t)] for t in res["targets"]] if res["applied"] else []
            suggested += len(res.get("suggested", {}))
            if res["action"] == "ADD":
                continue
            wrong_here = {"before": False, "after": False}
            for group, tally in ((proposed, "before"), (applied, "after")):
                for old in group:
                    ok = res["action"] in ("UPDATE", "DELETE") and earlier_version(new, old)
                    if tally == "before":
                        right_before += ok
                        wrong_before += not ok and not earlier_version(new, old)
                        wrong_here["before"] |= not ok and not earlier_version(new, old)
                    else:
                        right_after += ok
                        wrong_after += not ok and not earlier_version(new, old)
                        wrong_here["after"] |= not ok and not earlier_version(new, old)
                        if not ok and not earlier_version(new, old) and len(examples) < 5:
                            examples.append(f"{res['action']}: {record_of[old]['id']}:{old} by {new}")
            bad_before += wrong_here["before"]
            bad_after += wrong_here["after"]
        states = {r["id"]: r for r in await bench.admin.fetch(
            "SELECT id, superseded_by, deleted_at FROM memories WHERE id = ANY($1::uuid[])", list(ids.values()))}
        later = [v["key"] for r in records for v in r["versions"][:-1]]
        missed = sum(states[ids[k]]["superseded_by"] is None and states[ids[k]]["deleted_at"] is None for k in later)
        loader = bench.service(settings)
        stable = [r for r in records if r["type"] == "stable"]
        top3 = []
        for r in stable:
            hits = (await loader.search(bench_principal(user_of(user, r)), r["query"], limit=10)).hits
            top3.append(judge(r, [h.id for h in hits], ids)["top_3"])
    return {"set": path.stem, "records": len(records), "decisions": decisions, "guard": args.guard,
            "right_before": right_before, "right_after": right_after,
            "wrong_before": wrong_before, "wrong_after": wrong_after,
            "wrong_before_pct": round(100 * bad_before / max(decisions, 1), 1),
            "wrong_after_pct": round(100 * bad_after / max(decisions, 1), 1),
            "missed": missed, "updates": len(later), "suggested": suggested,
            "stable_top3": round(sum(top3) / len(top3), 3) if top3 else None,
            "s_per_decision": round(elapsed / max(decisions, 1), 2), "dead": drained["dead"],
            "model": args.model, "examples_after": examples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="life,circle")
    parser.add_argument("--entities", type=int, default=6, help="the first N entities (or households) of each set")
    parser.add_argument("--records", type=int, default=0, help="then only the first N of their records (0: all)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8181/v1")
    parser.add_argument("--model", default="local-qwen2.5-coder-1.5b-instruct-q4")
    parser.add_argument("--guard", choices=("on", "off"), default="on")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "decisions_model.json")
    args = parser.parse_args()
    results = []
    for name in args.sets.split(","):
        result = asyncio.run(one_set(REPO / "bench" / "knowledge_update" / f"{name}.jsonl", args))
        results.append(result)
        print(json.dumps(result), file=sys.stderr)
    cols = ["set", "records", "decisions", "guard", "right_before", "right_after", "wrong_before",
            "wrong_after", "wrong_before_pct",
            "wrong_after_pct", "missed", "updates", "suggested", "stable_top3", "s_per_decision"]
    print(" | ".join(cols))
    for r in results:
        print(" | ".join(str(r[c]) for c in cols))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else []
    args.out.write_text(json.dumps(previous + results, indent=1))


if __name__ == "__main__":
    main()
