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
        --guard on --guard-floor 0.45 --record results/decisions
    python3 guard_replay.py results/decisions --sets ops,dataset --floor 0.45 --out results/replay.json
    python3 guard_replay.py results/decisions --sets ops,dataset --floor 0.45 --against results/replay.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import uuid
from pathlib import Path
from typing import Any

from locomo import REPO, table

from mcp_memory.decisions import guard
from mcp_memory.embeddings.local import make_local_embedder

CACHE = REPO / "bench" / "results" / "guard_replay_vectors.pkl"  # text -> vector, MiniLM


class CachedVectors:
    """The guard's `Embeds` over the local embedder, keeping every vector for the next replay."""

    def __init__(self) -> None:
        self.embedder = make_local_embedder()
        self.vectors: dict[str, list[float]] = pickle.loads(CACHE.read_bytes()) if CACHE.exists() else {}
        self.added = 0

    async def documents_or_none(self, texts: list[str], batch: int = 32) -> list[list[float]] | None:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        for start in range(0, len(missing), 64):
            chunk = missing[start:start + 64]
            self.vectors.update(zip(chunk, await self.embedder.embed_documents(chunk), strict=True))
            self.added += len(chunk)
        return [self.vectors[t] for t in texts]

    def save(self) -> None:
        if self.added:
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            CACHE.write_bytes(pickle.dumps(self.vectors))


async def replay(decisions: list[dict[str, Any]], vectors: CachedVectors, floor: float) -> list[dict[str, Any]]:
    """Each decision's targets the guard applies now, by what they are."""
    out = []
    for d in decisions:
        if d["action"] == "ADD" or not d["candidates"]:
            out.append({"key": d["key"], "wrong": [], "right": []})
            continue
        ids = [uuid.UUID(int=i) for i in range(len(d["candidates"]))]
        targets = [(i, c["text"]) for i, c in zip(ids, d["candidates"], strict=True)]
        verdict = await guard.check(d["text"], targets, vectors, floor=floor, among=targets)
        applied = [d["candidates"][ids.index(i)] for i in verdict.allowed]
        out.append({"key": d["key"], "wrong": [c["key"] for c in applied if c["is"] == "wrong"],
                    "right": [c["key"] for c in applied if c["is"] == "right"]})
    return out


def summary(name: str, judged: list[dict[str, Any]]) -> list[Any]:
    bad = sum(bool(j["wrong"]) for j in judged)
    return [name, len(judged), f"{100 * bad / max(len(judged), 1):.1f}", sum(len(j["wrong"]) for j in judged),
            sum(len(j["right"]) for j in judged)]


def changes(name: str, decisions: list[dict[str, Any]], now: list[dict[str, Any]],
            before: list[dict[str, Any]]) -> list[str]:
    text = {c["key"]: c["text"] for d in decisions for c in d["candidates"]}
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
    vectors = CachedVectors()
    await vectors.embedder.load()
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
        if args.show:
            text = {c["key"]: c["text"] for d in decisions for c in d["candidates"]}
            for d, j in zip(decisions, judged, strict=True):
                for key in j["wrong"]:
                    print(f"{name} wrong {text[key]!r}\n    by {d['text']!r}")
        if name in before:
            print("\n".join(changes(name, decisions, judged, before[name])))
    vectors.save()
    print(table(["set", "decisions", "wrong %", "wrong targets", "right applied"], rows, first_width=10))
    if args.out:
        args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
