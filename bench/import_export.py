"""`mcp-memory import` of our own export at scale: a store moved to a new machine (issue 51, "import
of 1,000,000 memories ≤ 15 min with a progress bar").

The export file is generated as `mcp-memory export` writes one: a header naming the model, the
user's entities, each memory with its history (one ADD), its graph and its vector (`--version 1`: as
the export wrote before it carried the graph, which the import then reads again by rules). The
graph is what the rules read off each memory's text (`names_of`), an entity per name. The texts are
real conversation text, as in bench/scale_text.py: one to three LoCoMo turns joined, distinct,
dated over two years. Their vectors are synthesized (a million embeddings take hours on two cores):
the normalised sum of the turns' real MiniLM embeddings plus noise (`--spread`), except for the
memories the import's check re-embeds (importing/peer_vectors.py `sample_of`, the same
deterministic choice the importer makes), which carry MiniLM's own vectors (each made after the
turn before it, as the store embeds an episode) so that the check passes, as it does for a real
export. (That the check refuses vectors that are not the model's is tested: tests/test_export_vectors.py.)

Then the real command runs in a fresh embedded store, `mcp-memory import FILE` in a subprocess,
timed from start to exit, its progress bars kept; and the store is checked: every memory there,
each with a vector, each read by the graph.

Usage: python bench/import_export.py [LOCOMO_JSON] [--memories 100000] [--spread 0.01] [--version 2]
                                     [--keep-file F] [--out bench/results/import_export.json]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory.config import EmbeddingSettings, Settings
from mcp_memory.db import open_database
from mcp_memory.embeddings.local import MiniLMEmbedder
from mcp_memory.graph.names import read_names
from mcp_memory.importing.export_vectors import header
from mcp_memory.importing.peer_vectors import sample_of
from mcp_memory.vectors import summed

sys.path.insert(0, str(Path(__file__).parent))
from locomo import load_dataset  # noqa: E402
from locomo_data import DEFAULT_DATASET, turn_text  # noqa: E402

USER = "moved"
CHUNK = 20_000


def texts_of(pool: list[str], n: int, rng: random.Random) -> list[tuple[int, ...]]:
    """n distinct picks of one to three pool turns."""
    seen: set[tuple[int, ...]] = set()
    picks = []
    for _ in range(n):
        turns = tuple(rng.randrange(len(pool)) for _ in range(rng.choice((1, 2, 2, 3))))
        while turns in seen:
            turns = (*turns, rng.randrange(len(pool)))
        seen.add(turns)
        picks.append(turns)
    return picks


def names_of(text: str) -> dict[str, tuple[str, str]]:
    """A memory's names as the rules read its text: canonical -> (display, role). Every one the
    rules read is kept (a write takes a name the rules are unsure of only when it is known: a few
    more mentions than a store holds, 5.1 a memory against 4.5 by the import's own reading)."""
    return {n.canonical: (n.display, n.role) for n in read_names(text, "episode") if not n.user}


def entity_id(canonical: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-entity:{canonical}"))


def graph_of(names: dict[str, tuple[str, str]], at: str) -> dict[str, Any]:
    return {"mentions": [{"entity": entity_id(c), "role": role, "source": "rules", "created_at": at}
                         for c, (_, role) in names.items()], "facts": [], "edges": []}


def record(text: str, vector: np.ndarray, when: datetime, i: int, graph: dict[str, Any] | None) -> str:
    mid, at = str(uuid.UUID(int=i + 1)), when.isoformat()
    memory = {"id": mid, "agent_id": None, "project_id": None, "kind": "episode", "title": None, "content": text,
              "tags": [f"t{i % 20}"], "metadata": {}, "importance": 0.5, "confidence": 1.0, "pinned": False,
              "priority": 0, "source": "capture", "content_hash": "", "occurred_at": at, "valid_until": None,
              "created_at": at, "updated_at": at, "version": 1, "access_count": 0, "last_accessed": None,
              "deleted_at": None, "deleted_reason": None, "superseded_by": None, "contradicted": False}
    history = [{"memory_id": mid, "event": "ADD", "old": None, "new": {"content": text}, "actor": "bench",
                "client": None, "request_id": None, "reason": None, "created_at": at}]
    return json.dumps({"type": "memory", "memory": memory, "history": history,
                       **({"graph": graph} if graph is not None else {}),
                       "vector": base64.b64encode(vector.astype("<f4").tobytes()).decode()}) + "\n"


async def embedded(texts: list[str]) -> tuple[np.ndarray, str, int]:
    embedder = MiniLMEmbedder()
    return np.asarray(await embedder.embed_documents(texts), dtype=np.float32), embedder.model, embedder.dimension


def write_export(path: Path, n: int, dataset: Path, spread: float, version: int) -> dict[str, Any]:
    started = time.perf_counter()
    pool = sorted({turn_text(t) for c in load_dataset(dataset, None) for _, _, turns in c.sessions for t in turns})
    pool_vectors, model, dimension = asyncio.run(embedded(pool))
    rng, noise = random.Random(3), np.random.default_rng(5)
    picks = texts_of(pool, n, rng)
    texts = [" ".join(pool[t] for t in turns) for turns in picks]
    checked = sample_of(texts)
    now = datetime.now(UTC)
    when = [now - timedelta(days=720 * (n - i) / n) for i in range(n)]
    # Each memory is a turn after the one before it (within the gap, a turn is embedded after it).
    embedding = Settings().part(EmbeddingSettings)  # as the importing command will read them (the environment)
    gap = timedelta(minutes=embedding.embedding_turn_minutes)
    on = embedding.embedding_turn_weight > 0 and embedding.embedding_turn_minutes > 0
    turns = (embedding.embedding_turn_weight, embedding.embedding_turn_minutes) if on else (0.0, 0.0)
    befores = [texts[i - 1] if on and i and when[i] - when[i - 1] <= gap else None for i in checked]
    made = asyncio.run(embedded([texts[i] for i in checked] + [b for b in befores if b is not None]))[0]
    more = iter(made[len(checked):])
    own = {i: np.asarray(summed(v, next(more), embedding.embedding_turn_weight) if b is not None else v,
                         dtype=np.float32)
           for i, v, b in zip(checked, made[:len(checked)], befores, strict=True)}
    names = [names_of(text) for text in texts] if version == 2 else []
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "header", "format": "mcp-memory-export", "version": version, "user_id": USER,
                              "exported_by": "bench/import_export.py",
                              "embedding": header(model, dimension, turns)}) + "\n")
        first = when[0].isoformat()
        for canonical, display in sorted({c: d for found in names for c, (d, _) in found.items()}.items()):
            out.write(json.dumps({"type": "entity", "entity": {
                "id": entity_id(canonical), "agent_id": None, "project_id": None, "kind": "named", "name": display,
                "canonical": canonical, "aliases": [], "merged_into": None, "created_at": first,
                "updated_at": first}}) + "\n")
        for start in range(0, n, CHUNK):
            chunk = picks[start:start + CHUNK]
            v = np.stack([pool_vectors[list(p)].sum(axis=0) for p in chunk])
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            v += noise.normal(0, spread, v.shape).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            for k in range(len(chunk)):
                i = start + k
                graph = graph_of(names[i], when[i].isoformat()) if version == 2 else None
                out.write(record(texts[i], own[i] if i in own else v[k], when[i], i, graph))
    return {"pool_turns": len(pool), "checked_with_real_vectors": len(own),
            "file_mb": round(path.stat().st_size / 2**20, 1), "write_s": round(time.perf_counter() - started, 1)}


