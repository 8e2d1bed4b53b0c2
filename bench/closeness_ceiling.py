"""How far closeness by the embedder can go on people with many facts, computed offline from a
knowledge-update set and the local model.

  newest@1 ceiling  every earlier version superseded, so a person's live memories are the newest
                    version of each changing fact, their stable facts and their notes: the share
                    of questions about a changing fact whose answer is the live memory closest to
                    the question, whole or with the person masked on both sides (`masked_pair`,
                    as the present-tense rule compares them). No ordering of versions passes it
                    while the order within a person is closeness to the question.
  related@k         every memory about the same subject (`same_subject`) there was when an update
                    was written, ranked by closeness to the update with the subject masked: the
                    share of updates with an earlier version among the first k (`related` lists 3
                    of them, then the nearest other memory).

Meant for sets shaped like one user's store (circle, crm: many people with many facts each;
assistant, workbench: one user per scope, the scope taken as the person); on sets of one fact
per subject (life, ops, dataset) a "person's" memories are mostly other subjects' distractors.

Usage: python bench/closeness_ceiling.py circle crm assistant workbench
       [--out bench/results/closeness_ceiling.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from after_sql import STORE, CachedVectors
from knowledge_update import load
from locomo import REPO, machine, table

from mcp_memory.retrieval.versions import masked_pair, same_subject

SETS = REPO / "bench" / "knowledge_update"
KS = (1, 2, 3)


async def embed(vectors: CachedVectors, texts: list[str]) -> np.ndarray:
    found = await vectors.documents_or_none(texts)
    assert found is not None  # the file-cached local embedder always answers
    return np.asarray(found, dtype=np.float32)


def person(record: dict[str, Any]) -> tuple[Any, str]:
    return record.get("scope"), record["entity"]


async def newest_at_1(records: list[dict[str, Any]], vectors: CachedVectors) -> dict[str, float]:
    live: dict[tuple[Any, str], list[str]] = defaultdict(list)
    for r in records:
        live[person(r)].append(max(r["versions"], key=lambda v: v["occurred_at"])["content"])
        live[person(r)] += [d["content"] for d in r["distractors"]]
    closest_whole = masked = asked = 0
    for r in records:
        if r["type"] == "stable" or len(r["versions"]) < 2:
            continue
        memories = list(dict.fromkeys(live[person(r)]))
        answer = memories.index(max(r["versions"], key=lambda v: v["occurred_at"])["content"])
        whole = await embed(vectors, [r["query"], *memories])
        pairs = [masked_pair(r["query"], m)[:2] for m in memories]
        hidden = await embed(vectors, [t for pair in pairs for t in pair])
        asked += 1
        closest_whole += int(np.argmax(whole[1:] @ whole[0])) == answer
        masked += int(np.argmax([hidden[2 * k] @ hidden[2 * k + 1] for k in range(len(pairs))])) == answer
    return {"questions": asked, "whole": round(closest_whole / max(asked, 1), 3),
            "masked": round(masked / max(asked, 1), 3)}


async def related_at_k(records: list[dict[str, Any]], vectors: CachedVectors) -> dict[str, float]:
    written = sorted(((r, m) for r in records for m in (*r["versions"], *r["distractors"])),
                     key=lambda rm: rm[1]["occurred_at"])
    seen: dict[tuple[Any, str], list[str]] = defaultdict(list)
    found = dict.fromkeys(KS, 0)
    updates = 0
    for r, m in written:
        earlier = {v["content"] for v in r["versions"] if v["occurred_at"] < m["occurred_at"]} \
            if m in r["versions"] else set()
        own = [t for t in dict.fromkeys(seen[person(r)]) if t != m["content"]]
        if r.get("scope") is None:  # a store of many people: only what names the same subject
            own = [t for t in own if same_subject(m["content"], t)]
        seen[person(r)].append(m["content"])
        if not earlier:
            continue
        updates += 1
        if not own:
            continue
        pairs = [masked_pair(m["content"], t)[:2] for t in own]
        hidden = await embed(vectors, [t for pair in pairs for t in pair])
        order = np.argsort([-(hidden[2 * k] @ hidden[2 * k + 1]) for k in range(len(own))])
        for k in KS:
            found[k] += any(own[i] in earlier for i in order[:k])
    return {"updates": updates, **{f"at_{k}": round(found[k] / max(updates, 1), 3) for k in KS}}


async def main_async(args: argparse.Namespace) -> None:
    STORE.mkdir(parents=True, exist_ok=True)
    vectors = CachedVectors(STORE / "vectors.pkl")  # after_sql.py's cache of masked texts
    report: dict[str, Any] = {"benchmark": "closeness-ceiling", "model": vectors.embedder.model,
                              "machine": machine(), "sets": {}}
    for name in args.sets:
        records = load(SETS / f"{name}.jsonl")
        report["sets"][name] = {"newest_at_1": await newest_at_1(records, vectors),
                                "related": await related_at_k(records, vectors)}
    vectors.save()
    rows = [[name, s["newest_at_1"]["questions"], s["newest_at_1"]["whole"], s["newest_at_1"]["masked"],
             s["related"]["updates"], *(s["related"][f"at_{k}"] for k in KS)]
            for name, s in report["sets"].items()]
    print(table(["set", "questions", "newest@1 whole", "newest@1 masked", "updates",
                 *(f"related@{k} masked" for k in KS)], rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "closeness_ceiling.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
