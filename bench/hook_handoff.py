"""How fast a capture hook (stop / pre-compact / session-end) gives the harness back its turn.

The hook hands its work to a detached worker (mcp_memory/capture/worker.py) and returns; this
measures that return with no `mcp-memory serve` running:

  process: spawned as Claude Code spawns a command hook (`sh -c "mcp-memory hook <event>"`, the
           hook JSON on stdin), wall clock from spawn to exit: the thin entry point (hookline.py)
           finds no server and starts the worker itself, importing only the standard library;
  full:    the same with MCP_MEMORY_HOOK_CHANNEL=off, which goes straight to the full command
           line (what every capture hook cost before the entry point handed off itself);
  hand-off: the full path's own work after the imports (`run_hook` called in this process): read
           the input, check the transcript, write the job, start the worker;
  floor:   `sh -c "python -c pass"`, what any Python process costs on this machine right now.

And what every hook adds when nothing is behind: `catchup.look` over a project folder of
`--transcripts` captured sessions (a directory scan and the state file; no database).

Each run is a session of its own with a real transcript (tests/fixtures, 4 turns) on an embedded
PostgreSQL started here; the workers really capture, and the next run waits until they are done,
so runs do not queue behind each other's background work.

Usage: python bench/hook_handoff.py [--runs 20] [--transcripts 500] [--out bench/results/hook_handoff.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from mcp_memory.capture import catchup
from mcp_memory.capture.hooks import run_hook
from mcp_memory.config import Settings
from mcp_memory.db.embedded import EmbeddedPostgres

sys.path.insert(0, str(Path(__file__).parent))
from stats import summary  # noqa: E402

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "transcripts" / "claude_code_session.jsonl"
CLI = str(Path(sys.executable).with_name("mcp-memory"))
EVENTS = {"stop": "Stop", "pre-compact": "PreCompact", "session-end": "SessionEnd"}


def workers_done(data_dir: Path, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for proc in psutil.process_iter(["cmdline"]):
            try:
                if "mcp_memory.capture.worker" in (proc.info["cmdline"] or []) and \
                        proc.environ().get("MCP_MEMORY_DATA_DIR") == str(data_dir):
                    busy = True
                    break
            except psutil.Error:
                continue
        if not busy:
            return
        time.sleep(0.1)


def session(folder: Path, n: int, event: str) -> dict[str, Any]:
    sid = f"b0000000-0000-4000-8000-{n:012d}"
    path = folder / f"{sid}.jsonl"
    path.write_text(FIXTURE.read_text().replace("3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a", sid)
                    .replace("Dana Whitfield", f"Dana Whitfield {n}"))
    return {"session_id": sid, "transcript_path": str(path), "cwd": str(folder), "hook_event_name": EVENTS[event],
            "stop_hook_active": False, "trigger": "auto", "reason": "other"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--transcripts", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("bench/results/hook_handoff.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hook-handoff-") as tmp:
        root = Path(tmp)
        pg = EmbeddedPostgres(root / "pgstore")
        pg.start()
        try:
            dsn = pg.dsn("postgres")
            data_dir, folder = root / "data", root / "projects"
            folder.mkdir()
            env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_DATABASE_URL": dsn,
                   "MCP_MEMORY_USER": "bench"}
            os.environ.update({k: env[k] for k in ("MCP_MEMORY_DATA_DIR", "MCP_MEMORY_DATABASE_URL",
                                                   "MCP_MEMORY_USER")})
            settings = Settings()
            results: dict[str, dict[str, Any]] = {}
            n = 0
            for event in EVENTS:
                process: list[float] = []
                handoff: list[float] = []
                full: list[float] = []
                floor: list[float] = []
                for _ in range(args.runs):
                    n += 1
                    payload = json.dumps(session(folder, n, event)).encode()
                    started = time.perf_counter()
                    out = subprocess.run(["sh", "-c", f"{shlex.quote(CLI)} hook {event}"], input=payload,
                                         capture_output=True, env=env, check=False)
                    process.append(time.perf_counter() - started)
                    assert out.returncode == 0 and out.stdout == b"" and out.stderr == b"", out.stderr
                    workers_done(data_dir)
                    n += 1
                    payload = json.dumps(session(folder, n, event)).encode()
                    started = time.perf_counter()
                    run_hook(event, "claude-code", lambda: settings, stdin=io.BytesIO(payload), stdout=io.StringIO())
                    handoff.append(time.perf_counter() - started)
                    workers_done(data_dir)
                    n += 1
                    payload = json.dumps(session(folder, n, event)).encode()
                    started = time.perf_counter()
                    out = subprocess.run(["sh", "-c", f"{shlex.quote(CLI)} hook {event}"], input=payload,
                                         capture_output=True, env={**env, "MCP_MEMORY_HOOK_CHANNEL": "off"},
                                         check=False)
                    full.append(time.perf_counter() - started)
                    assert out.returncode == 0 and out.stdout == b"" and out.stderr == b"", out.stderr
                    workers_done(data_dir)
                    started = time.perf_counter()
                    subprocess.run(["sh", "-c", f"{shlex.quote(sys.executable)} -c pass"], check=True)
                    floor.append(time.perf_counter() - started)
                results[event] = {"process": summary(process), "full": summary(full), "hand_off": summary(handoff),
                                  "floor": summary(floor)}
            many = root / "many"
            many.mkdir()
            for i in range(args.transcripts):
                path = many / f"{i:08d}.jsonl"
                path.write_text(FIXTURE.read_text())
                at = catchup.stamp(path)
                assert at is not None
                catchup.mark_captured(settings, path, at)
            looks: list[float] = []
            for _ in range(200):
                started = time.perf_counter()
                assert not catchup.look(settings, many, many / "00000000.jsonl")
                looks.append(time.perf_counter() - started)
            failed = json.loads((data_dir / "capture-status.json").read_text())["failures"] \
                if (data_dir / "capture-status.json").exists() else {}
        finally:
            pg.stop()

    print(f"capture hook return, {args.runs} runs per event, no server running, {os.cpu_count()} cores")
    print(f"{'event':<12} {'process p50':>12} {'p95':>8}   {'full p50':>10} {'p95':>8}   "
          f"{'hand-off p50':>12} {'p95':>8}   {'floor p50':>10} {'p95':>8}")
    for event, r in results.items():
        p, f, h, t = r["process"], r["full"], r["hand_off"], r["floor"]
        print(f"{event:<12} {p['p50_ms']:>10.0f}ms {p['p95_ms']:>6.0f}ms   "
              f"{f['p50_ms']:>8.0f}ms {f['p95_ms']:>6.0f}ms   "
              f"{h['p50_ms']:>10.1f}ms {h['p95_ms']:>6.1f}ms   {t['p50_ms']:>8.0f}ms {t['p95_ms']:>6.0f}ms")
    look = summary(looks)
    print(f"catch-up look, nothing behind, {args.transcripts} transcripts in the folder: "
          f"p50 {look['p50_ms']:.2f} ms, p95 {look['p95_ms']:.2f} ms")
    print(f"captures that failed: {len(failed)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": args.runs, "events": results, "look": look,
                                         "transcripts": args.transcripts, "failed_captures": len(failed)}, indent=2))


if __name__ == "__main__":
    main()
