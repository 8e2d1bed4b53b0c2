"""HTTP load: concurrent clients over streamable HTTP against server processes sharing one
database, mixed search / write, for a fixed time.

Starts its own servers (`mcp-memory serve --transport http`) on one embedded database in a
temporary data directory, creates an API key with the CLI, seeds memories, then drives the load
from this process over loopback.

Usage: python bench/load_http.py [--clients 32] [--seconds 60] [--servers 2] [--write-ratio 0.2]
                                 [--think-ms 0] [--out bench/results/load_http.json]

With --think-ms 0 (the default) every client sends its next call the moment the last one
returns: a stress test whose latency is set by throughput (Little's law: clients / requests per
second). With --think-ms T each client pauses a random time (exponential, mean T) between calls,
as an agent does between tool calls: latency at that offered load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from stats import percentile  # noqa: E402
from stdio_latency import OBJECTS, QUERIES, SUBJECTS, VERBS  # noqa: E402

SERVE = str(Path(sys.executable).with_name("mcp-memory"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited")
        try:
            if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(base)


async def client_loop(base: str, key: str, deadline: float, write_ratio: float, think_s: float, seed: int,
                      samples: dict[str, list[float]], errors: list[str]) -> None:
    rng = random.Random(seed)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as client:
            n = 0
            while time.monotonic() < deadline:
                if think_s:
                    await asyncio.sleep(rng.expovariate(1 / think_s))
                n += 1
                if rng.random() < write_ratio:
                    op, args = "memory_write", {"content": f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} "
                                                           f"{rng.choice(OBJECTS)} (load {seed}-{n})"}
                else:
                    op, args = "memory_search", {"query": rng.choice(QUERIES), "limit": 10}
                started = time.perf_counter()
                try:
                    result = await client.call_tool(op, args)
                    if result.is_error:
                        errors.append(f"{op}: {result.content[0].text[:120]}")
                        continue
                except Exception as exc:  # a benchmark counts failures instead of stopping
                    errors.append(f"{op}: {type(exc).__name__}: {exc}"[:160])
                    continue
                samples[op].append(time.perf_counter() - started)


async def drive(bases: list[str], key: str, clients: int, seconds: float, write_ratio: float,
                think_s: float) -> dict:
    samples: dict[str, list[float]] = {"memory_search": [], "memory_write": []}
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    await asyncio.gather(*(client_loop(bases[i % len(bases)], key, deadline, write_ratio, think_s, i, samples,
                                       errors) for i in range(clients)))
    elapsed = time.monotonic() - started
    total = sum(len(v) for v in samples.values())
    return {
        "clients": clients, "servers": len(bases), "seconds": round(elapsed, 1), "write_ratio": write_ratio,
        "think_ms": think_s * 1000,
        "requests": total, "requests_per_s": round(total / elapsed, 1), "errors": len(errors),
        "error_samples": sorted(set(errors))[:10],
        "latency_ms": {op: {"n": len(v), "p50": statistics.median(v) * 1000 if v else None,
                            "p95": percentile(v, 95) * 1000, "p99": percentile(v, 99) * 1000}
                       for op, v in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--write-ratio", type=float, default=0.2)
    parser.add_argument("--seed-memories", type=int, default=1000)
    parser.add_argument("--think-ms", type=float, default=0, help="mean pause between a client's calls")
    parser.add_argument("--out", type=Path, default=Path("bench/results/load_http.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mcp-memory-load-") as tmp:
        # One key for every client: the per-key write limit is off so the load measures the server.
        env = {**os.environ, "MCP_MEMORY_DATA_DIR": tmp, "MCP_MEMORY_LOG_LEVEL": "WARNING",
               "MCP_MEMORY_WRITE_RATE_PER_MINUTE": "0", "MCP_MEMORY_FORGET_RATE_PER_MINUTE": "0"}
        key = subprocess.run([SERVE, "keys", "create", "--user", "load", "--projects", "bench"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
        procs, bases = [], []
        try:
            for _ in range(args.servers):
                port = free_port()
                procs.append(subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(port)], env=env,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                bases.append(f"http://127.0.0.1:{port}")
            for base, proc in zip(bases, procs, strict=True):
                wait_healthy(base, proc)
            seed_rate = asyncio.run(seed(bases[0], key, args.seed_memories))
            results = asyncio.run(drive(bases, key, args.clients, args.seconds, args.write_ratio,
                                        args.think_ms / 1000))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
    results["seeded_memories"] = args.seed_memories
    results["seed_writes_per_s"] = seed_rate
    results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))

    print(f"{args.clients} clients, {args.servers} servers, {results['seconds']} s, "
          f"{int(args.write_ratio * 100)}% writes, think {args.think_ms:g} ms: {results['requests_per_s']} requests/s, "
          f"{results['errors']} errors")
    print(f"{'operation':<16}{'n':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for op, s in results["latency_ms"].items():
        print(f"{op:<16}{s['n']:>8}{s['p50'] or 0:>10.1f}{s['p95']:>10.1f}{s['p99']:>10.1f}")
    for sample in results["error_samples"]:
        print("error:", sample)
    print(f"\nwrote {args.out}")


async def seed(base: str, key: str, count: int) -> float:
    rng = random.Random(0)
    started = time.monotonic()
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy") as client:
            for i in range(count):
                await client.call_tool("memory_write", {"content": f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} "
                                                                  f"{rng.choice(OBJECTS)} (seed {i})"})
    return round(count / (time.monotonic() - started), 1)


if __name__ == "__main__":
    main()
