"""What the decisions did to a knowledge-update set, for bench/decisions_model.py: each decision
job's proposed and applied targets judged against the set's records (an earlier version of the same
record is right, anything else is wrong), the versions still current at the end, and search after
the decisions as bench/knowledge_update.py's judge computes it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from knowledge_update import judge, summarize, user_of
from locomo import Bench, bench_principal

EXAMPLES = 20  # of each kind of miss kept in the JSON
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_AGAIN = re.compile(r"\(noted again\)")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(_AGAIN.sub("", text.lower())))


def restated(new: str, old: str) -> bool:
    """`new` says every word `old` said (the sets' "(noted again)" repeats): marking `old` replaced
    by it hides no fact, so it is counted apart from the wrong targets."""
    return _words(old) <= _words(new)


@dataclass
class Truth:
    """Which memory is an earlier version of which, by the set's records."""

    records: list[dict[str, Any]]
    ids: dict[str, UUID]
    record_of: dict[str, dict[str, Any]] = field(init=False)
    text_of: dict[str, str] = field(init=False)
    order: dict[str, int] = field(init=False)
    keys_of_text: dict[str, list[str]] = field(init=False)
    fact_of: dict[str, tuple[str, str]] = field(init=False)

    def __post_init__(self) -> None:
        self.record_of = {m["key"]: r for r in self.records for m in (*r["versions"], *r["distractors"])}
        self.order = {v["key"]: i for r in self.records for i, v in enumerate(r["versions"])}
        self.text_of = {m["key"]: m["content"] for r in self.records for m in (*r["versions"], *r["distractors"])}
        # A fact that two records' memories state, one value at a time ("our cheapest region"),
        # with when each was written (bench/knowledge_update/varied.py's `single` decoys).
        self.fact_of = {m["key"]: (m["fact"], m["occurred_at"]) for r in self.records
                        for m in r["distractors"] if "fact" in m}
        self.keys_of_text = {}
        for key, text in self.text_of.items():  # households of one set may share a text
            self.keys_of_text.setdefault(text, []).append(key)

    def earlier(self, new: str, old: str) -> bool:
        """`old` (a key) is an earlier version of the same record as `new`."""
        return (self.record_of[old] is self.record_of[new] and new in self.order and old in self.order
                and self.order[old] < self.order[new])

    def superseded(self, new: str, old: str) -> bool:
        """`old` (a key) states an earlier value of the one fact `new` states, in another record
        ("Cost report: eu-west-1 is currently our cheapest region" / "... us-east-1 ..."): marking
        it replaced is what keeps the store true now, so it is counted apart from the wrong targets."""
        mine, theirs = self.fact_of.get(new), self.fact_of.get(old)
        return mine is not None and theirs is not None and mine[0] == theirs[0] and theirs[1] < mine[1]

    def kind(self, new: str, old: str) -> str:
        """What `old` (a key) is to `new` marked replaced: right (an earlier version), superseded,
        restated (counted apart: no fact hidden) or wrong."""
        return ("right" if self.earlier(new, old) else "superseded" if self.superseded(new, old)
                else "restated" if restated(self.text_of[new], self.text_of[old]) else "wrong")

    def earlier_text(self, new: str, old: str) -> bool:
        """The same, by the memories' texts (what a scripted endpoint sees): a text that two
        households share is an earlier version if it is one in either."""
        return any(self.earlier(a, b) for a in self.keys_of_text.get(new, ()) for b in self.keys_of_text.get(old, ()))


def _result(row: Any) -> dict[str, Any]:
    return row["result"] if isinstance(row["result"], dict) else json.loads(row["result"])


async def decisions(bench: Bench, truth: Truth) -> dict[str, Any]:
    """Right, wrong and refused targets, before (proposed) and after the guard (applied)."""
    key_of = {v: k for k, v in truth.ids.items()}
    rows = await bench.admin.fetch("SELECT memory_id, result FROM memory_jobs WHERE result IS NOT NULL")
    t = {"decisions": 0, "right_before": 0, "right_after": 0, "wrong_before": 0, "wrong_after": 0,
         "bad_before": 0, "bad_after": 0, "suggested": 0, "earlier_shown": 0, "earlier_in_set": 0,
         "wrong_after_same_entity": 0, "restated_after": 0, "superseded_before": 0, "superseded_after": 0}
    examples: dict[str, list[str]] = {"wrong_after": [], "right_refused": []}
    for row in rows:
        res = _result(row)
        new = key_of[row["memory_id"]]
        record = truth.record_of[new]
        earlier_here = [v["key"] for v in record["versions"][:truth.order[new]]] if new in truth.order else []
        t["earlier_in_set"] += bool(earlier_here)
        if res.get("provider") == "none":
            continue
        t["decisions"] += 1
        shown = {key_of[UUID(c)] for c in res.get("candidates", [])}
        t["earlier_shown"] += bool(shown & set(earlier_here))
        proposed = [key_of[UUID(x)] for x in res.get("proposed", res["targets"])]
        applied = [key_of[UUID(x)] for x in res["applied"]]
        if res["action"] == "NONE":  # the new memory linked to an old one: it is hidden
            applied = [key_of[UUID(x)] for x in res["targets"]] if res["applied"] else []
        t["suggested"] += len(res.get("suggested", {}))
        if res["action"] == "ADD":
            continue
        replaces = res["action"] in ("UPDATE", "DELETE")
        for group, when in ((proposed, "before"), (applied, "after")):
            superseded = [old for old in group if truth.kind(new, old) == "superseded"]
            wrong = [old for old in group if truth.kind(new, old) == "wrong"]
            t[f"superseded_{when}"] += len(superseded)
            if when == "after":
                t["restated_after"] += sum(not truth.earlier(new, old) for old in group) - len(wrong) - len(superseded)
            t[f"right_{when}"] += sum(replaces for old in group if truth.earlier(new, old))
            t[f"wrong_{when}"] += len(wrong)
            t[f"bad_{when}"] += bool(wrong)
            if when == "after":
                t["wrong_after_same_entity"] += sum(truth.record_of[old]["entity"] == record["entity"] for old in wrong)
                examples["wrong_after"] += [f"{res['action']} {old} {truth.text_of[old]!r} by {new} "
                                            f"{truth.text_of[new]!r}" for old in wrong]
        for old in set(proposed) - set(applied):
            if replaces and truth.earlier(new, old):
                why = res.get("skipped", {}).get(str(truth.ids[old]), "?")
                examples["right_refused"].append(f"{old} {truth.text_of[old]!r} by {new} {truth.text_of[new]!r}: {why}")
    n = max(t["decisions"], 1)
    return t | {"wrong_before_pct": round(100 * t["bad_before"] / n, 1),
                "wrong_after_pct": round(100 * t["bad_after"] / n, 1),
                "examples": {k: v[:EXAMPLES] for k, v in examples.items()},
                "right_refused_n": len(examples["right_refused"])}


async def shown(bench: Bench, truth: Truth) -> list[dict[str, Any]]:
    """Every decision a model made, with the texts it was shown and what each candidate is by the
    set's records (`Truth.kind`), for bench/guard_replay.py to judge again offline."""
    key_of = {v: k for k, v in truth.ids.items()}
    rows = await bench.admin.fetch("SELECT memory_id, result FROM memory_jobs WHERE result IS NOT NULL "
                                   "ORDER BY created_at, id")
    out = []
    for row in rows:
        res = _result(row)
        if res.get("provider") == "none":
            continue
        new = key_of[row["memory_id"]]
        candidates = [{"key": old, "text": truth.text_of[old], "is": truth.kind(new, old)}
                      for old in (key_of[UUID(c)] for c in res.get("candidates", []))]
        out.append({"key": new, "text": truth.text_of[new], "action": res["action"], "candidates": candidates,
                    "applied": [key_of[UUID(x)] for x in res["applied"]]})
    return out


async def outcome(bench: Bench, truth: Truth, user: str) -> dict[str, Any]:
    """Earlier versions still current at the end, and search over the store the decisions left:
    newest-first and newest@1 over the changing facts (limit 50, as bench/knowledge_update.py),
    stable facts within the top 3."""
    ids = truth.ids
    states = {r["id"]: r for r in await bench.admin.fetch(
        "SELECT id, superseded_by, deleted_at FROM memories WHERE id = ANY($1::uuid[])", list(ids.values()))}
    later = [v["key"] for r in truth.records for v in r["versions"][:-1]]
    missed = sum(states[ids[k]]["superseded_by"] is None and states[ids[k]]["deleted_at"] is None for k in later)
    newest_gone = sum(states[ids[r["newest"]]]["superseded_by"] is not None
                      or states[ids[r["newest"]]]["deleted_at"] is not None for r in truth.records)
    service = bench.service()
    rows = []
    for r in truth.records:
        hits = (await service.search(bench_principal(user_of(user, r)), r["query"], limit=50)).hits
        rows.append(judge(r, [h.id for h in hits], ids))
    changing = summarize([x for x in rows if x["type"] != "stable"])
    stable = [x["top_3"] for x in rows if x["type"] == "stable"]
    return {"missed": missed, "updates": len(later), "newest_replaced": newest_gone,
            "newest_first": changing.get("newest_first"), "newest_at_1": changing.get("newest_at_1"),
            "changing": changing.get("n", 0),
            "stable_top3": round(sum(stable) / len(stable), 3) if stable else None, "stable": len(stable)}
