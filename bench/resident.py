"""Windows and hooks through one resident server (issue 50), at 10,000 memories on the embedded store,
with the machine kept busy (`--busy` spinning processes on top of whatever else runs).

  cold window:   the first `mcp-memory serve` (MCP_MEMORY_RESIDENT unset: the default) finds no
                 resident server, starts it detached and relays to it: time to its first answer
                 (initialize) and to its first search.
  later windows: five more, one after another, each a relay to the same server: PSS of each
                 relay process (median of five), time to the first answer and the first search.
  standalone:    one `serve --standalone` (the in-process server every window was before): its
                 PSS and first answers, for comparison.
  hooks:         prompt-submit and session-start spawned as Claude Code spawns them
                 (`sh -c "mcp-memory hook <event>"`), answered by the resident server; the same with
                 the command `mcp-memory install` writes (this interpreter with -S -P: hooks_lean);
                 then cold, with no server running (the full path).

Usage: python bench/resident.py [--memories 10000] [--windows 5] [--runs 40] [--busy 3]
                                [--data-dir DIR] [--out bench/results/resident.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from hooks_latency import CLI, Bench, load  # noqa: E402

from mcp_memory import resident_client  # noqa: E402
from mcp_memory.capture.install import hook_entry  # noqa: E402

BUSY = "while True: pass"


class Window:
    """One harness window: `mcp-memory serve` over stdio, spoken to as a harness does."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([CLI, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.ids = 0

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"window pid {self.proc.pid} closed its stdout")
            reply = json.loads(line)
            if reply.get("id") == self.ids:
                return reply

    def first_answers(self) -> dict[str, float]:
        """Seconds from spawn to the initialize answer, and to the first search's."""
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "0"}})
        first = time.perf_counter() - self.started
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        reply = self.rpc("tools/call", {"name": "memory_search", "arguments": {"query": "what does the team use"}})
        assert "result" in reply and not reply["result"]["isError"], reply
        return {"initialize_s": round(first, 3), "first_search_s": round(time.perf_counter() - self.started, 3)}

    def pss_mib(self) -> float:
        return psutil.Process(self.proc.pid).memory_full_info().pss / 2**20

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


class Hooks(Bench):
    """Hooks spawned with a command line of several words (the lean entry install writes)."""

    entry: list[str] | None = None

    def spawn(self, event: str, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[bytes]]:
        if self.entry is None:
            return super().spawn(event, env)
        line = shlex.join([*self.entry, "hook", event])
        data = json.dumps(self.payload(event)).encode()
        started = time.perf_counter()
        out = subprocess.run(["sh", "-c", line], input=data, capture_output=True, env={**self.env, **(env or {})},
                             cwd=self.cwd, timeout=120)
        return time.perf_counter() - started, out


def pss_mib(pid: int) -> float:
    return psutil.Process(pid).memory_full_info().pss / 2**20


def windows(env: dict[str, str], data_dir: Path, count: int) -> dict[str, Any]:
    first = Window(env)
    cold = first.first_answers()
    status = ask(env, data_dir, "status")
    later, opened = [], [first]
    try:
        for _ in range(count):
            window = Window(env)
            opened.append(window)
            answers = window.first_answers()
            time.sleep(1.0)   # its imports settled
            later.append({**answers, "pss_mib": round(window.pss_mib(), 1)})
        status = ask(env, data_dir, "status")
        resident_pss = pss_mib(status["pid"])
        out = {"cold": {**cold, "pss_mib": round(first.pss_mib(), 1)}, "later": later,
               "later_median": {k: statistics.median(w[k] for w in later) for k in later[0]},
               "resident": {"pid": status["pid"], "windows": status["windows"], "pss_mib": round(resident_pss, 1)},
               "load_average": round(os.getloadavg()[0], 1)}
    finally:
        for window in opened:
            window.close()
    return out


def standalone(env: dict[str, str]) -> dict[str, Any]:
    window = Window(env, "--standalone")
    try:
        answers = window.first_answers()
        time.sleep(2.0)
        return {**answers, "pss_mib": round(window.pss_mib(), 1), "load_average": round(os.getloadavg()[0], 1)}
    finally:
        window.close()


