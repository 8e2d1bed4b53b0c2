"""Recall quality: what auto-recall actually puts in front of the model.

Hand-written Claude Code sessions of one developer (bench/recall_quality/sessions.json) are
written out as Claude Code JSONL and captured through the real capture path (episodes per turn,
trigger facts linked to them), then every prompt of bench/recall_quality/prompts.json (phrased
unlike the stored text) is asked as the first prompt of a new session: session-start context,
then the prompt's recall, as the hooks run them. For each prompt, the injected context is read
back and judged against the prompt's `relevant` pattern:

  * present: a memory matching it is in the injected context (session start or recall); by
    recall: in the prompt's recall itself (a memory the start block gave is rightly not repeated);
  * duplicates: recall entries saying what the context already holds (the same memory as the
    session-start block, or another entry matching the same relevant pattern: a fact's episode,
    an echo);
  * irrelevant: recall entries matching nothing the prompt asks about (all of them for prompts
    with nothing relevant stored).

Runs the recall of a baseline git revision (--baseline, default: the commit before the recall
grouping) and of the working tree on the same store, prints a table for each and writes JSON.

Usage: python bench/recall_quality.py [--set bench/recall_quality/ops] [--baseline REV | --no-baseline]
       [--filler 10000] [--database-url URL] [--out bench/results/recall_quality.json] [--show]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from capture import filler  # noqa: E402
from locomo import REPO, latency, machine, table  # noqa: E402

from mcp_memory.capture import recall as current_recall  # noqa: E402
from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.transcripts import read  # noqa: E402
from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.models import Principal  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

DATA = Path(__file__).parent / "recall_quality"
BASELINE = "724dfd2"   # recall before grouping, session dedup and redaction
MODEL = "claude-sonnet-4-5"
ENTRY = re.compile(r'<memory id="(?P<id>[^"]+)" kind="(?P<kind>[^"]+)"[^>]*>\n(?P<body>.*?)\n</memory>', re.S)


def jsonl(session: dict[str, Any], cwd: str) -> str:
    """One session as Claude Code writes it: a line per user message, per assistant content
    block and per tool result, each with its time."""
    start = datetime.fromisoformat(session["start"].replace("Z", "+00:00"))
    lines: list[str] = []
    clock = [start]

    def line(kind: str, content: Any) -> None:
        clock[0] += timedelta(seconds=20)
        n = len(lines)
        lines.append(json.dumps({"parentUuid": f"x{n - 1}" if n else None, "isSidechain": False,
                                 "userType": "external", "cwd": cwd, "sessionId": session["id"],
                                 "version": "2.1.0", "type": kind, "uuid": f"x{n}",
                                 "timestamp": clock[0].isoformat().replace("+00:00", "Z"),
                                 "message": {"role": kind, "content": content}}))

    for t, turn in enumerate(session["turns"]):
        if turn["role"] == "user":
            line("user", turn["text"])
            continue
        line("assistant", [{"type": "text", "text": turn["text"]}])
        for k, (name, args, output) in enumerate(turn.get("tools", [])):
            tool_id = f"toolu_{t}_{k}"
            line("assistant", [{"type": "tool_use", "id": tool_id, "name": name, "input": args}])
            line("user", [{"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": False}])
    return "\n".join(lines) + "\n"


def load_recall(rev: str) -> ModuleType:
    """capture/recall.py as it was at `rev`, imported beside the current one (its relative
    imports resolve against today's package; it must not need anything newer than it had)."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:mcp_memory/capture/recall.py"],
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="recall-baseline-")) / "recall.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"mcp_memory.capture._recall_{rev}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def entries(text: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in ENTRY.finditer(text)]


def judge(prompt: dict[str, Any], start: list[dict[str, str]], recalled: list[dict[str, str]]) -> dict[str, Any]:
    pattern = re.compile(prompt["relevant"], re.I) if prompt["relevant"] else None
    seen_ids = {e["id"] for e in start}
    covered = bool(pattern and any(pattern.search(e["body"]) for e in start))
    rows, hit, dups, irrelevant = [], False, 0, 0
    for e in recalled:
        relevant = bool(pattern and pattern.search(e["body"]))
        dup = e["id"] in seen_ids or (relevant and covered)
        seen_ids.add(e["id"])
        if relevant:
            hit, covered = True, True
        dups += dup
        irrelevant += not relevant and not dup
        rows.append({"id": e["id"], "kind": e["kind"], "text": e["body"][:160], "relevant": relevant,
                     "duplicate": dup})
    in_context = hit or bool(pattern and any(pattern.search(e["body"]) for e in start))
    return {"prompt": prompt["prompt"], "relevant": prompt["relevant"], "hit": hit, "in_context": in_context,
            "entries": len(recalled), "duplicates": dups, "irrelevant": irrelevant, "recalled": rows}


