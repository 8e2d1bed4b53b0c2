"""Throughput over HTTP side by side with the peer (doobidoo mcp-memory-service 12.4.0): 32
concurrent MCP clients over streamable HTTP, searches/s and writes/s with p50 / p95, our server and
the peer's own MCP-over-HTTP server on the same machine in one run, same data, same queries.

The peer's HTTP server is `memory server --streamable-http` (its utils/startup_orchestrator.py:
the MCP SDK's StreamableHTTPSessionManager, stateless, under uvicorn, one process; `/mcp` gated by
MCP_API_KEY, which it takes as a bearer token), on a fresh sqlite-vec file with the same int8
MiniLM ONNX file we use and its best search (hybrid, RRF): see bench/peer_doobidoo.py. Its other
HTTP server (`--http`, FastAPI REST + dashboard) is not MCP, so it is not the one measured.
Ours: `mcp-memory serve --transport http` (--servers processes on one embedded PostgreSQL), an
API key from `mcp-memory keys create`, the per-key write limit off (one key for every client).

Protocol:
  * LoCoMo turns (DATASET, read at run time, never stored: CC BY-NC 4.0, evaluation only),
    shuffled with --seed: the first --seed-memories are written into both stores before any
    timing (ours through memory_write_many, the peer one memory_store per turn, 8 at a time), the
    rest are the texts of the timed writes; the queries are the dataset's questions;
  * both servers run for the whole run; each phase drives one of them with --clients clients
    (one MCP session each, connected before the clock starts) for --seconds, every client sending
    its next call the moment the last returns (stress: throughput, and latency set by it). Phases
    go search then write, --rounds times, the side that goes first alternating; between phases the
    machine rests --rest seconds;
  * client i of round r draws from Random(seed, r, i): the same query and write sequences on both
    sides (the faster side gets further along them). A write's text is a held-out turn plus a
    marker "(note r.i.k)" so no write repeats a stored text (the peer refuses those);
  * CPU seconds of each server (ours: its Python processes alone, and with PostgreSQL's), of this
    client process and of the whole machine are read per phase (psutil), to say what limits a run
    on this machine.

Usage:
  python bench/http_side_by_side.py [DATASET] [--clients 32] [--seconds 30] [--rounds 2]
        [--servers 1] [--seed-memories 2000] [--rest 5] [--peer-dir /tmp/peer-doobidoo]
        [--out bench/results/http_side_by_side.json] [--profile DIR] [--ab VAR=VALUE ...] [--no-peer]
  an A/B of one of our settings, interleaved the same way (no peer):
    python bench/http_side_by_side.py --no-peer --ab MCP_MEMORY_API_KEY_CACHE_S=0
  DATASET defaults to ../shared/datasets/locomo/locomo10-dev.json (2,960 turns, 1,020 questions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
import peer_doobidoo as peer  # noqa: E402
from load_http import SERVE, free_port, wait_healthy  # noqa: E402
from locomo import load_dataset  # noqa: E402
from locomo_data import turn_text  # noqa: E402
from stats import percentile  # noqa: E402

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared/datasets/locomo/locomo10-dev.json"
OPS = ("search", "write")
LIMIT = 10


class Side:
    """One server under test: its base URL, bearer token, processes and the calls it takes."""

    def __init__(self, name: str, base: list[str], token: str, procs: list[subprocess.Popen]) -> None:
        self.name, self.bases, self.token, self.procs = name, base, token, procs
        self.pg_dir: Path | None = None  # ours: where postmaster.pid is

    def call(self, op: str, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.name == "peer":
            if op == "search":
                return "memory_search", peer.search_arguments(item["query"], LIMIT)
            return "memory_store", peer.write_arguments(item["content"], item["conversation"])
        if op == "search":
            return "memory_search", {"query": item["query"], "limit": LIMIT}
        return "memory_write", {"content": item["content"], "kind": "episode", "occurred_at": item["when"],
                                "metadata": {"dia_id": item["dia_id"], "conversation": item["conversation"]}}

    def check(self, op: str, result: Any) -> None:
        """Raise unless the reply is a success of its kind (a search with hits, a stored write)."""
        if self.name == "peer":
            if op == "search":
                if not peer.hit_hashes(result):
                    raise RuntimeError("peer search: no hits")
            else:
                peer.stored_hash(result)
            return
        if result.is_error:
            raise RuntimeError(peer.text_of(result)[:200])
        out = result.structured_content
        if op == "search" and not out["hits"]:
            raise RuntimeError("search: no hits")
        if op == "write" and out["status"] != "created":
            raise RuntimeError(f"write: status {out['status']}")

    def processes(self) -> list[psutil.Process]:
        """Server processes, and for ours the embedded postmaster and its backends."""
        out = [psutil.Process(p.pid) for p in self.procs]
        if self.pg_dir is not None:
            for pid_file in self.pg_dir.rglob("postmaster.pid"):
                master = psutil.Process(int(pid_file.read_text().split()[0]))
                out += [master, *master.children()]
        return out


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    seen = {}
    for p in procs:
        try:
            t = p.cpu_times()
            seen[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return seen


def busy(times: Any) -> float:
    return sum(times) - times.idle - times.iowait


def load_data(path: Path, seed_count: int, seed: int) -> tuple[list[dict], list[dict], list[str]]:
    items, questions = [], []
    for conv in load_dataset(path, None):
        questions += [str(q["question"]) for q in conv.questions]
        for _, when, turns in conv.sessions:
            items += [{"content": turn_text(t), "when": when.isoformat(), "dia_id": t["dia_id"],
                       "conversation": conv.sample_id} for t in turns]
    random.Random(seed).shuffle(items)
    if seed_count >= len(items):
        raise SystemExit(f"--seed-memories: {seed_count} leaves no turns for timed writes ({len(items)} in all)")
    return items[:seed_count], items[seed_count:], questions


def session(base: str, token: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy")


async def seed_side(side: Side, items: list[dict], concurrency: int = 8, batch: int = 50) -> float:
    started = time.monotonic()
    if side.name == "ours":
        http, client = session(side.bases[0], side.token)
        async with http, client:
            for i in range(0, len(items), batch):
                chunk = [side.call("write", it)[1] for it in items[i:i + batch]]
                result = await client.call_tool("memory_write_many", {"items": chunk})
                if result.is_error:
                    raise RuntimeError(f"seed: {peer.text_of(result)[:300]}")
    else:
        async def worker(part: list[dict]) -> None:
            http, client = session(side.bases[0], side.token)
            async with http, client:
                for it in part:
                    side.check("write", await client.call_tool(*side.call("write", it)))
        await asyncio.gather(*(worker(items[k::concurrency]) for k in range(concurrency)))
    return round(len(items) / (time.monotonic() - started), 1)


async def phase(side: Side, op: str, rnd: int, args: argparse.Namespace, pick: Callable[[random.Random, int], dict],
                others: list[psutil.Process]) -> dict[str, Any]:
    """--clients clients on one side for --seconds: latencies, errors, CPU seconds by whom."""
    samples: list[float] = []
    errors: list[str] = []
    go = asyncio.Event()
    ready = 0
    deadline = 0.0

    async def client_loop(i: int) -> None:
        nonlocal ready
        rng = random.Random(f"{args.seed}-{rnd}-{i}")
        http, client = session(side.bases[i % len(side.bases)], side.token)
        async with http, client:
            ready += 1
            await go.wait()
            k = 0
            while time.monotonic() < deadline:
                item = pick(rng, k)
                if op == "write":
                    item = {**item, "content": f"{item['content']} (note {rnd}.{i}.{k})"}
                k += 1
                started = time.perf_counter()
                try:
                    side.check(op, await client.call_tool(*side.call(op, item)))
                except Exception as exc:  # a benchmark counts failures instead of stopping
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                    continue
                samples.append(time.perf_counter() - started)

    tasks = [asyncio.create_task(client_loop(i)) for i in range(args.clients)]
    while ready < args.clients:
        await asyncio.sleep(0.05)
        if any(t.done() for t in tasks):
            await asyncio.gather(*tasks)  # a client that could not connect: raise its error
    server = side.processes()
    # a profiler beside the load, started before the clock
    spies = [subprocess.Popen(["py-spy", "record", "--pid", str(proc.pid), "--duration",  # noqa: ASYNC220
                               str(int(args.seconds)), "--format", "raw", "--nonblocking", "--rate", "50",
                               "-o", str(args.profile / f"{side.name}-{op}-{rnd}-{proc.pid}.txt")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for proc in side.procs] if args.profile else []
    before = (cpu_seconds(server), cpu_seconds(others), time.process_time(), psutil.cpu_times())
    started = time.monotonic()
    deadline = started + args.seconds
    go.set()
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    for spy in spies:
        spy.wait()
    server_after = cpu_seconds(side.processes())
    after = (server_after, cpu_seconds(others), time.process_time(), psutil.cpu_times())
    machine_busy = busy(after[3]) - busy(before[3])
    server_cpu = sum(v - before[0].get(pid, 0.0) for pid, v in after[0].items())
    servers = {p.pid for p in side.procs}  # the side's own processes, PostgreSQL's left out
    python_cpu = sum(v - before[0].get(pid, 0.0) for pid, v in after[0].items() if pid in servers)
    other_side_cpu = sum(v - before[1].get(pid, 0.0) for pid, v in after[1].items())
    client_cpu = after[2] - before[2]
    return {
        "side": side.name, "op": op, "round": rnd, "seconds": round(elapsed, 2), "calls": len(samples),
        "per_s": round(len(samples) / elapsed, 1), "errors": len(errors), "error_samples": sorted(set(errors))[:5],
        "latency_ms": [round(s * 1000, 2) for s in samples],
        "cpu_s": {"server": round(server_cpu, 1), "server_python": round(python_cpu, 1),
                  "other_side": round(other_side_cpu, 1), "client": round(client_cpu, 1),
                  "machine": round(machine_busy, 1),
                  "rest_of_machine": round(machine_busy - server_cpu - other_side_cpu - client_cpu, 1)},
        "load_1m": round(os.getloadavg()[0], 2),
    }


def start_ours(name: str, tmp: Path, servers: int, extra: dict[str, str]) -> Side:
    env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(tmp), "MCP_MEMORY_LOG_LEVEL": "WARNING",
           "MCP_MEMORY_WRITE_RATE_PER_MINUTE": "0", "MCP_MEMORY_FORGET_RATE_PER_MINUTE": "0", **extra}
    key = subprocess.run([SERVE, "keys", "create", "--user", "bench", "--projects", "bench"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    ports = [free_port() for _ in range(servers)]
    procs = [subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(p)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in ports]
    side = Side(name, [f"http://127.0.0.1:{p}" for p in ports], key, procs)
    side.pg_dir = tmp
    return side


def start_peer(peer_dir: Path, store: Path) -> Side:
    params = peer.server_params(peer_dir, store)
    port = free_port()
    token = secrets.token_urlsafe(24)
    env = {**params.env, "MCP_API_KEY": token, "MCP_SSE_HOST": "127.0.0.1", "MCP_SSE_PORT": str(port)}
    proc = subprocess.Popen([params.command, "server", "--streamable-http"], env=env, cwd=params.cwd,
                            stdout=subprocess.DEVNULL, stderr=open(store / "peer.log", "w"))
    return Side("peer", [f"http://127.0.0.1:{port}"], token, [proc])


def summarize(phases: list[dict], side: str, op: str) -> dict[str, Any]:
    mine = [p for p in phases if p["side"] == side and p["op"] == op]
    lat = [x for p in mine for x in p["latency_ms"]]
    secs = sum(p["seconds"] for p in mine)
    return {"calls": len(lat), "per_s": round(len(lat) / secs, 1) if secs else 0.0,
            "p50_ms": round(statistics.median(lat), 1) if lat else None, "p95_ms": round(percentile(lat, 95), 1),
            "p99_ms": round(percentile(lat, 99), 1), "errors": sum(p["errors"] for p in mine),
            "per_s_by_round": [p["per_s"] for p in mine],
            "cpu_s_per_call": {k: round(sum(p["cpu_s"][k] for p in mine) / max(1, len(lat)) * 1000, 2)
                               for k in ("server", "server_python", "client", "rest_of_machine")}}


async def run(args: argparse.Namespace, sides: dict[str, Side], seeded: list[dict], writes: list[dict],
              questions: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"seed_per_s": {}}
    for name, side in sides.items():
        out["seed_per_s"][name] = await seed_side(side, seeded)
        print(f"  seeded {name}: {out['seed_per_s'][name]} memories/s", file=sys.stderr, flush=True)
    for side in sides.values():  # model loaded, first plans made: untimed
        http, client = session(side.bases[0], side.token)
        async with http, client:
            for q in questions[:5]:
                side.check("search", await client.call_tool(*side.call("search", {"query": q})))
    pickers = {"search": lambda rng, k: {"query": rng.choice(questions)},
               "write": lambda rng, k: writes[rng.randrange(len(writes))]}
    names = list(sides)
    phases = []
    for rnd in range(args.rounds):
        for j, op in enumerate(OPS):
            turn = (rnd + j) % len(names)  # who goes first rotates
            for name in names[turn:] + names[:turn]:
                await asyncio.sleep(args.rest)
                others = [p for n, s in sides.items() if n != name for p in s.processes()]
                result = await phase(sides[name], op, rnd, args, pickers[op], others)
                phases.append(result)
                print(f"  round {rnd} {op:<6} {name:<4} {result['per_s']:>7}/s  errors {result['errors']}  "
                      f"load {result['load_1m']}  cpu s: {result['cpu_s']}", file=sys.stderr, flush=True)
    out["phases"] = phases
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, nargs="?", default=DEFAULT_DATASET)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--servers", type=int, default=1, help="our server processes (the peer runs one)")
    parser.add_argument("--seed-memories", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rest", type=float, default=5, help="seconds between phases")
    parser.add_argument("--peer-dir", type=Path, default=peer.DEFAULT_DIR)
    parser.add_argument("--out", type=Path, default=Path("bench/results/http_side_by_side.json"))
    parser.add_argument("--ab", action="append", default=[], metavar="VAR=VALUE",
                        help="also run ours with this environment variable set (repeatable): an interleaved A/B")
    parser.add_argument("--no-peer", action="store_true", help="ours (and --ab variants) only")
    parser.add_argument("--profile", type=Path, help="py-spy each server during its phases (raw stacks here)")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    seeded, writes, questions = load_data(args.dataset, args.seed_memories, args.seed)
    variants = {"ours": {}} | {f"ours[{v}]": dict([v.split("=", 1)]) for v in args.ab}
    with tempfile.TemporaryDirectory(prefix="http-sbs-") as tmp:
        sides: dict[str, Side] = {}
        try:
            if not args.no_peer:
                Path(tmp, "peer").mkdir()
                sides["peer"] = start_peer(args.peer_dir, Path(tmp, "peer"))
            for k, (name, extra) in enumerate(variants.items()):
                Path(tmp, f"ours{k}").mkdir()
                sides[name] = start_ours(name, Path(tmp, f"ours{k}"), args.servers, extra)
            for side in sides.values():
                for base, proc in zip(side.bases, side.procs, strict=True):
                    wait_healthy(base, proc)
            results = asyncio.run(run(args, sides, seeded, writes, questions))
        finally:
            for side in sides.values():
                for proc in side.procs:
                    proc.terminate()
            for side in sides.values():
                for proc in side.procs:
                    proc.wait(timeout=60)
    summary = {name: {op: summarize(results["phases"], name, op) for op in OPS} for name in sides}
    ratios = {f"ours / {other}": {op: {
        "per_s": round(summary["ours"][op]["per_s"] / summary[other][op]["per_s"], 2),
        "p50": round(summary[other][op]["p50_ms"] / summary["ours"][op]["p50_ms"], 2),
        "p95": round(summary[other][op]["p95_ms"] / summary["ours"][op]["p95_ms"], 2)} for op in OPS}
        for other in sides if other != "ours"}
    report = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "peer_version": peer.version(args.peer_dir), "machine": {"cpus": os.cpu_count()},
              "queries": len(questions), "seeded": len(seeded), "write_pool": len(writes),
              "seed_per_s": results["seed_per_s"], "summary": summary, "ratios": ratios,
              "phases": [{k: v for k, v in p.items() if k != "latency_ms"} for p in results["phases"]]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{args.clients} clients over streamable HTTP, {args.rounds} x {args.seconds:g} s per side and operation, "
          f"{len(seeded)} memories seeded, ours {args.servers} process(es), peer {report['peer_version']}")
    width = max(6, *(len(n) + 2 for n in sides))
    print(f"{'side':<{width}}{'op':<8}{'calls':>8}{'per s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>8}"
          "  CPU ms per call: server (its Python alone) / client / rest of machine")
    for name in sides:
        for op in OPS:
            x = summary[name][op]
            c = x["cpu_s_per_call"]
            print(f"{name:<{width}}{op:<8}{x['calls']:>8}{x['per_s']:>9}{x['p50_ms'] or 0:>9}{x['p95_ms']:>9}"
                  f"{x['p99_ms']:>9}{x['errors']:>8}  {c['server']} ({c['server_python']}) / {c['client']} / "
                  f"{c['rest_of_machine']}")
    for pair, by_op in ratios.items():
        for op, r in by_op.items():
            print(f"{pair} {op}: {r['per_s']}x per second, p50 {r['p50']}x, p95 {r['p95']}x faster")
    print(f"\nwrote {args.out}")

if __name__ == "__main__":
    main()