def ask(env: dict[str, str], data_dir: Path, kind: str) -> dict[str, Any]:
    old = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR",)}
    if "XDG_RUNTIME_DIR" in env:
        os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
    try:
        reply = resident_client.request(kind, None, str(data_dir))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if reply is None and kind == "status":
        raise SystemExit("no resident server answers")
    return reply or {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--windows", type=int, default=5, help="windows after the first")
    parser.add_argument("--runs", type=int, default=40, help="hooks per event, warm")
    parser.add_argument("--cold-runs", type=int, default=8, help="hooks per event, cold")
    parser.add_argument("--busy", type=int, default=3, help="spinning processes added for the whole run")
    parser.add_argument("--data-dir", type=Path, help="keep the store here and reuse it on the next run")
    parser.add_argument("--out", type=Path, default=Path("bench/results/resident.json"))
    args = parser.parse_args()
    busy: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-resident-", ignore_cleanup_errors=True) as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        load_s = asyncio.run(load(data_dir, args.memories))
        bench = Hooks(data_dir, Path(tmp), CLI)
        env = dict(bench.env)   # MCP_MEMORY_RESIDENT unset: the default, relay and start
        results: dict[str, Any] = {"memories": args.memories, "load_s": round(load_s, 1), "busy": args.busy}
        try:
            busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
            time.sleep(5)
            results["windows"] = windows(env, data_dir, args.windows)
            # The windows are closed; the resident server stays and answers the hooks.
            results["hooks"] = {event: bench.series(event, args.runs, 0.1)
                                for event in ("prompt-submit", "session-start")}
            # What a hook must start at all: the command install writes, the same entry point in an
            # interpreter that skips `site` (-S), the package's folder put on sys.path directly.
            bench.entry = hook_entry(CLI)
            results["hooks_lean"] = {event: bench.series(event, args.runs, 0.1)
                                     for event in ("prompt-submit", "session-start")}
            bench.entry = None
            status = ask(env, data_dir, "status")
            results["resident_after_hooks"] = {"pid": status["pid"], "pss_mib": round(pss_mib(status["pid"]), 1)}
            ask(env, data_dir, "stop")
            deadline = time.monotonic() + 60
            while psutil.pid_exists(status["pid"]) and time.monotonic() < deadline:
                time.sleep(0.2)
            results["standalone"] = standalone(env)
            results["cold_hooks"] = {event: bench.series(event, args.cold_runs, 0.1)
                                     for event in ("prompt-submit", "session-start")}
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
            reply = resident_client.request("stop", None, str(data_dir))
            if reply:
                time.sleep(3)
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    report(results)
    print(f"\nwrote {args.out}")


def report(r: dict[str, Any]) -> None:
    w = r["windows"]
    print(f"{r['memories']:,} memories, {r['busy']} busy processes added; load average at the windows "
          f"{w['load_average']}, at the end {r['machine']['load_average']}")
    print(f"{'window':<28}{'first answer':>13}{'first search':>13}{'PSS MiB':>9}")
    print(f"{'first (starts the resident)':<28}{w['cold']['initialize_s']:>12.2f}s{w['cold']['first_search_s']:>12.2f}s"
          f"{w['cold']['pss_mib']:>9.1f}")
    for i, later in enumerate(w["later"], 2):
        print(f"{f'window {i} (relay)':<28}{later['initialize_s']:>12.2f}s{later['first_search_s']:>12.2f}s"
              f"{later['pss_mib']:>9.1f}")
    m = w["later_median"]
    print(f"{'median of later windows':<28}{m['initialize_s']:>12.2f}s{m['first_search_s']:>12.2f}s"
          f"{m['pss_mib']:>9.1f}")
    s = r["standalone"]
    print(f"{'standalone (in-process)':<28}{s['initialize_s']:>12.2f}s{s['first_search_s']:>12.2f}s"
          f"{s['pss_mib']:>9.1f}")
    print(f"resident server: PSS {w['resident']['pss_mib']} MiB with {w['resident']['windows']} windows, "
          f"{r['resident_after_hooks']['pss_mib']} MiB after the hooks")
    print(f"\n{'hook':<16}{'warm p50':>9}{'p95':>6}{'floor p50':>10}{'n':>4}{'load':>6}"
          f"{'cold p50':>10}{'p95':>6}{'n':>4}{'no ctx w/c':>12}")
    for event, h in r["hooks"].items():
        c = r["cold_hooks"][event]
        print(f"{event:<16}{h['p50_ms']:>9.0f}{h['p95_ms']:>6.0f}{h['floor']['p50_ms']:>10.0f}{h['n']:>4}"
              f"{h['load_average']:>6}{c['p50_ms']:>10.0f}{c['p95_ms']:>6.0f}{c['n']:>4}"
              f"{h['without_context']:>6}/{c['without_context']:<5}")
        for line in h["stderr"]:
            print(f"  warm {event} stderr: {line}")
    for event, h in r.get("hooks_lean", {}).items():
        print(f"{event + ' -S':<16}{h['p50_ms']:>9.0f}{h['p95_ms']:>6.0f}{h['floor']['p50_ms']:>10.0f}{h['n']:>4}"
              f"{h['load_average']:>6}   (the command install writes: python -S -P)")
        for line in h["stderr"]:
            print(f"  lean {event} stderr: {line}")


if __name__ == "__main__":
    main()
