"""Benchmark mode with model decisions (issue 17): memories are written in the order they
happened, each gets a decision job, and the queue is drained through a real endpoint before the
questions are asked, so search sees what the model superseded or forgot.

    python bench/knowledge_update.py --repeat 1 \\
        --decisions openai-compatible --base-url http://localhost:11434/v1 --model qwen2.5:7b-instruct

What leaves the machine: for every written memory that has older memories close to it, the
prompt of mcp_memory/decisions/prompting.py with that memory's text and up to five of those
older memories' texts (the dataset's synthetic facts), sent to --base-url."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from typing import Any

from mcp_memory.config import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decisions", choices=("none", "openai-compatible"), default="none",
                        help="let a model decide what each new memory does to older ones before searching")
    parser.add_argument("--base-url", help="chat-completions endpoint for --decisions (default api.openai.com)")
    parser.add_argument("--model", help="model for --decisions")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the endpoint's key (default OPENAI_API_KEY)")


def settings_for(args: argparse.Namespace, base: Settings) -> Settings:
    if args.decisions == "none":
        return base
    if not args.model:
        raise SystemExit("--model: --decisions openai-compatible needs a model name")
    return base.model_copy(update={
        "decisions_provider": "openai-compatible", "decisions_base_url": args.base_url,
        "decisions_model": args.model, "decisions_api_key": os.environ.get(args.api_key_env),
        "decisions_per_minute": 0, "decisions_tokens_per_day": 0, "decisions_retry_base_s": 1,
        "decisions_max_attempts": 3})


async def drain(bench: Any, settings: Settings) -> dict[str, Any]:
    """Run every queued decision job to its end; what was decided, and at what cost."""
    from mcp_memory.decisions import provider_from
    from mcp_memory.decisions.jobs import DecisionWorker

    worker = DecisionWorker(bench.admin, bench.service(settings), provider_from(settings), settings, name="bench")
    times: list[float] = []
    while True:
        t = time.perf_counter()
        if not await worker.run_once():
            due_later = await bench.admin.fetchval("SELECT count(*) FROM memory_jobs WHERE status = 'queued'")
            if not due_later:
                break
            time.sleep(1)  # noqa: ASYNC251 - a retry's backoff; nothing else runs here
            continue
        times.append(time.perf_counter() - t)
        if len(times) % 50 == 0:
            print(f"decided {len(times)} jobs", file=sys.stderr)
    rows = await bench.admin.fetch("SELECT status, result, tokens FROM memory_jobs")
    actions = Counter(r["result"]["action"] if r["result"] else r["status"] for r in rows)
    return {"provider": settings.decisions_provider, "model": settings.decisions_model,
            "base_url": settings.decisions_base_url, "jobs": len(rows), "actions": dict(actions),
            "dead": sum(r["status"] == "dead" for r in rows), "tokens": sum(r["tokens"] for r in rows),
            "p50_ms": round(statistics.median(times) * 1000, 1) if times else None}
