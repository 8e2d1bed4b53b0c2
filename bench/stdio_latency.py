"""Stdio latency of `mcp-memory serve` on the embedded database.

Measures, over real subprocesses:
  * cold start to the `initialize` reply: first run (empty data directory) and later runs
    (database created, postmaster stopped), plus the first tool call on each (database ready);
  * `memory_write` and `memory_search` latency for N memories, through the SDK's stdio client.

Searches repeat ten questions (their vectors cached after the first round) and, separately, ask
questions never asked before (each one embedded).

Usage: python bench/stdio_latency.py [--memories 1000] [--searches 300] [--out bench/results/stdio_latency.json]
       python bench/stdio_latency.py --variant before=/tmp/base --variant after=.   (A/B, interleaved)

A variant is a source tree put first on the server's PYTHONPATH; the variants share one data
directory and take turns in rounds, so they see the same store and the same machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from stats import summary  # noqa: E402

SERVE = str(Path(sys.executable).with_name("mcp-memory"))
SUBJECTS = ["Alice", "The team", "Our CI", "The staging cluster", "Bob", "The billing service", "Carol",
            "The mobile app", "Dana", "The data pipeline"]
VERBS = ["prefers", "depends on", "moved to", "stopped using", "is migrating to", "documents", "owns",
         "deploys with", "was blocked by", "decided on"]
OBJECTS = ["PostgreSQL 16", "weekly releases", "the Oslo office", "Terraform modules", "green tea",
           "feature flags", "the Lisbon data centre", "pnpm workspaces", "Grafana dashboards",
           "a four-day week", "OAuth device flow", "Rust for the parser", "nightly backups", "Kafka topics"]
QUERIES = ["what does Alice prefer", "which office did the team move to", "how does CI deploy",
           "what is the billing service migrating to", "who owns the Grafana dashboards",
           "what blocked the data pipeline", "backups schedule", "Terraform", "release cadence",
           "what did Carol decide"]


def env_for(data_dir: Path, source: str | None = None) -> dict[str, str]:
    """The server's environment. The SDK's stdio client passes on only a few variables, so the
    source tree under test (PYTHONPATH) must be named here or the installed package runs."""
    env = {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER": "bench", "MCP_MEMORY_PROJECT": "bench",
           "MCP_MEMORY_LOG_LEVEL": "WARNING"}
    source = source if source is not None else os.environ.get("PYTHONPATH")
    if source:
        env["PYTHONPATH"] = str(Path(source).resolve())
    return env


def serve_args(source: str | None) -> list[str]:
    """`serve --standalone` (the server in this process, no resident one left running); a tree from
    before the resident server (issue 48's filing, adfda2f) knows no such flag: its `serve` always ran
    in process."""
    tree = Path(source) if source else None
    standalone = tree is None or (tree / "mcp_memory" / "cli_server.py").exists()
    return ["serve", "--standalone"] if standalone else ["serve"]


def rpc(proc: subprocess.Popen, message: dict) -> dict:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    while True:
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") == message["id"]:
            return reply


def cold_start(data_dir: Path) -> tuple[float, float]:
    """Seconds from spawn to the initialize reply, and to the first completed tool call."""
    started = time.perf_counter()
    # --standalone: the in-process server's cold start (a window relaying to the resident server:
    # bench/resident.py), and no resident server left running after the bench.
    proc = subprocess.Popen([SERVE, "serve", "--standalone"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **env_for(data_dir)})
    try:
        rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
        initialized = time.perf_counter() - started
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        reply = rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "memory_list", "arguments": {"limit": 1}}})
        assert not reply["result"]["isError"], reply
        ready = time.perf_counter() - started
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return initialized, ready


def fresh_query(rng: random.Random) -> str:
    """A question unlikely to have been asked before (so its vector is not cached)."""
    return f"{rng.choice(QUERIES)} {rng.choice(SUBJECTS).lower()} {rng.choice(OBJECTS)} {rng.randrange(10**6)}x"


async def tool_latency(data_dir: Path, memories: int, searches: int, source: str | None,
                       rng: random.Random, offset: int = 0) -> dict[str, list[float]]:
    """Seconds per call: `memories` writes, `searches` repeated searches, `searches` fresh ones."""
    params = StdioServerParameters(command=SERVE, args=serve_args(source), env=env_for(data_dir, source))
    times: dict[str, list[float]] = {"memory_write": [], "memory_search": [], "memory_search_fresh": []}
    async with Client(params, mode="legacy") as client:
        await client.call_tool("memory_list", {"limit": 1})  # wait for the database
        for query in QUERIES:  # steady state: the statements prepared, the query vectors cached
            await client.call_tool("memory_search", {"query": query, "limit": 10})
        for i in range(memories):
            text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {offset + i})"
            t = time.perf_counter()
            result = await client.call_tool("memory_write", {"content": text, "tags": ["bench"]})
            times["memory_write"].append(time.perf_counter() - t)
            assert not result.is_error, result.content
        for name in ("memory_search", "memory_search_fresh"):
            for i in range(searches):
                query = QUERIES[i % len(QUERIES)] if name == "memory_search" else fresh_query(rng)
                t = time.perf_counter()
                result = await client.call_tool("memory_search", {"query": query, "limit": 10})
                times[name].append(time.perf_counter() - t)
                assert not result.is_error and result.structured_content["hits"], result.content
    return times


async def compare(data_dir: Path, variants: dict[str, str | None], memories: int, searches: int,
                  rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """Each variant writes and searches in turn, `rounds` times, on the same growing store.
    Writes are measured after a first unmeasured fill to half of `memories`."""
    rng = random.Random(7)
    names = list(variants)
    written = 0
    seed = memories // 2
    await tool_latency(data_dir, seed, 0, variants[names[0]], rng)
    written += seed
    per_round = max(1, (memories - seed) // (rounds * len(names)))
    times: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            got = await tool_latency(data_dir, per_round, searches // rounds, variants[name], rng, written)
            written += per_round
            for tool, values in got.items():
                times[name].setdefault(tool, []).extend(values)
    return {n: {tool: summary(v) for tool, v in t.items()} for n, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--out", type=Path, help="default bench/results/stdio_latency.json, or stdio_latency_ab.json "
                        "for an A/B run (another layout)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=SOURCE",
                        help="compare source trees (repeat): tool latencies only, interleaved in rounds")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()

    args.out = args.out or Path(f"bench/results/stdio_latency{'_ab' if args.variant else ''}.json")
    if args.variant:
        variants = dict(v.split("=", 1) for v in args.variant)
        with tempfile.TemporaryDirectory(prefix="mcp-memory-bench-") as tmp:
            results = asyncio.run(compare(Path(tmp), variants, args.memories, args.searches, args.rounds))
        print(f"{'variant':<12}{'tool':<22}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
        for name, tools in results.items():
            for tool, s in tools.items():
                print(f"{name:<12}{tool:<22}{s['p50_ms']:>10.2f}{s['p95_ms']:>10.2f}{s['n']:>6}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"variants": variants, "rounds": args.rounds, "memories": args.memories,
                                        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                                    "load_average": os.getloadavg()},
                                        "results": results}, indent=2))
        print(f"\nwrote {args.out}")
        return

    with tempfile.TemporaryDirectory(prefix="mcp-memory-bench-") as tmp:
        data_dir = Path(tmp)
        first = cold_start(data_dir)
        later = [cold_start(data_dir) for _ in range(args.restarts)]
        times = asyncio.run(tool_latency(data_dir, args.memories, args.searches, None, random.Random(7)))
        tools = {name: summary(values) for name, values in times.items()}

    results = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "cold_start": {
            "first_run": {"initialize_ms": first[0] * 1000, "first_tool_call_ms": first[1] * 1000},
            "existing_database": {"initialize_ms": summary([x[0] for x in later]),
                                  "first_tool_call_ms": summary([x[1] for x in later])},
        },
        "tools": tools,
        "memories": args.memories,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))

    print(f"{'measure':<44}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    print(f"{'initialize reply, first run (empty data dir)':<44}{first[0] * 1000:>10.0f}{'':>10}{1:>6}")
    print(f"{'first tool call, first run (initdb+migrate)':<44}{first[1] * 1000:>10.0f}{'':>10}{1:>6}")
    for label, key in (("initialize reply, existing database", "initialize_ms"),
                       ("first tool call, existing database", "first_tool_call_ms")):
        s = results["cold_start"]["existing_database"][key]
        print(f"{label:<44}{s['p50_ms']:>10.0f}{s['p95_ms']:>10.0f}{s['n']:>6}")
    for name, s in tools.items():
        print(f"{name + f' ({args.memories} memories)':<44}{s['p50_ms']:>10.2f}{s['p95_ms']:>10.2f}{s['n']:>6}")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
