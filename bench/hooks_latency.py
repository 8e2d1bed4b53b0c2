"""Hook latency as a harness sees it: each event spawned the way Claude Code spawns a command hook
(a new process, `sh -c "mcp-memory hook <event>"`, the hook JSON on stdin), wall clock from spawn
to exit, at 10,000 memories on the embedded database.

  cold: no server runs (the hook finds no socket and takes the full path: imports, the model, and
        for the embedded store starting its PostgreSQL);
  warm: `mcp-memory serve` runs on the same data dir, started as a harness starts it (stdio, its
        input kept open); the hook asks it over the user-only socket (mcp_memory/hookline.py).

Prompts are phrased like the memories' subjects and each run is a session of its own (recall
leaves out what a session was already given). Capture events (stop / pre-compact / session-end)
carry a real transcript; their hook returns once the work is handed over (to the server, or cold
to the detached worker), so the pause after each lets that background work finish before the
next run is timed.

Usage: python bench/hooks_latency.py [--memories 10000] [--runs 30] [--capture-runs 10]
                                     [--data-dir DIR] [--out bench/results/hooks_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mcp_memory import hookline
from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.repository.embeddings import index_name
from mcp_memory.service import MemoryService
from mcp_memory.validation import content_hash

sys.path.insert(0, str(Path(__file__).parent))
from scale import KINDS, PLACES, jittered  # noqa: E402
from stats import summary  # noqa: E402
from stdio_latency import OBJECTS, QUERIES, SUBJECTS, VERBS  # noqa: E402

CLI = str(Path(sys.executable).with_name("mcp-memory"))
USER = "hookbench"
EVENTS = ("session-start", "prompt-submit", "stop", "pre-compact", "session-end")
CLAUDE_NAMES = {"session-start": "SessionStart", "prompt-submit": "UserPromptSubmit", "stop": "Stop",
                "pre-compact": "PreCompact", "session-end": "SessionEnd"}
TRANSCRIPT = Path(__file__).parent.parent / "tests" / "fixtures" / "transcripts" / "claude_code_session.jsonl"


async def load(data_dir: Path, n: int) -> float:
    """n memories of the bench user, shared across agents and projects (what every hook of the
    user may recall), bulk-loaded as bench/scale.py loads them; returns seconds taken."""
    settings = Settings(data_dir=data_dir, retention_interval_hours=0, log_level="WARNING")
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        vectors = service.vectors
        assert vectors is not None
        async with db.admin.acquire() as conn:
            if await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = $1", USER) >= n:
                return 0.0
        started = time.perf_counter()
        rng = random.Random(5)
        bases = sorted({f"{s} {v} {o} in {rng.choice(PLACES)}" for s in SUBJECTS for v in VERBS for o in OBJECTS})
        rng.shuffle(bases)
        bases = bases[:1500]
        base_vectors = np.asarray(await vectors.embedder.embed_documents(bases), dtype=np.float32)
        now = datetime.now(UTC)
        records = []
        for i in range(n):
            j = rng.randrange(len(bases))
            v = jittered(base_vectors[j], i)
            text = f"{bases[j]} (note {i})"
            records.append((USER, uuid.uuid4(), None, None, rng.choice(KINDS), text, content_hash(text),
                            [f"t{i % 20}"], v, vectors.model, now - timedelta(days=rng.uniform(0, 720))))
        async with db.admin.acquire() as conn:
            await conn.execute(f"DROP INDEX IF EXISTS {index_name(vectors.model, vectors.dimension)}")
            await conn.copy_records_to_table(
                "memories", records=records,
                columns=["user_id", "id", "agent_id", "project_id", "kind", "content", "content_hash", "tags",
                         "embedding", "embedding_model", "occurred_at"])
            await conn.execute("VACUUM ANALYZE memories")
        await vectors.repo.ensure_index(vectors.model, vectors.dimension)
        return time.perf_counter() - started
    finally:
        await db.close()


# A one-word prompt is skipped by the entry point before it asks anyone: not a recall to time.
ASKED = [q for q in QUERIES if len(q.split()) >= 2]


class Bench:
    def __init__(self, data_dir: Path, work: Path, command: str) -> None:
        self.data_dir, self.work, self.command = data_dir, work, command
        self.cwd = work / "project"
        self.cwd.mkdir(exist_ok=True)
        self.transcripts = work / "transcripts"
        self.transcripts.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
        # No project: the bench's memories are the user's, and a hook in a plain folder would
        # otherwise be that folder's project (as Claude Code's MCP server names it) and see none.
        self.env = {**env, "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER": USER, "MCP_MEMORY_PROJECT": "none"}
        self.rng = random.Random(11)

    def payload(self, event: str) -> dict[str, Any]:
        session = str(uuid.uuid4())
        transcript = self.transcripts / f"{session}.jsonl"
        if event in ("stop", "pre-compact", "session-end"):
            lines = TRANSCRIPT.read_text().splitlines()
            transcript.write_text("\n".join(line.replace("3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a", session)
                                            for line in lines) + "\n")
        data: dict[str, Any] = {"session_id": session, "transcript_path": str(transcript), "cwd": str(self.cwd),
                                "hook_event_name": CLAUDE_NAMES[event], "permission_mode": "default"}
        if event == "prompt-submit":
            data["prompt"] = self.rng.choice(ASKED).capitalize() + "?"
        if event == "session-start":
            data.update(source="startup", model="claude-sonnet-4-5")
        return data

    def spawn(self, event: str, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[bytes]]:
        """One hook as Claude Code runs it: `sh -c <command>`, JSON on stdin, wall clock to exit."""
        line = f"{shlex.quote(self.command)} hook {event}"
        data = json.dumps(self.payload(event)).encode()
        started = time.perf_counter()
        out = subprocess.run(["sh", "-c", line], input=data, capture_output=True, env={**self.env, **(env or {})},
                             cwd=self.cwd, timeout=120)
        return time.perf_counter() - started, out

    def floor(self) -> float:
        """A Python process doing nothing, spawned the same way: what this machine's load costs
        every hook before any of our code runs."""
        started = time.perf_counter()
        subprocess.run(["sh", "-c", f"{shlex.quote(sys.executable)} -c pass"], check=True, env=self.env)
        return time.perf_counter() - started

    def series(self, event: str, runs: int, pause: float) -> dict[str, Any]:
        times, floors, empty, errors = [], [], 0, []
        for _ in range(runs):
            floors.append(self.floor())   # interleaved: both see the same load
            took, out = self.spawn(event)
            times.append(took)
            empty += event in ("session-start", "prompt-submit") and not out.stdout.strip()
            if out.stderr.strip():
                errors.append(out.stderr.decode(errors="replace").strip()[:200])
            time.sleep(pause)
        return {**summary(times), "without_context": empty, "stderr": sorted(set(errors))[:5],
                "floor": summary(floors), "load_average": round(os.getloadavg()[0], 1)}

    def serve(self) -> subprocess.Popen[bytes]:
        log = (self.work / "serve.log").open("wb")
        # --standalone: this server's own log says when it listens for hooks (through the resident
        # server: bench/resident.py).
        proc = subprocess.Popen([self.command, "serve", "--standalone"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, env=self.env)
        path = hookline.socket_path(None, self.data_dir)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"mcp-memory serve exited:\n{(self.work / 'serve.log').read_text()}")
            if f"listening on {path}" in (self.work / "serve.log").read_text(errors="replace"):
                break
            time.sleep(0.2)
        else:
            raise SystemExit("mcp-memory serve never listened on the hook socket")
        _, probe = self.spawn("prompt-submit", {"MCP_MEMORY_HOOK_TRACE": "1"})
        if f"answered by server pid {proc.pid}" not in probe.stderr.decode():
            raise SystemExit(f"the hook was not answered by the server: {probe.stderr.decode()}")
        return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30, help="runs per recall event and mode")
    parser.add_argument("--capture-runs", type=int, default=10, help="runs per capture event and mode")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between recall runs")
    parser.add_argument("--capture-pause", type=float, default=3.0,
                        help="seconds after each capture run, for its background work to finish")
    parser.add_argument("--command", default=CLI, help="the mcp-memory executable the harness runs")
    parser.add_argument("--data-dir", type=Path, help="keep the store here and reuse it on the next run")
    parser.add_argument("--out", type=Path, default=Path("bench/results/hooks_latency.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-hooks-", ignore_cleanup_errors=True) as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        load_s = asyncio.run(load(data_dir, args.memories))
        bench = Bench(data_dir, Path(tmp), args.command)
        results: dict[str, Any] = {"memories": args.memories, "load_s": round(load_s, 1), "command": args.command,
                                   "warm": {}, "cold": {}}
        server = bench.serve()
        try:
            for event in EVENTS:
                capture = event not in ("session-start", "prompt-submit")
                results["warm"][event] = bench.series(event, args.capture_runs if capture else args.runs,
                                                      args.capture_pause if capture else args.pause)
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(60)
        for event in EVENTS:
            capture = event not in ("session-start", "prompt-submit")
            results["cold"][event] = bench.series(event, args.capture_runs if capture else max(5, args.runs // 3),
                                                  args.capture_pause if capture else args.pause)
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"{results['memories']:,} memories; hooks spawned as `sh -c '<mcp-memory> hook <event>'`, wall clock")
    print("floor: `python -c pass` spawned the same way, interleaved with the hooks (this machine's load)")
    print(f"{'event':<16}{'warm p50':>9}{'p95':>6}{'floor p50':>10}{'p95':>6}{'n':>4}{'cold p50':>10}{'p95':>6}"
          f"{'floor p50':>10}{'n':>4}{'no ctx w/c':>12}{'load':>6}")
    for event in EVENTS:
        w, c = results["warm"][event], results["cold"][event]
        print(f"{event:<16}{w['p50_ms']:>9.0f}{w['p95_ms']:>6.0f}{w['floor']['p50_ms']:>10.0f}"
              f"{w['floor']['p95_ms']:>6.0f}{w['n']:>4}{c['p50_ms']:>10.0f}{c['p95_ms']:>6.0f}"
              f"{c['floor']['p50_ms']:>10.0f}{c['n']:>4}{w['without_context']:>6}/{c['without_context']:<5}"
              f"{w['load_average']:>6}")
    for mode in ("warm", "cold"):
        for event, r in results[mode].items():
            for line in r["stderr"]:
                print(f"  {mode} {event} stderr: {line}")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
