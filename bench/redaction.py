"""How long redaction takes on a 1 MB Claude Code transcript (hooks run it on every capture) and
on short text (recall passes its output through it), and on 1 MB of hostile text (runs that
make a backtracking pattern rescan from every start).

The transcript is made of this repository's own files: user prose from the docs pages (docs/*.md,
where the README's text moved; the sample's size is printed and kept in the JSON), tool calls
that read source files, their output (code, JSON, SQL), assistant replies, and a secret every
~50 KB. Reports: `redact` over the whole text at once; parsing the transcript (which redacts
every tool input and output whole before cutting it) plus redacting every turn as capture
does; the same parse with redaction switched off (what it costs); and `redact` on a 300-character
recall line.

    python3 bench/redaction.py [--mb 1] [--repeat 5] [--json bench/results/redaction.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_memory.capture import transcripts  # noqa: E402
from mcp_memory.capture.redact import redact  # noqa: E402

SECRETS = ["ghp_Zq8vB2mN8kL4pR7tY1wZ3sD6fG0hJ5cVx9Aa", "sk-proj-Qw3eRt5yUi7oP9aSd1fGh3jK5lZx7cV9bN1mQw3eRt5y",
           "postgres://app:Tr0ub4dor3xY@db.internal:5432/prod",
           "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AKIAZ7Q2M4N6P8R0T2V4",
           'DB_PASSWORD="Zx9!kq2#Lm7"']


def prose() -> list[str]:
    """The user's side of the conversation: the docs' paragraphs, each cut to what a prompt holds,
    taken a page at a time in turn, so a short transcript's prompts come from every page."""
    pages = [page.read_text().split("\n\n") for page in sorted(ROOT.glob("docs/*.md"))]
    return [para[:600] for para in itertools.chain.from_iterable(itertools.zip_longest(*pages)) if para is not None]


def transcript(mb: float, prompts: list[str]) -> str:
    files = sorted(p for p in ROOT.glob("mcp_memory/**/*.py")) + sorted(ROOT.glob("sql/*.sql"))
    session = str(uuid.uuid4())
    lines: list[str] = []
    size = n = 0

    def add(kind: str, content: object) -> None:
        nonlocal size
        line = json.dumps({"type": kind, "sessionId": session, "uuid": str(uuid.uuid4()),
                           "timestamp": "2026-03-02T09:00:00Z", "message": {"role": kind, "content": content}})
        lines.append(line)
        size += len(line) + 1

    while size < mb * 1_000_000:
        path = files[n % len(files)]
        said = prompts[n % len(prompts)]
        if n % 25 == 0:
            said += f" By the way the key is {SECRETS[(n // 25) % len(SECRETS)]} for now."
        add("user", said)
        add("assistant", [{"type": "text", "text": f"Let me read {path.name}."},
                          {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": str(path)}}])
        add("user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": path.read_text()[:20_000]}])
        add("assistant", f"{path.name} holds {len(path.read_text().splitlines())} lines; the part that matters is "
                         f"the first function.")
        n += 1
    return "\n".join(lines) + "\n"


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "redaction.json")
    args = ap.parse_args()

    t = time.perf_counter()
    redact("warm up: imports detect-secrets")
    first = time.perf_counter() - t
    pool = prose()
    text = transcript(args.mb, pool)
    parsed = transcripts.parse_text(text)
    turns_text = [turn.text for turn in parsed.turns]

    def capture_path() -> None:
        for turn in transcripts.parse_text(text).turns:
            redact(turn.text)

    def parse_without_redaction() -> None:
        with mock.patch.object(transcripts, "redact", lambda s: (s, [])):
            transcripts.parse_text(text)

    recall = ("- [preference] I prefer black over autopep8 for formatting Python; line length 120, "
              "and ruff for lint. (2026-03-02) - [fact] The staging database listens on port 5433 and the "
              "deploy key lives in the vault, not in the repo. (2026-03-04) - [episode] User: can you check the CI?")
    hostile = {"eyJ repeated": "eyJ" * 350_000, "sk- repeated": "sk-" * 350_000, "one run": "a" * 1_000_000,
               "//a repeated": "//a" * 350_000, "key: repeated": "key: " * 200_000,
               'password = " repeated': 'password = "' * 90_000}
    rows = {
        "redact, whole transcript as one text": timed(lambda: redact(text), args.repeat),
        "parse + redact every tool call/output + every turn (capture)": timed(capture_path, args.repeat),
        "parse with redaction off (baseline)": timed(parse_without_redaction, args.repeat),
        "redact, 1 MB of hostile text (worst of 6 shapes)": [max(timed(lambda h=h: redact(h), 1)[0]
                                                              for h in hostile.values()) for _ in range(args.repeat)],
        "redact, 300-char recall text (x1000)": [x / 1000 for x in timed(
            lambda: [redact(recall) for _ in range(1000)], args.repeat)],
    }
    found = sum(len(redact(t)[1]) for t in turns_text)
    print(f"transcript: {len(text) / 1e6:.2f} MB, {len(parsed.turns)} turns, "
          f"{sum(len(t.tools) for t in parsed.turns)} tool summaries; secret kinds found in stored turns: {found}")
    print(f"user prose: {len(pool)} paragraphs, {sum(map(len, pool)) / 1e3:.0f} KB from docs/*.md")
    print(f"first call (imports detect-secrets): {first * 1000:.0f} ms")
    print(f"{'what':64} {'median':>10} {'min':>10}")
    result: dict[str, object] = {"mb": round(len(text) / 1e6, 3), "turns": len(parsed.turns),
                                 "prose_paragraphs": len(pool), "prose_kb": round(sum(map(len, pool)) / 1e3, 1),
                                 "first_call_ms": round(first * 1000, 1), "rows": {}}
    for name, times in rows.items():
        med, low = statistics.median(times), min(times)
        unit, scale = ("µs", 1e6) if med < 0.001 else ("ms", 1e3)
        print(f"{name:64} {med * scale:8.1f}{unit:>2} {low * scale:8.1f}{unit:>2}")
        result["rows"][name] = {"median_ms": round(med * 1000, 3), "min_ms": round(low * 1000, 3)}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
