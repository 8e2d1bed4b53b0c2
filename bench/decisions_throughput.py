"""Decisions' cost where the model is free: write latency with decisions off, async (the write
only queues its job) and sync (the write waits for its decision), and jobs/s through the queue,
singly written and from one batch, against an instant local chat-completions endpoint (it answers
UPDATE for the first candidate at once), so what is measured is ours: candidates, the prompt, the
SDK's round trip on loopback, applying in one transaction.

    python bench/decisions_throughput.py [--memories 200] [--workers 1 2] [--repeat 3] [--database-url URL]

Prints a table and writes bench/results/decisions_throughput.json."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, bench_database, bench_principal, latency, machine, table  # noqa: E402

from mcp_memory.decisions import provider_from, runtime, second_look  # noqa: E402
from mcp_memory.decisions.jobs import DecisionWorker  # noqa: E402
from mcp_memory.models import WriteItem  # noqa: E402

NAMES = ["Amara", "Bastian", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiroshi", "Ingrid", "Joaquin"]
CITIES = ["Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Porto", "Ghent"]


class Instant(BaseHTTPRequestHandler):
    """POST /v1/chat/completions, answered at once: a decision is UPDATE of the first candidate,
    confirmed on a second look (mcp_memory/decisions/second_look.py: on for an endpoint on
    loopback); an extraction (bench/extraction_throughput.py) makes one fact of each user turn."""

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        content = "Yes" if system == second_look.SYSTEM else json.dumps(
            extraction_answer(user) if "worth remembering" in system else
            {"action": "UPDATE", "ids": ["1"], "reason": "newer"})
        body = json.dumps({"id": "b", "object": "chat.completion", "created": 0, "model": "instant",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def extraction_answer(user: str) -> dict[str, Any]:
    """Each turn the user spoke ("User: Amara 0 moved to Oslo.") is one fact, with its label."""
    turns = [json.loads(line) for line in user.splitlines() if line.startswith("{")]
    return {"facts": [{"text": t["text"].partition(": ")[2], "kind": "fact", "turns": [t["label"]]}
                      for t in turns if t["text"].startswith("User: ")]}


def facts(n: int, round_: int) -> list[str]:
    """n facts, one per person; round_ > 0 moves each person to another city."""
    return [f"{NAMES[i % len(NAMES)]} {i // len(NAMES)} lives in {CITIES[(i + 3 * round_) % len(CITIES)]}"
            f"{' now' if round_ else ''}." for i in range(n)]


async def drained(admin: Any, workers: list[DecisionWorker], per_worker: int) -> tuple[int, float]:
    """Run the workers until the queue is empty: (jobs done, seconds)."""
    done = 0
    started = time.perf_counter()

    async def loop(w: DecisionWorker, name: str) -> None:
        nonlocal done
        while await w.run_once(name):
            done += 1

    await asyncio.gather(*(loop(w, f"{w.name}/{i}") for w in workers for i in range(per_worker)))
    return done, time.perf_counter() - started


async def main_async(args: argparse.Namespace) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Instant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    rows: list[list[Any]] = []
    report: dict[str, Any] = {"benchmark": "decisions_throughput", "memories": args.memories, "latency": {},
                              "throughput": []}
    async with bench_database(args.database_url, "decisions") as bench:
        on = bench.settings.model_copy(update=dict(
            decisions_provider="openai-compatible", decisions_base_url=url, decisions_model="instant",
            decisions_per_minute=0, decisions_tokens_per_day=0, decisions_retry_base_s=0))
        await bench.service().vectors.query("warm up")
        # The three modes take turns write by write, so a cold cache or a neighbour's burst on
        # the machine falls on all of them alike.
        modes: list[tuple[str, Any, Any, Any]] = []
        for label, mode in (("off", None), ("async", "async"), ("sync", "sync")):
            settings = on.model_copy(update={"decisions_mode": mode}) if mode else bench.settings
            workers = runtime.workers_for(bench.admin, settings) if mode else None
            service = bench.service(settings, workers)  # its writes tell the worker, as in a server
            worker = workers.worker if workers is not None else None
            p = bench_principal(f"latency-{label}")
            await service.write_many(p, [WriteItem(content=c) for c in facts(args.memories, 0)])
            if worker is not None:
                await drained(bench.admin, [worker], 1)
            await service.write(p, "A warm-up note about nothing in particular.")
            modes.append((label, service, worker, p))
        times: dict[str, list[float]] = {label: [] for label, *_ in modes}
        for text in facts(args.memories, 1):
            for label, service, _, p in modes:
                mine = f"{text[:-1]}, says the {label} run."  # its own text: no embedding cached by another mode
                t = time.perf_counter()
                await service.write(p, mine)
                times[label].append(time.perf_counter() - t)
        for label, _, worker, _ in modes:
            if worker is not None:
                await drained(bench.admin, [worker], 1)
            stats = latency(times[label])
            report["latency"][label] = stats
            rows.append([f"write, decisions {label}", stats["n"], stats["p50_ms"], stats["p95_ms"], ""])
        for n_workers in args.workers:
            for how in ("single writes", "one batch"):
                rates, asked = [], 0
                for run in range(args.repeat):  # the median of several: the machine is shared
                    service = bench.service(on)
                    p = bench_principal(f"throughput-{n_workers}-{how[:3]}-{run}")
                    await service.write_many(p, [WriteItem(content=c) for c in facts(args.memories, 0)])
                    worker = DecisionWorker(bench.admin, service, provider_from(on), on, name="warm")
                    await drained(bench.admin, [worker], 1)
                    updates = facts(args.memories, 1)
                    since = await bench.admin.fetchval("SELECT clock_timestamp()")
                    if how == "one batch":
                        await service.write_many(p, [WriteItem(content=c) for c in updates])
                    else:
                        for text in updates:
                            await service.write(p, text)
                    workers = [DecisionWorker(bench.admin, service, provider_from(on), on, name=f"w{i}")
                               for i in range(n_workers)]
                    done, seconds = await drained(bench.admin, workers, 1)
                    asked = await bench.admin.fetchval(
                        "SELECT count(*) FROM memory_jobs WHERE user_id = $1 AND result->>'provider' <> 'none' "
                        "AND created_at >= $2", p.user_id, since)
                    rates.append(done / seconds)
                per_s = round(statistics.median(rates), 1)
                report["throughput"].append({"workers": n_workers, "written": how, "jobs": done,
                                             "put_to_model": asked, "jobs_per_s": per_s,
                                             "runs": [round(r, 1) for r in rates]})
                rows.append([f"drain, {how}, {n_workers} worker(s)", done, "", "", per_s])
    server.shutdown()
    report |= {"machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["path", "n", "p50 ms", "p95 ms", "jobs/s"], rows, first_width=32))
    print(f"wrote {args.out}")


def queue_options(parser: argparse.ArgumentParser, name: str) -> argparse.Namespace:
    """The options of the benchmarks that drain the queue (this one, extraction_throughput.py)."""
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="runs per throughput row (the median is shown)")
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"{name}.json")
    return parser.parse_args()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    asyncio.run(main_async(queue_options(parser, "decisions_throughput")))


if __name__ == "__main__":
    main()