def stages(stderr: str) -> dict[str, str]:
    """Each progress bar's last state (tqdm redraws with \\r), by its description."""
    out = {}
    for part in re.split(r"[\r\n]", stderr):
        m = (re.match(r"\s*([^:|]+?):\s+100%\|.*\|\s*(.*)$", part)  # a bar with a total
             or re.match(r"\s*([^:|\[]+?):\s+(\d+\s*memory\s*\[.*\])\s*$", part))  # one without
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out


async def check(data: Path) -> dict[str, int]:
    """What the store holds after the command: every memory, with a vector, read by the graph."""
    db = await open_database(Settings(data_dir=data, log_level="WARNING"))
    try:
        row = await db.admin.fetchrow(
            "SELECT count(*) AS memories, count(embedding) AS with_vector, "
            "(SELECT count(*) FROM graph_backlog) AS backlog_left, "
            "(SELECT count(DISTINCT memory_id) FROM memory_entities WHERE user_id = $1) AS with_mentions, "
            "(SELECT count(*) FROM memory_entities WHERE user_id = $1) AS mentions "
            "FROM memories WHERE user_id = $1", USER)
        return dict(row)
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--spread", type=float, default=0.01)
    parser.add_argument("--version", type=int, choices=(1, 2), default=2,
                        help="2: the file carries the graph (as `mcp-memory export` writes); 1: the import reads it")
    parser.add_argument("--keep-file", type=Path, help="write the export here (reused when it exists)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "import_export.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-import-") as tmp:
        path = args.keep_file or Path(tmp) / "export.jsonl"
        report: dict[str, Any] = {"memories": args.memories, "spread": args.spread, "version": args.version}
        if not path.exists():
            report["export"] = write_export(path, args.memories, args.dataset, args.spread, args.version)
        data = Path(tmp) / "store"
        env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(data), "MCP_MEMORY_USER": USER, "MCP_MEMORY_PROJECT": "none",
               "MCP_MEMORY_LOG_LEVEL": "WARNING"}
        env.pop("MCP_MEMORY_DATABASE_URL", None)
        cli = [sys.executable, "-m", "mcp_memory.cli"]
        started, load = time.perf_counter(), os.getloadavg()[0]
        done = subprocess.run([*cli, "import", str(path)], env=env, capture_output=True, text=True)
        report["import_s"] = round(time.perf_counter() - started, 1)
        report["import_max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        report["load_avg_before_after"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        if done.returncode != 0:
            sys.exit(f"import failed:\n{done.stderr[-3000:]}")
        report["summary"] = done.stdout.strip().splitlines()
        report["stages"] = stages(done.stderr)
        report["store"] = asyncio.run(check(data))
    rate = args.memories / report["import_s"]
    print(f"{'measure':32s} value")
    for label, value in [("memories", args.memories), ("file MB", report.get("export", {}).get("file_mb")),
                         ("mcp-memory import s", report["import_s"]), ("memories / s", round(rate)),
                         ("import's peak memory MB", report["import_max_rss_mb"]),
                         ("a million at that rate, min", round(1_000_000 / rate / 60, 1)),
                         *[(f"  {k}", v) for k, v in report["stages"].items()],
                         *[(f"store {k}", v) for k, v in report["store"].items()],
                         ("load before / after", report["load_avg_before_after"])]:
        print(f"{label:32s} {value}")
    for line in report["summary"]:
        print(f"  {line}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
