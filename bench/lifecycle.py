"""Lifecycle latency: forget preview and execute for 50 candidates, restore, and the retention
purge of 100,000 tombstones, on the embedded database (service layer, in process).

Usage: python bench/lifecycle.py [--rounds 30] [--tombstones 100000] [--out bench/results/lifecycle.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.models import ALL_PERMISSIONS, Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.retention import sweep
from mcp_memory.service import MemoryService

sys.path.insert(0, str(Path(__file__).parent))
from stats import summary  # noqa: E402


async def run(rounds: int, tombstones: int, data_dir: Path) -> dict:
    settings = Settings(data_dir=data_dir, retention_interval_hours=0)
    db = await open_database(settings)
    service = MemoryService(MemoryRepository(db.pool), settings)
    admin = Principal(user_id="bench", project_id="bench", permissions=ALL_PERMISSIONS, actor="bench")
    try:
        for i in range(2000):
            topic = "cleanup" if i % 4 == 0 else "keeper"
            await service.write(admin, f"{topic} item {i}: scratch result of experiment {i % 37}")
        preview_t, execute_t, restore_t = [], [], []
        for _ in range(rounds):
            t = time.perf_counter()
            preview = await service.forget_preview(admin, query="cleanup item scratch", limit=50)
            preview_t.append(time.perf_counter() - t)
            assert len(preview.candidates) == 50
            t = time.perf_counter()
            done = await service.forget_execute(admin, preview.token, reason="bench")
            execute_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            await service.restore(admin, [f.id for f in done.forgotten], reason="bench")
            restore_t.append(time.perf_counter() - t)

        async with db.admin.acquire() as conn:  # bulk fixture: 100k already-forgotten memories
            await conn.execute(
                """INSERT INTO memories (user_id, project_id, content, content_hash, deleted_at, deleted_reason)
                   SELECT 'bench', 'bench', 'tombstone ' || g, md5('tombstone ' || g), now(), 'bench'
                   FROM generate_series(1, $1) g""", tombstones)
        report = await sweep(db.admin, settings, now=datetime.now(UTC) + timedelta(days=31))
        assert report.tombstones == tombstones, report
    finally:
        await db.close()
    return {"forget_preview_50": summary(preview_t), "forget_execute_50": summary(execute_t),
            "restore_50": summary(restore_t), "purge": {"tombstones": tombstones, "seconds": report.seconds}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tombstones", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench/results/lifecycle.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-bench-") as tmp:
        results = asyncio.run(run(args.rounds, args.tombstones, Path(tmp)))
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"{'measure':<40}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    for key, label in (("forget_preview_50", "forget preview, 50 candidates"),
                       ("forget_execute_50", "forget execute, 50 memories"), ("restore_50", "restore, 50 memories")):
        s = results[key]
        print(f"{label:<40}{s['p50_ms']:>10.1f}{s['p95_ms']:>10.1f}{s['n']:>6}")
    print(f"{'purge ' + format(args.tombstones, ',') + ' tombstones':<40}{results['purge']['seconds']:>10.2f} s")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
