"""Could entities be merged by how close their names embed? Computed offline from the writers'
names of the knowledge-update sets (bench/knowledge_update/writer_words.json `entities`: each
subject's full name and the other forms a writer uses for it) with the local model.

  same thing      a subject's name against each other form of it ("Felix Byrne" / "Felix",
                  "the user" / "me"): what a merge by threshold would have to join;
  distinct things two subjects of one set ("Henrik Rasmussen" / "Pavel Rasmussen"): what it must
                  keep apart.

For each threshold it prints the share of same-thing pairs at or above it and how many distinct
pairs are too. The graph merges by canonical name, word set, a lone first name and classifier
words (docs/graph.md); this is why it does not merge by embedding as well.

Usage: python bench/name_similarity.py [--out bench/results/name_similarity.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from pathlib import Path

import numpy as np
from locomo import REPO, machine, table

from mcp_memory.embeddings import make_embedder

WORDS = REPO / "bench" / "knowledge_update" / "writer_words.json"
THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9, 0.95)


async def main_async(args: argparse.Namespace) -> None:
    entities: dict[str, dict[str, list[str]]] = json.loads(WORDS.read_text())["entities"]
    same = [(name, form) for subjects in entities.values() for name, forms in subjects.items()
            for form in forms if form != name]
    distinct = [(a, b) for subjects in entities.values() for a, b in itertools.combinations(sorted(subjects), 2)]
    embedder = make_embedder("local")
    assert embedder is not None
    texts = sorted({t for pair in same + distinct for t in pair})
    vectors = dict(zip(texts, np.array(await embedder.embed_documents(texts)), strict=True))

    def cosines(pairs: list[tuple[str, str]]) -> list[float]:
        return [float(vectors[a] @ vectors[b]) for a, b in pairs]

    s, d = cosines(same), cosines(distinct)
    rows = [[t, f"{np.mean([c >= t for c in s]):.3f}", sum(c >= t for c in d)] for t in THRESHOLDS]
    print(f"{len(same)} same-thing pairs (median cosine {np.median(s):.3f}), {len(distinct)} distinct pairs "
          f"(highest {max(d):.3f})")
    print(table(["threshold", "same joined", "distinct joined"], rows))
    closest = sorted(zip(d, distinct, strict=True), reverse=True)[:5]
    for c, (a, b) in closest:
        print(f"  distinct {c:.3f}: {a} / {b}")
    report = {"benchmark": "name-similarity", "same_pairs": len(same), "distinct_pairs": len(distinct),
              "same_median": float(np.median(s)), "distinct_max": max(d),
              "by_threshold": [{"threshold": t, "same_joined": float(j), "distinct_joined": n} for t, j, n in rows],
              "closest_distinct": [{"cosine": c, "names": [a, b]} for c, (a, b) in closest], "machine": machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "name_similarity.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
