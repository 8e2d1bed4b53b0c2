"""Does a headless `claude -p` run's own capture store its turns? Real Claude Code, real hooks.

`claude -p` SIGTERMs its async Stop hook milliseconds after starting it, as it exits, SIGKILLs it
~1.5 s later, and does not always run SessionEnd (docs/hooks.md). Each variant is a home set up by
`mcp-memory install claude-code` against a database of its own on one embedded PostgreSQL, a project
(a git repository) and the loopback stand-in for Anthropic's API (tests/anthropic_standin.py):
  installed  the hook commands install writes;
  bare       the same with the capture hooks' `trap '' TERM; exec ` prefix taken out (the commands
             of installs before it).
Runs alternate between the variants, one `claude -p` at a time, each a new session that writes a
fact through the MCP server. After each run the bench waits up to `--wait` seconds for that
session's turns (episodes tagged with its session id): what its own hooks stored, before any later
session's start could catch it up. `--burners` busy loops keep the cores loaded meanwhile.

Usage: python bench/claude_p_capture.py [--runs 10] [--burners 0] [--variants installed,bare]
                                        [--resident true] [--out bench/results/claude_p_capture.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_memory.capture.harness_entries import TERM_IGNORED  # noqa: E402
from mcp_memory.db.embedded import EmbeddedPostgres  # noqa: E402
from tests.anthropic_standin import StandIn  # noqa: E402

CLI = str(Path(sys.executable).with_name("mcp-memory"))
EPISODES = "SELECT count(*) FROM memories WHERE kind = 'episode' AND metadata->>'session_id' = $1"


async def _query(url: str, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


class Variant:
    """One home, project, data dir and database, installed as `name` says."""

    def __init__(self, name: str, root: Path, pg: EmbeddedPostgres, resident: str, base: str) -> None:
        self.name, self.root = name, root / name
        database = f"capture_{name}"
        asyncio.run(_query(pg.dsn("postgres"), f'CREATE DATABASE "{database}"'))
        self.url = pg.dsn(database)
        self.home, self.project = self.root / "home", self.root / "shop"
        (self.project / ".git").mkdir(parents=True)
        self.home.mkdir()
        out = subprocess.run([CLI, "install", "claude-code", "--home", str(self.home), "--database-url", self.url,
                              "--data-dir", str(self.root / "data"), "--user", "alice"],
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise SystemExit(f"install failed: {out.stderr}")
        settings = self.home / ".claude" / "settings.json"
        if name == "bare":
            settings.write_text(settings.read_text().replace(TERM_IGNORED, ""))
        self.env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "XDG_RUNTIME_DIR": str(self.root),
                    "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": "sk-local", "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "MCP_MEMORY_RESIDENT": resident}
        self.runs: list[dict[str, Any]] = []

    def run(self, i: int, wait: float) -> dict[str, Any]:
        session = str(uuid.uuid4())
        started = time.monotonic()
        proc = subprocess.run(["claude", "-p", f"Keep this for later.\nWRITE: fact {i} of the {self.name} runs",
                               "--session-id", session, "--allowedTools", "mcp__memory", "--output-format", "json"],
                              cwd=self.project, env=self.env, capture_output=True, text=True, timeout=300)
        exited = time.monotonic()
        stored_after = None
        while time.monotonic() < exited + wait:
            if asyncio.run(_query(self.url, EPISODES, session)):
                stored_after = time.monotonic() - exited
                break
            time.sleep(0.25)
        row = {"run": i, "exit": proc.returncode, "claude_s": round(exited - started, 2),
               "stored": stored_after is not None,
               "stored_after_exit_s": None if stored_after is None else round(stored_after, 2)}
        self.runs.append(row)
        return row

    def stop(self) -> None:
        """Our processes of this variant (a resident server, capture workers) by their environment."""
        for proc in psutil.process_iter():
            try:
                if proc.environ().get("XDG_RUNTIME_DIR") == str(self.root):
                    proc.terminate()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="claude -p runs per variant")
    parser.add_argument("--burners", type=int, default=0, help="busy loops keeping the cores loaded")
    parser.add_argument("--variants", default="installed,bare")
    parser.add_argument("--resident", default="true", help="MCP_MEMORY_RESIDENT for the windows")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for a run's turns")
    parser.add_argument("--out", type=Path, default=Path("bench/results/claude_p_capture.json"))
    args = parser.parse_args()
    if shutil.which("claude") is None:
        raise SystemExit("needs Claude Code's `claude` on PATH")
    root = Path(tempfile.mkdtemp(prefix="claude-p-capture-", dir="/tmp"))
    pg = EmbeddedPostgres(root / "pg")
    pg.start()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    variants: list[Variant] = []
    try:
        with StandIn() as model:
            variants = [Variant(v, root, pg, args.resident, model.base) for v in args.variants.split(",")]
            for i in range(args.runs):
                for variant in variants if i % 2 == 0 else variants[::-1]:
                    row = variant.run(i, args.wait)
                    print(f"{variant.name:>9} run {i}: {row}", file=sys.stderr, flush=True)
    finally:
        for proc in burners:
            proc.kill()
        for variant in variants:
            variant.stop()
        time.sleep(2)
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    summary = {}
    print(f"\n{'variant':<10} {'turns stored by own hooks':>26} {'stored after exit p50 s':>24} "
          f"{'claude -p p50 s':>16}")
    for variant in variants:
        stored = [r for r in variant.runs if r["stored"]]
        after = [r["stored_after_exit_s"] for r in stored]
        summary[variant.name] = {"runs": len(variant.runs), "stored": len(stored),
                                 "stored_after_exit_p50_s": statistics.median(after) if after else None,
                                 "claude_p50_s": statistics.median(r["claude_s"] for r in variant.runs),
                                 "runs_detail": variant.runs}
        s = summary[variant.name]
        print(f"{variant.name:<10} {len(stored):>19} of {len(variant.runs):<4} "
              f"{s['stored_after_exit_p50_s'] if after else '-':>24} {s['claude_p50_s']:>16}")
    load = os.getloadavg()
    result = {"variants": summary, "burners": args.burners, "resident": args.resident, "wait_s": args.wait,
              "claude": subprocess.run(["claude", "--version"], capture_output=True, text=True).stdout.strip(),
              "load_avg_after": [round(x, 2) for x in load], "cpus": os.cpu_count(),
              "command": " ".join(sys.argv), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
