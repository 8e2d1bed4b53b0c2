"""What a bad turn costs a capture: the generated Claude Code session of bench/capture.py, clean and
with faults as users' transcripts have them, each captured once into its own scope.

  * NUL turns: tool output holding \\u0000 (the agent `cat`s a binary file), cleaned and stored;
  * torn lines: JSONL lines cut mid-object, each left out alone;
  * refused turns: turns PostgreSQL itself refuses (a trigger raising a data exception, as a
    constraint the validator does not know would), which capture finds by halving the refused
    batch until only that turn is left out.

The embedding cache is warmed by a first clean run (reported as such), so the rows compare what
the faults cost beyond embedding; a refused batch's retries hit that cache in real captures too,
since the first attempt embedded every item.

Usage: python bench/capture_faults.py [--turns 400] [--faults 1,5,20] [--database-url URL]
       [--out bench/results/capture_faults.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from capture import SESSION, transcript  # noqa: E402
from locomo import REPO, machine, table  # noqa: E402

from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.transcripts import parse_text  # noqa: E402
from mcp_memory.config import Settings  # noqa: E402
from mcp_memory.db import open_database  # noqa: E402
from mcp_memory.models import Principal  # noqa: E402
from mcp_memory.service import MemoryService  # noqa: E402

MARK = "REFUSED-BY-BENCH"
TRIGGER = f"""
CREATE OR REPLACE FUNCTION bench_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content LIKE '%{MARK}%' THEN
        RAISE EXCEPTION 'refused by the bench' USING ERRCODE = '22023';
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS bench_refuse ON memories;
CREATE TRIGGER bench_refuse BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION bench_refuse();"""
UNDO = "DROP TRIGGER IF EXISTS bench_refuse ON memories; DROP FUNCTION IF EXISTS bench_refuse();"


def spread(lines: list[str], n: int, rng: random.Random, want: str) -> list[int]:
    """n line numbers of the kind `want` ("user text", "tool output", "any") spread over the file."""
    fit = [i for i, line in enumerate(lines) if i > 0 and (
        want == "any" or (want == "tool output" and '"tool_result"' in line)
        or (want == "user text" and '"type": "user"' in line and '"tool_result"' not in line))]
    return sorted(rng.sample(fit, min(n, len(fit))))


def faulty(text: str, kind: str, n: int, rng: random.Random) -> str:
    lines = text.rstrip("\n").split("\n")
    if kind == "NUL turns":
        for i in spread(lines, n, rng, "tool output"):
            lines[i] = lines[i].replace('"content": "', '"content": "\\u007fELF\\u0000\\u0000\\u0001 ', 1)
    elif kind == "torn lines":
        for i in spread(lines, n, rng, "any"):
            lines[i] = lines[i][: len(lines[i]) // 2]
    elif kind == "refused turns":
        for i in spread(lines, n, rng, "user text"):
            lines[i] = lines[i].replace("Can you look into it?", f"Can you look into it? {MARK}", 1)
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace) -> None:
    rng = random.Random(11)
    base = transcript(args.turns, rng)
    rows: list[list] = []
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-faults-") as tmp:
        settings = Settings(database_url=args.database_url, data_dir=Path(tmp), log_level="WARNING",
                            user="bench", project="bench")
        db = await open_database(settings)
        try:
            await db.admin.execute(TRIGGER)
            service = await MemoryService.open(db, settings)
            await service.vectors.query("warm up")
            cases = [("clean, cold cache", "clean", 0), ("clean", "clean", 0)]
            for n in args.faults:
                cases += [(f"{n} NUL turns", "NUL turns", n), (f"{n} torn lines", "torn lines", n),
                          (f"{n} refused turns", "refused turns", n)]
            for i, (name, kind, n) in enumerate(cases):
                parsed = parse_text(faulty(base, kind, n, random.Random(n)))
                # Each case in its own project: content dedup would otherwise find the last case's turns.
                p = Principal(user_id="bench", agent_id="claude-code", project_id=f"case-{i}", actor="bench:bench")
                started = time.perf_counter()
                report = await Capturer(service, settings, "claude-code").capture(p, parsed,
                                                                                  key=f"case-{i}:{SESSION}")
                took = time.perf_counter() - started
                rows.append([name, len(parsed.turns), report.episodes, report.cleaned, report.skipped_turns,
                             report.unreadable_lines, took])
                results.append({"case": name, "turns": len(parsed.turns), "episodes": report.episodes,
                                "facts": report.facts, "cleaned": report.cleaned, "skipped": report.skipped_turns,
                                "unreadable_lines": report.unreadable_lines, "seconds": round(took, 3)})
        finally:
            await db.admin.execute(UNDO)
            await db.close()
    print(table(["case", "turns", "stored", "cleaned", "skipped", "torn", "seconds"], rows, first_width=20))
    out = {"benchmark": "capture_faults", "machine": machine(), "turns": args.turns, "cases": results,
           "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--faults", type=lambda s: [int(x) for x in s.split(",")], default=[1, 5, 20])
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "capture_faults.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
