"""Extraction's cost where the model is free: a captured session's turns become one extraction job
whose facts are written and decided like any write. Against the instant local chat-completions
endpoint of decisions_throughput.py (an extraction makes one fact of each user turn, a decision
replaces the first candidate), so what is measured is ours: capture with extraction on against
off (trigger patterns), and turns/s through the queue: everything a capture queued (the
episodes' own decisions, the extraction, its facts' decisions), and extraction alone (the
episodes' decisions cancelled first).

    python bench/extraction_throughput.py [--sessions 20] [--turns 10] [--workers 1 2] [--repeat 3]
                                          [--database-url URL]

Prints a table and writes bench/results/extraction_throughput.json."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from decisions_throughput import CITIES, NAMES, Instant, drained, queue_options  # noqa: E402
from locomo import bench_database, bench_principal, latency, machine, table  # noqa: E402

from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.transcripts import parse_text  # noqa: E402
from mcp_memory.decisions import provider_from  # noqa: E402
from mcp_memory.decisions.jobs import DecisionWorker  # noqa: E402


def session(i: int, turns: int, tag: str) -> Any:
    """A session of `turns` turns, user and assistant in turn; each user turn states a fact."""
    lines = []
    for t in range(turns // 2):
        name, city = NAMES[(i + t) % len(NAMES)], CITIES[(i * 3 + t) % len(CITIES)]
        # Each turn its own text: a turn stored once for two sessions would end both deltas alike.
        lines += [f"User: {name} {i}-{t} moved to {city} ({tag}).", f"Assistant: Noted, {name} {i}-{t} ({tag})."]
    transcript = parse_text("\n".join(lines) + "\n")
    transcript.session_id = f"{tag}-{i}"
    return transcript


async def main_async(args: argparse.Namespace) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Instant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    rows: list[list[Any]] = []
    report: dict[str, Any] = {"benchmark": "extraction_throughput", "sessions": args.sessions, "turns": args.turns,
                              "capture": {}, "throughput": []}
    async with bench_database(args.database_url, "extraction") as bench:
        on = bench.settings.model_copy(update=dict(
            decisions_provider="openai-compatible", decisions_base_url=url, decisions_model="instant",
            decisions_mode="async", decisions_per_minute=0, decisions_tokens_per_day=0, decisions_retry_base_s=0,
            extraction_per_session=0, extraction_per_day=0))
        await bench.service().vectors.query("warm up")
        # Capture with extraction on (one job queued) and off (trigger patterns), session by
        # session in turn, so the machine's moods fall on both alike.
        modes = {label: (Capturer(bench.service(settings), settings, "bench"), bench_principal(f"capture-{label}"))
                 for label, settings in (("on", on), ("off", on.model_copy(update={"extraction": False})))}
        times: dict[str, list[float]] = {label: [] for label in modes}
        for i in range(args.sessions):
            for label, (capturer, p) in modes.items():
                t = time.perf_counter()
                await capturer.capture(p, session(i, args.turns, f"capture-{label}"), key=f"bench:{label}:{i}")
                times[label].append(time.perf_counter() - t)
        for label in modes:
            stats = latency(times[label])
            report["capture"][label] = stats
            rows.append([f"capture {args.turns} turns, extraction {label}", stats["n"], stats["p50_ms"],
                         stats["p95_ms"], "", ""])
        service = bench.service(on)
        capturer = Capturer(service, on, "bench")
        # What the captures above queued, out of the way (and the SDK's client warm) before timing.
        await drained(bench.admin, [DecisionWorker(bench.admin, service, provider_from(on), on, name="warm")], 1)
        for n_workers in args.workers:
            for what in ("everything queued", "extraction alone"):
                rates, jobs_rates = [], []
                for run in range(args.repeat):  # the median of several: the machine is shared
                    p = bench_principal(f"drain-{n_workers}-{what[:5]}-{run}")
                    for i in range(args.sessions):
                        await capturer.capture(p, session(i, args.turns, p.user_id), key=f"bench:{p.user_id}:{i}")
                    if what == "extraction alone":  # the episodes' own decisions out of the way
                        await bench.admin.execute("UPDATE memory_jobs SET status = 'cancelled' "
                                                  "WHERE user_id = $1 AND kind = 'decide'", p.user_id)
                    workers = [DecisionWorker(bench.admin, service, provider_from(on), on, name=f"w{i}")
                               for i in range(n_workers)]
                    done, seconds = await drained(bench.admin, workers, 1)
                    counts = await bench.admin.fetchrow(
                        """SELECT count(*) FILTER (WHERE kind = 'extract' AND status = 'done') AS extracted,
                                  count(*) FILTER (WHERE kind = 'decide' AND status = 'done') AS decided,
                                  coalesce(sum((result->>'facts')::int) FILTER (WHERE kind = 'extract'), 0) AS facts
                           FROM memory_jobs WHERE user_id = $1""", p.user_id)
                    rates.append(args.sessions * args.turns / seconds)
                    jobs_rates.append(done / seconds)
                per_s = round(statistics.median(rates), 1)
                report["throughput"].append({"workers": n_workers, "drained": what, "turns": args.sessions * args.turns,
                                             "extraction_jobs": counts["extracted"], "decisions": counts["decided"],
                                             "facts": counts["facts"], "turns_per_s": per_s,
                                             "jobs_per_s": round(statistics.median(jobs_rates), 1),
                                             "runs": [round(r, 1) for r in rates]})
                rows.append([f"drain, {what}, {n_workers} worker(s)", done, "", "", per_s,
                             round(statistics.median(jobs_rates), 1)])
    server.shutdown()
    report |= {"machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["path", "n", "p50 ms", "p95 ms", "turns/s", "jobs/s"], rows, first_width=40))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per session (user and assistant in turn)")
    asyncio.run(main_async(queue_options(parser, "extraction_throughput")))


if __name__ == "__main__":
    main()
