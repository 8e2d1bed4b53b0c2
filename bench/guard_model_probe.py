"""Can the deciding model itself tell a version from a distractor? (issue 27 item 11)

The guard's remaining wrong replaces on `ops` and `crm` pass every reading of the words ("Team
Grebe currently meets its vendor at 9:30." replaced by "Team Grebe moved lunch to 9:45.").
This asks the model, for every target the guard applies in a recorded run (guard_replay.py's
pairs, the right and the wrong ones), one narrow question: does the newer note make the older one
out of date? Its answer is read as a score, not a word: log P(yes) - log P(no) from the
endpoint's top logprobs, so a model that leans to one answer for everything (the 1.5B model says
No to nearly any such question) can still separate the two kinds by how far it leans. Printed
per set: the AUC of that score (right above wrong; 0.5 is chance) beside the guard's own masked
cosine on the same pairs, and what a cut at each score would keep.

    cd bench && python3 decisions_model.py --sets ops,crm --entities 0 --model-kind adversarial \\
        --guard on --guard-floor 0.5 --record results/decisions
    python3 guard_model_probe.py results/decisions --sets ops,crm --base-url http://127.0.0.1:8181/v1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from pathlib import Path
from typing import Any

from after_sql import CachedVectors
from guard_replay import CACHE, applied
from locomo import table
from openai import AsyncOpenAI

from mcp_memory.decisions import guard, second_look

CUTS = (0.0, 1.0, 2.0)


async def applied_pairs(decisions: list[dict[str, Any]], vectors: guard.Embeds, floor: float) -> list[dict[str, Any]]:
    """Every target the guard applies when each candidate is proposed (guard_replay.applied), with
    its masked cosine."""
    pairs = []
    for d in decisions:
        kept = await applied(d, vectors, floor)
        if not kept:
            continue
        judged = dict(zip((c["key"] for c in d["candidates"]),
                          await guard.judge(d["text"], [c["text"] for c in d["candidates"]], vectors, floor),
                          strict=True))
        pairs += [{"new": d["text"], "old": c["text"], "is": c["is"], "cosine": judged[c["key"]].similarity or 1.0}
                  for c in kept if c["is"] in ("right", "wrong")]
    return pairs


class Asker:
    """The model's log-odds of Yes, each pair asked once (answers kept in a JSONL file)."""

    def __init__(self, base_url: str, cache: Path) -> None:
        self.client = AsyncOpenAI(base_url=base_url, api_key="local")
        self.cache = cache
        self.known: dict[tuple[str, str], float] = {}
        if cache.exists():
            for line in cache.read_text().splitlines():
                r = json.loads(line)
                self.known[r["new"], r["old"]] = r["score"]

    async def score(self, new: str, old: str) -> float:
        if (new, old) not in self.known:
            # The second look's own question, bare: without its worked examples.
            r = await self.client.chat.completions.create(
                model="local", temperature=0, max_tokens=1, logprobs=True, top_logprobs=10,
                messages=[{"role": "system", "content": second_look.SYSTEM},
                          {"role": "user", "content": second_look.question(new, old)}])
            content = r.choices[0].logprobs.content if r.choices[0].logprobs else None
            if not content:
                raise SystemExit("the endpoint returned no logprobs: this probe needs them")
            tops = content[0].top_logprobs
            yes = sum(math.exp(t.logprob) for t in tops if t.token.strip().lower() == "yes")
            no = sum(math.exp(t.logprob) for t in tops if t.token.strip().lower() == "no")
            self.known[new, old] = math.log(max(yes, 1e-9)) - math.log(max(no, 1e-9))
            with self.cache.open("a") as f:
                f.write(json.dumps({"new": new, "old": old, "score": self.known[new, old]}) + "\n")
        return self.known[new, old]


def auc(right: list[float], wrong: list[float]) -> float:
    """How often a right pair scores above a wrong one (ties half)."""
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return wins / max(len(right) * len(wrong), 1)


def row(name: str, pairs: list[dict[str, Any]]) -> list[Any]:
    """A set's line: its pairs, both AUCs, and the wrong / right pairs each cut keeps."""
    right = [p for p in pairs if p["is"] == "right"]
    wrong = [p for p in pairs if p["is"] == "wrong"]

    def kept(kind: list[dict[str, Any]], cut: float) -> str:
        return f"{sum(p['model'] >= cut for p in kind)}/{len(kind)}"

    return [name, len(right), len(wrong),
            *(f"{auc([p[score] for p in right], [p[score] for p in wrong]):.3f}" for score in ("model", "cosine")),
            *(f"{kept(wrong, c)} | {kept(right, c)}" for c in CUTS)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, help="the directory decisions_model.py --record wrote")
    parser.add_argument("--sets", default="ops,crm")
    parser.add_argument("--floor", type=float, default=guard.LOCAL_MODEL_FLOOR)
    parser.add_argument("--base-url", default="http://127.0.0.1:8181/v1")
    parser.add_argument("--cache", type=Path, default=Path("results/guard_model_probe_answers.jsonl"))
    parser.add_argument("--out", type=Path, default=Path("results/guard_model_probe.json"))
    args = parser.parse_args()
    vectors = CachedVectors(CACHE)
    asker = Asker(args.base_url, args.cache)
    rows, result = [], {}
    for name in args.sets.split(","):
        decisions = json.loads((args.records / f"{name}_{args.floor:.2f}.json").read_text())
        pairs = await applied_pairs(decisions, vectors, args.floor)
        for p in pairs:
            p["model"] = await asker.score(p["new"], p["old"])
        rows.append(row(name, pairs))
        result[name] = pairs
    vectors.save()
    print(table(["set", "right", "wrong", "AUC model", "AUC cosine", *(f"kept at {c:+.0f} (w | r)" for c in CUTS)],
                rows, first_width=6))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
