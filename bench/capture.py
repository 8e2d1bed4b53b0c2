"""Auto-capture and auto-recall: capture throughput for a generated Claude Code transcript, and
hook latency for session start and prompt recall on a store of N memories.

  * capture: a 2,000-turn session JSONL (tool calls, tool output, trigger sentences, pasted
    secrets) through the Capturer with the local model: turns/s for the first run, and the
    re-run that finds nothing new;
  * hooks: `mcp-memory hook session-start|prompt-submit` as Claude Code runs them (a process per
    call, JSON on stdin) against a store filled to --memories: wall time from spawn to exit, p50 /
    p95, and how many answered within the default budget; and the same work in-process (warm),
    which is what the budget bounds once Python and the model are loaded.

Usage: python bench/capture.py [--turns 2000] [--memories 10000] [--runs 30] [--database-url URL]
       [--out bench/results/capture.json]
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
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, latency, machine, table  # noqa: E402

from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.recall import prompt_context, session_context  # noqa: E402
from mcp_memory.capture.transcripts import read  # noqa: E402
from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.models import Principal, WriteItem  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

CLI = str(Path(sys.executable).with_name("mcp-memory"))
SESSION = "bench-0000-4000-8000-000000000000"
TOPICS = ["the billing service", "the job queue", "the mobile app", "our CI pipeline", "the staging cluster",
          "the data warehouse", "the auth gateway", "the search index", "the nightly backups", "the Grafana boards",
          "the payment webhooks", "the onboarding flow", "the CSV importer", "the rate limiter", "the docs site"]
ACTIONS = ["is failing since the last deploy", "needs a retry with backoff", "should move to PostgreSQL",
           "times out under load", "has a flaky test", "needs better logging", "leaks memory after an hour",
           "must be split into two services", "ignores the feature flag", "double-charges on retries"]
FACTS = ["I prefer {x} to be written in Go.", "We decided to use Terraform for {x}.",
         "Remember that {x} runs on port 8443.",
         "Never deploy {x} on Fridays.", "Always page Dana when {x} breaks.", "I hate how {x} handles errors."]
PROMPTS = ["why does the job queue time out under load?", "what did we decide about terraform for the docs site?",
           "how should the rate limiter retry?", "what port does the auth gateway use?",
           "who do we page when the billing service breaks?", "write a haiku about autumn leaves",
           "is the CSV importer still leaking memory?", "what language should the search index use?"]


def transcript(turns: int, rng: random.Random) -> str:
    """A Claude Code session JSONL: user lines, assistant text + tool_use lines, tool_result lines."""
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    lines = []

    def line(kind: str, content: object, i: int, uid: str) -> None:
        lines.append(json.dumps({"parentUuid": None, "isSidechain": False, "type": kind, "sessionId": SESSION,
                                 "cwd": "/work/bench", "uuid": uid, "timestamp": (start + timedelta(seconds=20 * i))
                                 .isoformat().replace("+00:00", "Z"), "message": {"role": kind, "content": content}}))

    for i in range(turns // 2):
        topic, action = rng.choice(TOPICS), rng.choice(ACTIONS)
        said = f"Turn {i}: {topic} {action}. Can you look into it?"
        if i % 7 == 0:
            said += " " + rng.choice(FACTS).format(x=topic)
        if i % 50 == 0:
            said += " My token is ghp_" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=36))
        line("user", said, 2 * i, f"u{i}")
        line("assistant", [{"type": "text", "text": f"Looking at {topic} (turn {i}); checking the logs."},
                           {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                            "input": {"command": f"grep -rn error logs/{i}.log"}}], 2 * i + 1, f"a{i}")
        line("user", [{"type": "tool_result", "tool_use_id": f"t{i}",
                       "content": "\n".join(f"logs/{i}.log:{n}: error {rng.randrange(10**6)}" for n in range(40))}],
             2 * i + 1, f"r{i}")
        line("assistant", [{"type": "text", "text": f"Found it: {topic} {rng.choice(ACTIONS)}. Fixed in commit "
                                                     f"{rng.randrange(16**7):07x}."}], 2 * i + 1, f"b{i}")
    return "\n".join(lines) + "\n"


def filler(n: int, rng: random.Random) -> list[WriteItem]:
    kinds = ["fact", "decision", "preference", "note", "episode"]
    return [WriteItem(content=f"Note {i}: {rng.choice(TOPICS)} {rng.choice(ACTIONS)}; owner "
                              f"{rng.choice(['Ana', 'Bo', 'Cy', 'Dana', 'Eli'])}, ticket #{rng.randrange(10**5)}.",
                      kind=rng.choice(kinds))  # type: ignore[arg-type]
            for i in range(n)]


def hook_run(event: str, payload: dict, url: str) -> tuple[float, bool, bool]:
    """Wall time, whether it printed context, whether it ran out of its budget."""
    started = time.perf_counter()
    out = subprocess.run([CLI, "hook", event, "--database-url", url, "--user", "bench", "--project", "bench"],
                         input=json.dumps(payload), capture_output=True, text=True, timeout=120, env=os.environ)
    took = time.perf_counter() - started
    assert out.returncode == 0, out.stderr
    return took, bool(out.stdout.strip()), "took longer than" in out.stderr


async def main_async(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    rows: list[list] = []
    report: dict = {"benchmark": "capture", "machine": machine(), "turns": args.turns, "memories": args.memories}
    with tempfile.TemporaryDirectory(prefix="mcp-memory-capture-") as tmp:
        settings = Settings(database_url=args.database_url, data_dir=Path(tmp), log_level="WARNING",
                            user="bench", project="bench")
        db = await open_database(settings)
        try:
            service = await MemoryService.open(db, settings)
            p = Principal(user_id="bench", agent_id="claude-code", project_id="bench", actor="bench:bench")
            await service.vectors.query("warm up")
            path = Path(tmp) / "session.jsonl"
            path.write_text(transcript(args.turns, rng))
            parsed = read(path)
            capturer = Capturer(service, settings, "claude-code")
            started = time.perf_counter()
            first = await capturer.capture(p, parsed, key=f"claude-code:{SESSION}")
            took = time.perf_counter() - started
            rows.append(["capture, first run", len(parsed.turns), first.episodes + first.facts, took,
                         len(parsed.turns) / took])
            started = time.perf_counter()
            again = await capturer.capture(p, read(path), key=f"claude-code:{SESSION}")
            took_again = time.perf_counter() - started
            rows.append(["capture, re-run", len(parsed.turns), again.episodes + again.facts, took_again,
                         len(parsed.turns) / took_again])
            report["capture"] = {"turns": len(parsed.turns), "episodes": first.episodes, "facts": first.facts,
                                 "redacted": first.redacted, "seconds": round(took, 2),
                                 "turns_per_s": round(len(parsed.turns) / took, 1),
                                 "rerun_seconds": round(took_again, 3), "rerun_new": again.new_turns}
            # Fill the store to the target size, then pin a few core memories.
            have = first.episodes + first.facts
            items = filler(max(0, args.memories - have), rng)
            for i in range(0, len(items), 500):
                await service.write_many(p, items[i:i + 500])
            for i in range(8):
                await service.write(p, f"Core rule {i}: {rng.choice(FACTS).format(x=rng.choice(TOPICS))}",
                                    kind="procedure", pinned=True, priority=10 - i)
            stats = await service.overview.stats(p)
            report["store"] = {"live": stats.active}
            await db.admin.execute("ANALYZE memories")

            warm_start, warm_recall = [], []
            for i in range(args.runs * 3):
                t = time.perf_counter()
                await session_context(service, settings, p, "claude-sonnet-4-5")
                warm_start.append(time.perf_counter() - t)
                t = time.perf_counter()
                await prompt_context(service, settings, p, PROMPTS[i % len(PROMPTS)], "other-session")
                warm_recall.append(time.perf_counter() - t)
            cold_start, cold_recall = [], []
            answered = {"session-start": 0, "prompt-submit": 0}
            late = {"session-start": 0, "prompt-submit": 0}
            for i in range(args.runs):
                base = {"session_id": f"s{i}", "transcript_path": str(path), "cwd": tmp}
                took, said, over = hook_run("session-start", {**base, "hook_event_name": "SessionStart",
                                                              "source": "startup"}, db.dsn)
                cold_start.append(took)
                answered["session-start"] += said
                late["session-start"] += over
                took, said, over = hook_run("prompt-submit", {**base, "hook_event_name": "UserPromptSubmit",
                                                              "prompt": PROMPTS[i % len(PROMPTS)]}, db.dsn)
                cold_recall.append(took)
                answered["prompt-submit"] += said
                late["prompt-submit"] += over
        finally:
            await db.close()
    report["hooks"] = {
        "session_start_process": latency(cold_start), "prompt_recall_process": latency(cold_recall),
        "session_start_in_process": latency(warm_start), "prompt_recall_in_process": latency(warm_recall),
        "answered": answered, "over_budget": late, "runs": args.runs,
        "irrelevant_prompts": sum(1 for i in range(args.runs) if "haiku" in PROMPTS[i % len(PROMPTS)]),
        "note": "process: spawn to exit as the harness waits for it (Python start-up, model load, database "
                "connect included); in-process: the work the budget bounds, warm"}
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print(table(["capture", "turns", "stored", "seconds", "turns/s"], rows, first_width=20))
    print()
    hook_rows = [[name, v["n"], v["p50_ms"], v["p95_ms"], v["max_ms"]] for name, v in report["hooks"].items()
                 if isinstance(v, dict) and "p50_ms" in v]
    print(table(["hook latency", "n", "p50 ms", "p95 ms", "max ms"], hook_rows, first_width=26))
    print(f"\nstore: {report['store']['live']} live memories; answered with context: {answered} of {args.runs} "
          f"each; over budget (printed nothing): {late}; prompts with nothing to recall: "
          f"{report['hooks']['irrelevant_prompts']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "capture.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
