"""Secrets out of captured text before anything is cut, embedded or stored: a transcript holds
whatever was pasted into it, and a memory is searchable (and injected into sessions) forever after.

Three detectors look at the same whole text: our shapes (patterns.py: vendor token formats, key
blocks, credentials in URLs and headers), named values (named.py: what is assigned to or said to
be a password / key / token, and long random strings), and Yelp's detect-secrets plugins
(library.py). Every place any of them finds is replaced once by `[REDACTED:<kind>]`; places that
overlap are joined, so a value two detectors see is cut out whole. Recall and session start pass
their output through the same function, so it stays cheap on short text."""

from __future__ import annotations

import re
import string
import threading

from . import library, named
from .patterns import SHAPES

MARKER = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")

Span = tuple[int, int, str]


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
LONG = 4096          # past this many characters a shape runs only on the lines holding its needles
MAX_NEEDLES = 256    # … unless they are everywhere, and one pass is cheaper


def _lines(text: str, lowered: str, needles: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The lines holding a needle, as (start, end) ranges in order, or None for the whole text."""
    hits: list[int] = []
    for needle in needles:
        at = lowered.find(needle)
        while at >= 0:
            hits.append(at)
            if len(hits) > MAX_NEEDLES:
                return None
            at = lowered.find(needle, at + 1)
    ranges: list[tuple[int, int]] = []
    for at in sorted(hits):
        if ranges and at < ranges[-1][1]:
            continue
        # The needle's line and the next: `\s` in a pattern may cross one line break ("Bearer\n<token>").
        end = text.find("\n", at)
        end = text.find("\n", end + 1) if end >= 0 else -1
        ranges.append((text.rfind("\n", 0, at) + 1, len(text) if end < 0 else end))
    return ranges


def _shape_spans(text: str, lowered: str) -> list[Span]:
    found: list[Span] = []
    for shape in SHAPES:
        if not any(n in lowered for n in shape.needles):
            continue
        ranges = None
        if len(text) > LONG and not shape.pattern.flags & re.S:
            ranges = _lines(text, lowered, shape.needles)
        grouped = "secret" in shape.pattern.groupindex
        for start, end in ranges if ranges is not None else [(0, len(text))]:
            for m in shape.pattern.finditer(text, start, end):
                a, b = m.span("secret") if grouped and m.group("secret") is not None else m.span()
                if shape.check is None or shape.check(text[a:b]):
                    found.append((a, b, shape.kind))
    return found


def find(text: str) -> list[Span]:
    """The places of secrets in `text`, joined where they overlap, in order: (start, end, kind)."""
    lowered = text.lower()
    if len(lowered) != len(text):   # a few letters change length when lowered; places must line up
        lowered = text.translate(_ASCII_LOWER)
    spans = _shape_spans(text, lowered)
    spans += named.spans(text, lowered)
    spans += library.spans(text, lowered)
    if not spans:
        return []
    # Our own markers (text redacted before) are not secrets: a place inside one is dropped.
    kept = [m.span() for m in _MARKER.finditer(text)] if MARKER in text else []
    spans = [s for s in spans if not any(a <= s[0] and s[1] <= b for a, b in kept)]
    # The join covers every overlapping place; the most specific detector (shapes, then names,
    # then the library) names its kind.
    merged: list[list] = []   # [start, end, kind, rank]
    for rank, (start, end, kind) in sorted(enumerate(spans), key=lambda x: x[1][0]):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if rank < last[3]:
                last[2], last[3] = kind, rank
            continue
        merged.append([start, end, kind, rank])
    return [(s, e, k) for s, e, k, _ in merged]


def redact(text: str) -> tuple[str, list[str]]:
    """The text with every secret replaced by `[REDACTED:<kind>]`, and the kinds found (sorted,
    each once)."""
    if not text:
        return text, []
    spans = find(text)
    if not spans:
        return text, []
    out: list[str] = []
    at = 0
    for start, end, kind in spans:
        out.append(text[at:start])
        out.append(f"[REDACTED:{kind}]")
        at = end
    out.append(text[at:])
    return "".join(out), sorted({k for _, _, k in spans})


def warm() -> None:
    """Load detect-secrets in a background thread (~0.15 s of imports), so that a process that
    will redact soon (a hook) does not wait for it on its first call."""
    threading.Thread(target=library.available, name="redact-warm", daemon=True).start()


def marker_end(text: str, at: int) -> int:
    """`at`, or the end of a redaction marker that `at` falls inside, so a cut never splits one."""
    start = text.rfind(MARKER, max(0, at - 60), at + len(MARKER))
    if start < 0 or start >= at:
        return at
    end = text.find("]", start)
    return end + 1 if end >= at else at


__all__ = ["MARKER", "find", "marker_end", "redact", "warm"]
