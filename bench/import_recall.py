"""After switching: a LoCoMo conversation written through the peer (doobidoo mcp-memory-service, its
own MCP tools over stdio, as bench/side_by_side.py writes it), its questions asked of the peer (its
best search: hybrid, RRF), then the peer's database imported by `mcp-memory import` into a fresh
store of ours and the same questions asked of ours (the service's search, limit 10). R@10 and
nDCG@10 both ways, by bench/locomo_data.py's judging: the issue asks that we answer the peer's
own questions at least as well after the import.

The peer keeps no session dates (its writes carry none), so neither do the imported memories: ours
searches them with what the peer had, their text and the time each was written.

python bench/import_recall.py [DATASET] [--conversations conv-26] [--limit-turns N] [--limit-questions N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import peer_doobidoo as peer  # noqa: E402
from locomo import REPO, bench_database, bench_principal, load_dataset, machine, table  # noqa: E402
from locomo_data import DEFAULT_DATASET, evidence_ids, mean_metrics, score, turn_text  # noqa: E402
from side_by_side import Peer, pick, run_side, turns_of  # noqa: E402

from mcp_memory.importers import import_paths  # noqa: E402
from mcp_memory.repository.maintenance import MaintenanceRepository  # noqa: E402


async def ours_after_import(peer_db: Path, conv: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The peer's database imported into a fresh store; each question of the peer's run searched."""
    async with bench_database(args.database_url, "import-recall") as bench:
        service, p = bench.service(), bench_principal("switcher")
        started = time.perf_counter()
        report = await import_paths(service, MaintenanceRepository(bench.admin), p, [peer_db], progress=False)
        import_s = time.perf_counter() - started
        by_text = {m.content: str(m.id) for m in await _all(service, p)}
        keys = {t["dia_id"]: by_text[turn_text(t)] for _, _, t in turns_of(conv, args.limit_turns)
                if turn_text(t) in by_text}
        scores = []
        for q in conv.questions:
            evidence = [keys[d] for d in evidence_ids(q.get("evidence", [])) if d in keys]
            if not evidence:
                continue
            hits = (await service.search(p, q["question"], limit=args.limit)).hits
            scores.append({**score([str(h.id) for h in hits], evidence), "category": q["category"]})
            if len(scores) == args.limit_questions:
                break
    return {"imported": report.created, "import_s": round(import_s, 2), "embedding": report.embedding,
            "scores": scores}


async def _all(service: Any, p: Any) -> list[Any]:
    out, cursor = [], None
    while True:
        page = await service.list(p, limit=100, cursor=cursor)
        out += page.memories
        cursor = page.next_cursor
        if not cursor:
            return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    convs = pick(load_dataset(args.dataset, None), args.conversations)
    rows, results = [], []
    for conv in convs:
        with tempfile.TemporaryDirectory(prefix="mcp-memory-import-recall-") as tmp:
            theirs = await run_side(Peer(Path(tmp), args.peer_dir), conv, args)
            ours = await ours_after_import(Path(tmp) / "peer.db", conv, args)
        peer_q, ours_q = mean_metrics(theirs["scores"]), mean_metrics(ours["scores"])
        results.append({"conversation": conv.sample_id, "turns": theirs["turns"], "peer": peer_q, "ours": ours_q,
                        "questions": [len(theirs["scores"]), len(ours["scores"])], "imported": ours["imported"],
                        "import_s": ours["import_s"], "embedding": ours["embedding"]})
        for side, q, n in (("peer (its own search)", peer_q, len(theirs["scores"])),
                           ("ours (after import)", ours_q, len(ours["scores"]))):
            rows.append([f"{conv.sample_id} {side}", n, q["R@10"], q["nDCG@10"]])
    return {"benchmark": "import_recall", "dataset": str(args.dataset), "results": results, "rows": rows,
            "peer": f"doobidoo mcp-memory-service {peer.version(args.peer_dir)} (sqlite-vec, hybrid, RRF)",
            "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--conversations", default="conv-26")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--limit-turns", type=int)
    parser.add_argument("--limit-questions", type=int)
    parser.add_argument("--quiet-load", type=float, default=99.0, help="wait for a 1-minute load below this")
    parser.add_argument("--max-wait", type=float, default=0)
    parser.add_argument("--peer-dir", type=Path, default=peer.DEFAULT_DIR)
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "import_recall.json")
    args = parser.parse_args()
    report = asyncio.run(main_async(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["conversation, side", "questions", "R@10", "nDCG@10"], report["rows"], first_width=36))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
