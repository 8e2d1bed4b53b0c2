"""The decisions guard judged again, offline, over decisions a model made (issue 27 item 11).

bench/decisions_model.py --record DIR writes every decision of a run with the texts its model was
shown and what each candidate is by the set's records. This replays them through the guard as the
code is now (decisions/guard.py `check`, every candidate a target, as the scripted adversary and
Qwen2.5-Coder-1.5B propose) with the local embedder, and prints per set: decisions, the share with
a wrong target applied, wrong targets, right targets applied. With the adversary's records of the
very run it replays, it gives that run's figures to the target (the store after each decision
is the recorded one, so a reading that changes verdicts is measured before the database run that
confirms it). --show prints the wrong targets applied, --against an earlier replay's JSON prints
what changed. Read the misses here before changing a rule or the floor.

    cd bench && python3 decisions_model.py --sets ops,dataset --entities 0 --model-kind adversarial \\
        --guard on --guard-floor 0.5 --record results/decisions
    python3 guard_replay.py results/decisions --sets ops,dataset --floor 0.5 --out results/replay.json
    python3 guard_replay.py results/decisions --sets ops,dataset --floor 0.5 --against results/replay.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from after_sql import CachedVectors
from locomo import REPO, table

from mcp_memory.decisions import guard

CACHE = REPO / "bench" / "results" / "guard_replay_vectors.pkl"  # text -> vector, the local embedder


async def applied(d: dict[str, Any], vectors: guard.Embeds, floor: float) -> list[dict[str, Any]]:
    """The candidates of one recorded decision the guard applies now, each one proposed."""
    if d["action"] == "ADD" or not d["candidates"]:
        return []
    ids = [uuid.UUID(int=i) for i in range(len(d["candidates"]))]
    targets = [(i, c["text"]) for i, c in zip(ids, d["candidates"], strict=True)]
    verdict = await guard.check(d["text"], targets, vectors, floor=floor, among=targets)
    return [d["candidates"][ids.index(i)] for i in verdict.allowed]


async def replay(decisions: list[dict[str, Any]], vectors: guard.Embeds, floor: float) -> list[dict[str, Any]]:
    """Each decision's targets the guard applies now, by what they are."""
    out = []
    for d in decisions:
        kept = await applied(d, vectors, floor)
        out.append({"key": d["key"], "wrong": [c["key"] for c in kept if c["is"] == "wrong"],
                    "right": [c["key"] for c in kept if c["is"] == "right"]})
    return out


def summary(name: str, judged: list[dict[str, Any]]) -> list[Any]:
    bad = sum(bool(j["wrong"]) for j in judged)
    return [name, len(judged), f"{100 * bad / max(len(judged), 1):.1f}", sum(len(j["wrong"]) for j in judged),
            sum(len(j["right"]) for j in judged)]


def changes(name: str, decisions: list[dict[str, Any]], text: dict[str, str], now: list[dict[str, Any]],
            before: list[dict[str, Any]]) -> list[str]:
    lines = []
    for d, a, b in zip(decisions, before, now, strict=True):
        for kind in ("wrong", "right"):
            for key in sorted(set(a[kind]) ^ set(b[kind])):
                sign = "+" if key in b[kind] else "-"
                lines.append(f"{name} {sign}{kind} {text[key]!r}\n    by {d['text']!r}")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, help="the directory decisions_model.py --record wrote")
    parser.add_argument("--sets", default="circle,crm,life,ops,dataset,assistant,workbench")
    parser.add_argument("--floor", type=float, default=guard.LOCAL_MODEL_FLOOR)
    parser.add_argument("--show", action="store_true", help="print the wrong targets applied")
    parser.add_argument("--against", type=Path, help="an earlier --out of the same records: print what changed")
    parser.add_argument("--out", type=Path, help="write each decision's applied targets here")
    args = parser.parse_args()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    vectors = CachedVectors(CACHE)
    before = json.loads(args.against.read_text()) if args.against else {}
    rows, result = [], {}
    for name in args.sets.split(","):
        path = args.records / f"{name}_{args.floor:.2f}.json"
        if not path.exists():
            print(f"{path}: not recorded (decisions_model.py --record {args.records} --guard-floor {args.floor})")
            continue
        decisions = json.loads(path.read_text())
        judged = result[name] = await replay(decisions, vectors, args.floor)
        rows.append(summary(name, judged))
        text = {c["key"]: c["text"] for d in decisions for c in d["candidates"]}
        if args.show:
            for d, j in zip(decisions, judged, strict=True):
                for key in j["wrong"]:
                    print(f"{name} wrong {text[key]!r}\n    by {d['text']!r}")
        if name in before and (changed := changes(name, decisions, text, judged, before[name])):
            print("\n".join(changed))
    vectors.save()
    print(table(["set", "decisions", "wrong %", "wrong targets", "right applied"], rows, first_width=10))
    if args.out:
        args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
