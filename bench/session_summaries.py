"""Session summaries with a real model (issue 49): scripted sessions, each captured in two deltas,
extracted by a chat-completions endpoint (the local Qwen2.5-Coder-1.5B of ../shared/models/ by
default). For each session: whether the first delta gave a summary, whether the second updated it
(one memory, version 2) to cover both deltas (the marker words of each found in it), its
derived_from edges against the session's turns, the time of each extraction call, the facts of
each delta, and whether a search about the session puts the summary above its turns. A session of small talk must give
none.

    ../shared/models/setup_local_llm.sh && /tmp/local-llm/venv/bin/python ../shared/models/serve_local_llm.py &
    python bench/session_summaries.py [--url http://127.0.0.1:8181/v1] [--database-url URL]

Prints a table and writes bench/results/session_summaries.json."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import bench_database, bench_principal, machine, table  # noqa: E402

from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.transcripts import parse_text  # noqa: E402
from mcp_memory.decisions import provider_from  # noqa: E402
from mcp_memory.decisions.jobs import DecisionWorker  # noqa: E402

# (name, first delta, second delta, markers of the first, markers of the second, a search)
SESSIONS: list[tuple[str, str, str, list[str], list[str], str]] = [
    ("api-move",
     "User: We moved the billing API from Heroku to Fly.io this week.\n"
     "Assistant: Noted. Should I update the deploy workflow for Fly.io?\n"
     "User: Yes, replace the Heroku deploy step with flyctl deploy.\n"
     "Assistant: Done: the workflow now runs flyctl deploy for the billing API.\n",
     "User: Also, the on-call rotation now starts on Friday instead of Monday.\n"
     "Assistant: Understood, on-call starts Fridays from now on.\n",
     ["fly"], ["on-call", "friday"], "where does the billing API deploy to?"),
    ("editor",
     "User: I switched my editor from VS Code to Helix last month.\n"
     "Assistant: Got it. Do you want Helix config for Python?\n"
     "User: Yes, set up the Python language server in Helix.\n"
     "Assistant: Added pyright as the Python language server in the Helix languages.toml.\n",
     "User: And use ruff instead of flake8 for linting from now on.\n"
     "Assistant: Switched the linter to ruff and removed the flake8 config.\n",
     ["helix"], ["ruff"], "which editor setup did we do for Python?"),
    ("database",
     "User: The ledger service database has to move from Postgres 13 to Postgres 16.\n"
     "Assistant: I can plan the upgrade with pg_upgrade in link mode. Is downtime acceptable?\n"
     "User: Ten minutes of downtime on Sunday night is fine.\n"
     "Assistant: Then the ledger upgrade is scheduled for Sunday night with pg_upgrade --link.\n",
     "User: After the upgrade, run the nightly backups at 03:00 instead of midnight.\n"
     "Assistant: The ledger backups now run nightly at 03:00.\n",
     ["postgres 16", "pg_upgrade"], ["03:00", "backup"], "when is the ledger database upgrade?"),
    ("small-talk",
     "User: Hi there!\nAssistant: Hello! How can I help today?\nUser: Nothing, just saying hi.\n"
     "Assistant: Hi! Let me know whenever you need something.\n",
     "User: Thanks, bye.\nAssistant: Bye!\n",
     [], [], "hello"),
]


def transcript(text: str, session: str) -> Any:
    t = parse_text(text)
    t.session_id = session
    return t


async def drain(worker: DecisionWorker) -> None:
    """Every extraction due; the facts' decisions are cancelled (what is measured is the summary,
    and on a loaded 2-core machine each decision costs the local model a minute or more)."""
    while True:
        await worker.admin.execute("UPDATE memory_jobs SET status = 'cancelled' WHERE kind = 'decide' "
                                   "AND status = 'queued'")
        if not await worker.run_once():
            return


def covers(text: str, markers: list[str]) -> bool:
    low = text.lower()
    return all(m in low for m in markers)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"benchmark": "session_summaries", "url": args.url, "sessions": []}
    rows: list[list[Any]] = []
    async with bench_database(args.database_url, "summaries") as bench:
        s = bench.settings.model_copy(update=dict(
            decisions_provider="openai-compatible", decisions_base_url=args.url, decisions_model=args.model,
            decisions_mode="async", decisions_per_minute=0, decisions_tokens_per_day=0, decisions_retry_base_s=0,
            decisions_timeout_s=args.timeout, decisions_lease_s=args.timeout + 100, decisions_max_attempts=2,
            extraction_per_session=0, extraction_per_day=0))
        service = bench.service(s)
        await service.vectors.query("warm up")
        worker = DecisionWorker(bench.admin, service, provider_from(s), s)
        p = bench_principal("summaries")
        capturer = Capturer(service, s, "bench")
        for name, first, second, m1, m2, query in SESSIONS:
            if args.sessions and name not in args.sessions:
                continue
            sid = f"bench-{name}"
            await capturer.capture(p, transcript(first, sid), key=f"bench:{name}")
            await drain(worker)
            after_first = await summaries_of(bench.admin, sid)
            await capturer.capture(p, transcript(first + second, sid), key=f"bench:{name}")
            await drain(worker)
            after = await summaries_of(bench.admin, sid)
            turns = await bench.admin.fetchval(
                "SELECT count(*) FROM memories WHERE kind = 'episode' AND metadata->>'session_id' = $1", sid)
            # A job's time: from the model's call to the job's end (its facts and summary written).
            jobs = await bench.admin.fetch(
                "SELECT status, last_error, tokens, result, extract(epoch FROM finished_at - called_at) AS took "
                "FROM memory_jobs WHERE kind = 'extract' AND session_id = $1 ORDER BY id", sid)
            took = [float(r["took"] or 0) for r in jobs]
            results = [json.loads(r["result"]) if isinstance(r["result"], str) else r["result"] or {} for r in jobs]
            summary = after[0] if after else None
            edges = (await bench.admin.fetchval("SELECT count(*) FROM memory_edges WHERE from_id = $1 AND "
                                                "kind = 'derived_from'", summary["id"]) if summary else 0)
            above = None
            if summary:
                hits = (await service.search(p, query, limit=10)).hits
                ids = [h.id for h in hits]
                turn_ids = {r["id"] for r in await bench.admin.fetch(
                    "SELECT to_id AS id FROM memory_edges WHERE from_id = $1", summary["id"])}
                turn_at = [i for i, h in enumerate(ids) if h in turn_ids]
                above = summary["id"] in ids and (not turn_at or ids.index(summary["id"]) < min(turn_at))
            entry = {"session": name, "summaries": len(after), "first_summary": bool(after_first),
                     "version": summary["version"] if summary else None,
                     "covers_first": covers(summary["content"], m1) if summary and m1 else None,
                     "covers_second": covers(summary["content"], m2) if summary and m2 else None,
                     "edges": edges, "turns": turns, "extract_s": [round(t, 1) for t in took],
                     "jobs": [r["status"] for r in jobs], "tokens": [r["tokens"] for r in jobs],
                     "facts": [x.get("facts") for x in results],
                     "errors": [r["last_error"] for r in jobs if r["last_error"]],
                     "summary_above_turns": above,
                     "first_text": after_first[0]["content"] if after_first else None,
                     "text": summary["content"] if summary else None}
            report["sessions"].append(entry)
            rows.append([name, len(after), entry["version"] or "", entry["covers_first"], entry["covers_second"],
                         f"{edges}/{turns}", " ".join(f"{t:.0f}" for t in took), above,
                         " ".join(map(str, entry["facts"]))])
            print(f"{name}: {entry['text']}", flush=True)
    header = ["session", "summaries", "version", "covers 1st", "covers 2nd", "edges/turns", "extract s", "above",
              "facts"]
    print(table(header, rows))
    report.update(machine=machine(), at=datetime.now(UTC).isoformat(timespec="seconds"))
    return report


async def summaries_of(admin: Any, session: str) -> list[Any]:
    return await admin.fetch("SELECT id, content, version FROM memories WHERE kind = 'session_summary' "
                             "AND deleted_at IS NULL AND metadata->>'session_id' = $1", session)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8181/v1")
    ap.add_argument("--model", default="local-qwen2.5-coder-1.5b-instruct-q4")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--sessions", nargs="*", help="names of the sessions to run (default: all)")
    ap.add_argument("--out", help="where the JSON goes (default bench/results/session_summaries.json)")
    ap.add_argument("--database-url")
    args = ap.parse_args()
    report = asyncio.run(main_async(args))
    out = Path(args.out or Path(__file__).parent / "results" / "session_summaries.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
