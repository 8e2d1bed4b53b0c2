"""Switching from doobidoo's mcp-memory-service: `mcp-memory import` of the peer's own database
(sqlite_vec.db) holding N memories, timed, against the issue's bound (10,000 in <= 60 s).

The peer's database is written by the peer (12.4.0, ../shared/peers/setup_doobidoo.sh) through its
own MemoryImporter's memories and its storage's store_batch (tests/fixtures/doobidoo/peer_import.py
--batch), from the JSON `mcp-memory export --to
doobidoo-json` writes: LoCoMo turns, then again numbered so the store outgrows the corpus
(bench/burst.py `variant_texts`), dated a minute apart. It is kept (--peer-db) for the next run.
Then, in a fresh embedded store: a dry run (read the file, check every memory, look for
duplicates: no model), the import itself (the write path: the peer's vectors taken when a sample
re-embedded shows they are our model's, else every memory embedded in batches; deduplicated, names
read), and a second import (all already there). Printed: the import's summary line (taken or not,
and why), the load average before and after, and the import's CPU seconds in this process and in
the embedded PostgreSQL (about its time on an idle machine). The embedder's own rate on other texts
of the same corpus is measured beside it (--embed-sample 0: not): what a re-embedding import is
bound by.

--long-every K: every K-th memory is instead a stretch of the conversation (that turn and the
`STRETCH - 1` after it, one text), most longer than the peer's cut of 128 tokens: the texts whose
peer vector is of their beginning only, which the import embeds itself (default /tmp/peer-import-N-longK.db).

python bench/import_peer.py [DATASET] [--memories 10000] [--long-every K] [--peer-db /tmp/peer-import-10000.db]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from burst import DEFAULT_DATASET, corpus, variant_texts  # noqa: E402
from locomo import REPO, bench_database, bench_principal, machine, table  # noqa: E402

from mcp_memory.exporting import doobidoo as doobidoo_json  # noqa: E402
from mcp_memory.importers import import_paths  # noqa: E402
from mcp_memory.repository.maintenance import MaintenanceRepository  # noqa: E402

LIMIT_S = 60.0
START = datetime(2023, 5, 1, tzinfo=UTC)
STRETCH = 7  # turns joined into one long memory (--long-every)


def with_long(texts: list[str], every: int) -> list[str]:
    """Every `every`-th text replaced by a stretch of `STRETCH` texts from it on, joined."""
    if not every:
        return texts
    return [" ".join(texts[i:i + STRETCH]) if i % every == every - 1 else t for i, t in enumerate(texts)]


def build_peer_db(texts: list[str], peer_dir: Path, db: Path) -> float:
    """The peer's database of `texts`, written by the peer's own importer; returns its seconds."""
    python = peer_dir / "venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"--peer-dir: no {python}; install the peer with ../shared/peers/setup_doobidoo.sh")
    memories = [{"id": f"bench-{i}", "kind": "episode", "content": t, "tags": ["locomo"], "metadata": {},
                 "occurred_at": START + timedelta(minutes=i), "updated_at": START + timedelta(minutes=i)}
                for i, t in enumerate(texts)]
    export = db.with_suffix(".json")
    with export.open("w", encoding="utf-8") as out:
        doobidoo_json.write(memories, out, exported_by="bench/import_peer.py")
    env = {**os.environ, "HOME": str(peer_dir / "home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MCP_MEMORY_USE_ONNX": "1", "MCP_MEMORY_BASE_DIR": str(db.parent / f"{db.stem}-base")}
    started = time.perf_counter()
    ran = subprocess.run([str(python), str(REPO / "tests" / "fixtures" / "doobidoo" / "peer_import.py"), str(export),
                          str(db), "--batch"], capture_output=True, text=True, env=env)
    if ran.returncode:
        raise SystemExit(f"the peer's import failed:\n{ran.stderr[-3000:]}")
    seconds = time.perf_counter() - started
    held = json.loads(ran.stdout)
    print(f"peer: imported {held['imported']} memories into {db} in {seconds:.1f}s", file=sys.stderr)
    export.unlink()
    return seconds


def _cpu_seconds(data_dir: Path) -> dict[str, float]:
    """CPU seconds used so far by this process (the model's threads too) and by the embedded
    PostgreSQL's processes (its postmaster's children: the backends serving the import)."""
    own = psutil.Process().cpu_times()
    postgres = 0.0
    for pid_file in data_dir.rglob("postmaster.pid"):
        master = psutil.Process(int(pid_file.read_text().split()[0]))
        for proc in [master, *master.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            postgres += times.user + times.system
    return {"python": own.user + own.system, "postgres": postgres}


def _load() -> str:
    """The 1, 5 and 15 minute load averages (two cores, shared)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main_async(args: argparse.Namespace) -> None:
    texts, _ = corpus(args.dataset)
    wanted = with_long(variant_texts(texts, args.memories), args.long_every)
    peer_s = None
    if not args.peer_db.exists():
        peer_s = build_peer_db(wanted, args.peer_dir, args.peer_db)
    rows = []
    load_before = _load()
    async with bench_database(args.database_url, "import-peer") as bench:
        service, p = bench.service(), bench_principal("switcher")
        maintenance = MaintenanceRepository(bench.admin)
        await service.vectors.query("warm up")
        started = time.perf_counter()
        dry = await import_paths(service, maintenance, p, [args.peer_db], dry_run=True, progress=False)
        rows.append(["dry run (read, check)", dry.created, round(time.perf_counter() - started, 2)])
        cpu = _cpu_seconds(bench.settings.data_dir)
        started = time.perf_counter()
        first = await import_paths(service, maintenance, p, [args.peer_db], progress=not args.quiet)
        import_s = time.perf_counter() - started
        cpu = {k: round(v - cpu[k], 1) for k, v in _cpu_seconds(bench.settings.data_dir).items()}
        rows.append(["import", first.created, round(import_s, 2)])
        started = time.perf_counter()
        second = await import_paths(service, maintenance, p, [args.peer_db], progress=False)
        rows.append(["import again", second.created, round(time.perf_counter() - started, 2)])
        other = variant_texts(texts, args.memories + args.embed_sample)[args.memories:]  # never embedded yet
        started = time.perf_counter()
        for i in range(0, len(other), service.settings.max_batch):
            await service.vectors.documents_or_none(other[i:i + service.settings.max_batch])
        embed_rate = len(other) / (time.perf_counter() - started) if other else None
    rate = first.created / import_s
    report = {"benchmark": "import_peer", "memories": args.memories, "long_every": args.long_every,
              "peer_db": str(args.peer_db),
              "peer_import_s": None if peer_s is None else round(peer_s, 1),
              "rows": [dict(zip(["step", "new", "seconds"], r, strict=True)) for r in rows],
              "import_per_s": round(rate, 1), "embedding": first.embedding, "import_cpu_s": cpu,
              "embedder_texts_per_s": embed_rate and round(embed_rate, 1), "within_limit": import_s <= LIMIT_S,
              "load_before": load_before, "load_after": _load(),
              "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["step", "new memories", "seconds"], rows, first_width=24))
    for line in first.embedding:
        print(line)
    alone = f"; the embedder alone: {embed_rate:.1f} texts/s ({args.embed_sample} other texts)" if embed_rate else ""
    print(f"import: {rate:.1f} memories/s{alone}; {'within' if import_s <= LIMIT_S else 'over'} {LIMIT_S:.0f} s; "
          f"load average {load_before} before, {report['load_after']} after")
    if args.database_url is None:  # the embedded server's processes are ours to count; another's are not
        print(f"import CPU seconds: this process {cpu['python']}, PostgreSQL {cpu['postgres']} (what it would take "
              "on an idle machine, about: the two mostly take turns)")
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--peer-dir", type=Path, default=Path("/tmp/peer-doobidoo"))
    parser.add_argument("--peer-db", type=Path, help="the peer's database (made when absent; default "
                        "/tmp/peer-import-N.db)")
    parser.add_argument("--long-every", type=int, default=0, help="every K-th memory a stretch of the "
                        f"conversation ({STRETCH} turns as one text; 0: none)")
    parser.add_argument("--embed-sample", type=int, default=1000)
    parser.add_argument("--database-url")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "import_peer.json")
    args = parser.parse_args()
    long = f"-long{args.long_every}" if args.long_every else ""
    args.peer_db = args.peer_db or Path(f"/tmp/peer-import-{args.memories}{long}.db")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
