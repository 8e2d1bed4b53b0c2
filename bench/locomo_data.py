"""The LoCoMo dataset as both retrieval benchmarks read it (bench/locomo.py through the server,
bench/embedders.py model by model): paths, turn text, evidence ids and the metrics. No project
imports, so a model measured in its own process carries nothing else in memory."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "locomo" / "locomo10-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METRICS = ("R@5", "R@10", "nDCG@10", "MRR")
SESSION = re.compile(r"session_(\d+)$")
_DIA = re.compile(r"D:?(\d+):0*(\d+)$")


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def evidence_ids(raw: list[str]) -> list[str]:
    """Normalise the dataset's few malformed ids ('D8:6; D9:17', 'D:11:26', 'D30:05')."""
    out = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = _DIA.match(part.strip())
            if m:
                out.append(f"D{int(m[1])}:{int(m[2])}")
    return list(dict.fromkeys(out))


def score(ranked: list[Any], evidence: list[Any]) -> dict[str, float]:
    """Metrics for one question: `ranked` is the result list (memory ids or turn indexes),
    `evidence` the evidence turns in the same terms; MRR counts the first relevant hit in `ranked`."""
    relevant = set(evidence)
    position = {item: i for i, item in reversed(list(enumerate(ranked)))}

    def recall(k: int) -> float:
        return sum(position.get(item, k) < k for item in evidence) / len(evidence)

    dcg = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:10]) if item in relevant)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    first = min((position[item] for item in relevant if item in position), default=None)
    return {"R@5": recall(5), "R@10": recall(10), "nDCG@10": dcg / idcg,
            "MRR": 0.0 if first is None else 1 / (first + 1)}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    return {"n": len(rows), **{m: round(statistics.fmean(r[m] for r in rows), 4) for m in METRICS}}
