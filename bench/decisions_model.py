"""Decisions by a real model, and what our guard keeps of them (issue 27 item 11, issue 30 item 5).

The knowledge-update dev sets (bench/knowledge_update/*.jsonl) are written in the order they
happened, each memory gets its decision job, and the queue is drained through an OpenAI-compatible
endpoint: a local model (/work/shared/models/serve_local_llm.py, --model-kind endpoint) or one of
bench/scripted_models.py's served in-process (--model-kind adversarial: UPDATE of every candidate,
the guard's worst case; oracle: UPDATE of exactly the earlier versions, the guard's recall). Then,
per set:
  decisions         jobs that asked the model (a memory with close older ones)
  shown             of those whose memory has an earlier version, the share whose candidates held one
  right             UPDATE/DELETE of an earlier version of the same fact, as the model proposed
                    (before) and as applied (after the guard)
  wrong             memories marked replaced (UPDATE/DELETE/NONE) by one about something else
                    (another record's memory, or a distractor); wrong %: the share of decisions
                    with at least one such target
  restated          applied targets that are no earlier version but whose every word the new memory
                    says again (the sets' "(noted again)" repeats): no fact hidden, so not wrong
  superseded        applied targets of another record that state an earlier value of the one fact
                    the new memory states ("Cost report: X is currently our cheapest region", "Team
                    Upland moved lunch to X": the `fact` of varied.py's decoys): the store's current
                    truth, so not wrong
  refused right     earlier versions the model replaced that the guard did not apply
  missed            earlier versions still current at the end (of all versions that have a later one)
  suggested         replaces the guard kept as suggestions instead of applying
  newest-first      over the changing facts after the decisions: the newest version ranks above
                    every stale one (bench/knowledge_update.py's judge, limit 50); newest@1: it is
                    the top hit
  stable@3          a stable fact's memory within the top 3 for its question
  s/decision        wall-clock seconds of the drain per model decision (with --cache, per answer
                    asked of the model, not replayed: see replayed / asked); elapsed: the whole set
"before" is what the model proposed in the same run, "after" what was applied; with --guard off
the store also evolves unguarded (then before = after). What leaves the machine with
--model-kind endpoint: the decision prompt (mcp_memory/decisions/prompting.py) with the sets'
synthetic facts, to --base-url; the scripted kinds stay on loopback.

    python bench/decisions_model.py --sets circle,crm --entities 4 --guard on \\
        --base-url http://127.0.0.1:8181/v1 --model local-qwen2.5-coder-1.5b-instruct-q4
    python bench/decisions_model.py --sets circle,crm --entities 0 --model-kind adversarial --guard on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from decisions_mode import drain
from decisions_tally import Truth, decisions, outcome, shown
from knowledge_update import load, load_copy, shift_of
from locomo import REPO, bench_database, machine, table
from scripted_models import Recorded, adversarial, oracle, scripted, serving

from mcp_memory.decisions import second_look
from mcp_memory.decisions.guard import LOCAL_MODEL_FLOOR, floor_for


def subset(records: list[dict[str, Any]], entities: int) -> list[dict[str, Any]]:
    """Every record of the first `entities` entities (scopes for the household sets); 0: all."""
    chosen: list[str] = []
    for r in records:
        key = r.get("scope") or r["entity"]
        if key not in chosen:
            chosen.append(key)
    keep = set(chosen[:entities] if entities else chosen)
    return [r for r in records if (r.get("scope") or r["entity"]) in keep]


def per_call(seconds: float, calls: int) -> float | None:
    return round(seconds / calls, 2) if calls else None


async def one_set(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    records = subset(load(path), args.entities)[: args.records or None]
    truth = Truth(records, {})
    user = f"dm-{path.stem}"
    policy = {"adversarial": adversarial, "oracle": oracle(truth.earlier_text)}.get(args.model_kind)
    model = args.model if policy is None else f"scripted-{args.model_kind}"
    recorded = Recorded(args.base_url, args.cache) if policy is None and args.cache else None
    looks = Recorded(args.second_look_url, args.cache or REPO / "bench" / "results" / "second_look_cache.jsonl") \
        if policy and args.second_look_url else None
    respond = scripted(policy, looks) if policy else recorded
    async with bench_database(None, "dm") as bench:
        with serving(respond) if respond else nullcontext(args.base_url) as url:
            settings = bench.settings.model_copy(update={
                "decisions_provider": "openai-compatible", "decisions_base_url": url,
                "decisions_model": model, "decisions_api_key": None, "decisions_per_minute": 0,
                "decisions_tokens_per_day": 0, "decisions_retry_base_s": 1, "decisions_max_attempts": 3,
                "decisions_timeout_s": args.timeout, "decisions_lease_s": args.timeout + 120,
                "decisions_guard": args.guard == "on", "decisions_guard_floor": args.guard_floor,
                "decisions_second_look": {"on": True, "off": False}.get(args.second_look)})
            bench.settings = settings
            truth.ids.update(await load_copy(bench, user, records, shift_of(records), 0, [], in_order=True))
            drain_started = time.perf_counter()
            drained = await drain(bench, settings)
            drain_s = time.perf_counter() - drain_started
        tally = await decisions(bench, truth)
        after = await outcome(bench, truth, user)
        if args.record:  # for bench/guard_replay.py
            args.record.mkdir(parents=True, exist_ok=True)
            (args.record / f"{path.stem}_{floor_for(bench.settings):.2f}.json").write_text(
                json.dumps(await shown(bench, truth)))
    return {"set": path.stem, "records": len(records), "entities": args.entities or "all",
            "guard": args.guard if args.guard == "off" else f"{floor_for(bench.settings):.2f}",
            "second_look": second_look.enabled(bench.settings) and args.guard == "on",
            "looks_asked": looks.misses if looks else None, "looks_replayed": looks.hits if looks else None,
            "model": model, **tally, **after, "dead": drained["dead"],
            "replayed": recorded.hits if recorded else 0, "asked": recorded.misses if recorded else None,
            "s_per_decision": per_call(drain_s, recorded.misses if recorded else tally["decisions"]),
            "drain_s": round(drain_s, 1),
            "elapsed_s": round(time.perf_counter() - started, 1),
            "load_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


COLUMNS = [("set", "set"), ("guard", "guard"), ("records", "records"), ("decisions", "decisions"),
           ("shown", None), ("right_before", "right b"), ("right_after", "right a"),
           ("wrong_before", "wrong b"), ("wrong_after", "wrong a"), ("wrong_before_pct", "wrong% b"),
           ("wrong_after_pct", "wrong% a"), ("restated_after", "restated"), ("superseded_after", "superseded"),
           ("right_refused_n", "refused right"), ("missed", "missed"),
           ("updates", "updates"), ("suggested", "suggested"), ("newest_first", "newest-first"),
           ("newest_at_1", "newest@1"), ("stable_top3", "stable@3"), ("s_per_decision", "s/decision"),
           ("elapsed_s", "elapsed s")]


def cell(r: dict[str, Any], key: str) -> Any:
    if key == "shown":
        return f"{r['earlier_shown']}/{r['earlier_in_set']}"
    return "" if r[key] is None else r[key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="circle,crm")
    parser.add_argument("--entities", type=int, default=4,
                        help="the first N entities (or households) of each set; 0: the whole set")
    parser.add_argument("--records", type=int, default=0, help="then only the first N of their records (0: all)")
    parser.add_argument("--model-kind", choices=("endpoint", "adversarial", "oracle"), default="endpoint",
                        help="endpoint: --base-url's model; adversarial / oracle: scripted, served in-process")
    parser.add_argument("--base-url", default="http://127.0.0.1:8181/v1")
    parser.add_argument("--model", default="local-qwen2.5-coder-1.5b-instruct-q4")
    parser.add_argument("--cache", type=Path, help="with --model-kind endpoint: replay the answers recorded "
                        "in this JSON-lines file for the very same prompts, and record the others")
    parser.add_argument("--guard", choices=("on", "off"), default="on")
    parser.add_argument("--guard-floor", type=float, default=None,
                        help="MCP_MEMORY_DECISIONS_GUARD_FLOOR: the masked similarity of the same attribute "
                        f"(unset: the server's default, {LOCAL_MODEL_FLOOR:.2f} for these endpoints on loopback)")
    parser.add_argument("--second-look", choices=("auto", "on", "off"), default="auto",
                        help="MCP_MEMORY_DECISIONS_SECOND_LOOK (auto: the server's default, on for these "
                        "endpoints on loopback)")
    parser.add_argument("--second-look-url", help="with a scripted --model-kind: a real model's endpoint that "
                        "takes the second looks (recorded in --cache, else results/second_look_cache.jsonl); "
                        "without it the scripted model answers them Yes")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--record", type=Path, help="write every decision with the texts it was shown to "
                        "RECORD/<set>_<floor>.json, for bench/guard_replay.py")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "decisions_model.json",
                        help="the runs are appended to the list this file holds")
    args = parser.parse_args()
    started = time.perf_counter()
    results = []
    for name in args.sets.split(","):
        result = asyncio.run(one_set(REPO / "bench" / "knowledge_update" / f"{name}.jsonl", args))
        results.append(result)
        print(json.dumps(result), file=sys.stderr)
    looked = " (second looks by " + args.second_look_url + ")" if args.second_look_url else ""
    print(f"\nDecisions by {results[0]['model']}, guard {args.guard}, second look {args.second_look}{looked}, "
          f"{args.entities or 'all'} entities per set (b: proposed, a: applied after the guard)")
    print(table([h or k for k, h in COLUMNS], [[cell(r, k) for k, _ in COLUMNS] for r in results], first_width=8))
    print(f"elapsed {time.perf_counter() - started:.0f} s; load average (1 min) {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cpus")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else []
    run = {"command": " ".join(sys.argv), "machine": machine()}
    args.out.write_text(json.dumps(previous + [r | run for r in results], indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