async def ask(name: str, module: ModuleType, service: MemoryService, settings: Settings, p: Principal, i: int,
              prompt: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One prompt as the first of a new session: its start block, then its recall (timed)."""
    session = f"bench-{name}-{i:03d}"
    if "session_id" in inspect.signature(module.session_context).parameters:
        start_text = await module.session_context(service, settings, p, MODEL, session_id=session)
    else:
        start_text = await module.session_context(service, settings, p, MODEL)
    t = time.perf_counter()
    recall_text = await module.prompt_context(service, settings, p, prompt["prompt"], session)
    took = time.perf_counter() - t
    return {**judge(prompt, entries(start_text), entries(recall_text)),
            "start_block_entries": len(entries(start_text))}, took


def summarize(results: list[dict[str, Any]], took: list[float]) -> dict[str, Any]:
    asked = [r for r in results if r["relevant"]]
    empty = [r for r in results if not r["relevant"]]
    return {
        "prompts": len(results), "with_relevant_memory": len(asked),
        "present_rate": sum(r["in_context"] for r in asked) / len(asked),
        "by_recall_rate": sum(r["hit"] for r in asked) / len(asked),
        "entries": sum(r["entries"] for r in results), "duplicates": sum(r["duplicates"] for r in results),
        "irrelevant": sum(r["irrelevant"] for r in results),
        "prompts_with_duplicates": sum(1 for r in results if r["duplicates"]),
        "unrelated_prompts_left_empty": sum(1 for r in empty if not r["entries"]), "unrelated_prompts": len(empty),
        "recall_ms": latency(took),
    }


async def main_async(args: argparse.Namespace) -> None:
    data = json.loads((args.set / "sessions.json").read_text())
    prompts = json.loads((args.set / "prompts.json").read_text())["prompts"]
    variants: list[tuple[str, ModuleType]] = []
    if args.baseline:
        variants.append((f"baseline {args.baseline}", load_recall(args.baseline)))
    variants.append(("working tree", current_recall))
    report: dict[str, Any] = {"benchmark": "recall_quality", "set": str(args.set), "machine": machine(),
                              "variants": []}
    with tempfile.TemporaryDirectory(prefix="mcp-memory-recall-") as tmp:
        settings = Settings(database_url=args.database_url, data_dir=Path(tmp), log_level="WARNING",
                            user="bench", project=data["project"])
        db = await open_database(settings)
        try:
            service = await MemoryService.open(db, settings)
            p = Principal(user_id="bench", agent_id="claude-code", project_id=data["project"], actor="bench:bench")
            capturer = Capturer(service, settings, "claude-code")
            stored = {"episodes": 0, "facts": 0}
            for session in data["sessions"]:
                path = Path(tmp) / f"{session['id']}.jsonl"
                path.write_text(jsonl(session, f"/home/priya/{data['project']}"))
                done = await capturer.capture(p, read(path), key=f"claude-code:{session['id']}", path=str(path))
                stored["episodes"] += done.episodes
                stored["facts"] += done.facts
            items = filler(args.filler, random.Random(7))
            for i in range(0, len(items), 500):
                await service.write_many(p, items[i:i + 500])
            stored["filler"] = len(items)
            await db.admin.execute("ANALYZE memories")   # as autovacuum would by then: plans for this size
            report["store"] = stored
            await service.vectors.query("warm up the model")   # the first variant should not pay for it
            results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
            took: dict[str, list[float]] = {name: [] for name, _ in variants}
            for i, prompt in enumerate(prompts):
                # Taking turns, so that neither variant is timed only while the machine is busier.
                for name, module in variants if i % 2 else variants[::-1]:
                    result, seconds = await ask(name.split()[0], module, service, settings, p, i, prompt)
                    results[name].append(result)
                    took[name].append(seconds)
            report["variants"] = [{"variant": name, "summary": summarize(results[name], took[name]),
                                   "results": results[name]} for name, _ in variants]
        finally:
            await db.close()
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print(f"store: {report['store']['episodes']} episodes, {report['store']['facts']} trigger facts from "
          f"{len(data['sessions'])} sessions, {report['store']['filler']} filler memories; {len(prompts)} prompts, "
          "each the first of a new session\n")
    for v in report["variants"]:
        if args.show:
            print(f"== {v['variant']}")
            for r in v["results"]:
                mark = "HIT " if r["hit"] else ("ctx " if r["in_context"] else ("--- " if r["relevant"] else "none"))
                print(f"{mark} {r['prompt']}")
                for e in r["recalled"]:
                    flag = "D" if e["duplicate"] else ("+" if e["relevant"] else "x")
                    print(f"     {flag} [{e['kind']}] {e['text'][:110]!r}")
            print()
    rows = []
    for v in report["variants"]:
        s = v["summary"]
        rows.append([v["variant"], f"{s['present_rate']:.2f}", f"{s['by_recall_rate']:.2f}", s["entries"],
                     s["duplicates"], s["prompts_with_duplicates"], s["irrelevant"],
                     f"{s['unrelated_prompts_left_empty']}/{s['unrelated_prompts']}",
                     f"{s['recall_ms']['p50_ms']:.0f}", f"{s['recall_ms']['p95_ms']:.0f}"])
    print(table(["recall", "present", "by recall", "entries", "dups", "prompts w/ dups", "irrelevant",
                 "unrelated empty", "ms p50", "ms p95"], rows, first_width=20))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    print(f"\nwrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git revision whose capture/recall.py is compared")
    parser.add_argument("--no-baseline", dest="baseline", action="store_const", const=None)
    parser.add_argument("--set", type=Path, default=DATA, help="a folder with sessions.json and prompts.json "
                        "(bench/recall_quality: the main set; bench/recall_quality/ops: a held-out one)")
    parser.add_argument("--filler", type=int, default=0, help="also store this many generated notes about the "
                        "same kind of work (bench/capture.py's filler, newer than the sessions): a busy store")
    parser.add_argument("--database-url")
    parser.add_argument("--show", action="store_true", help="print every prompt's recalled entries")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "recall_quality.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
