"""Markdown memory files (MEMORY.md, SOUL.md, IDENTITY.md and the like): one memory per bullet, a
section's prose as one, each titled by its headings."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from . import Draft

IDENTITY_FILES = {"soul.md", "identity.md"}
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")


def sections(text: str) -> list[tuple[str | None, str]]:
    """(heading path, text) of each bullet and each section's prose outside bullets, in order;
    front matter is skipped and a fenced block is never split."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1:]
    headings: list[tuple[int, str]] = []
    items: list[tuple[str | None, str]] = []
    prose: list[str] = []
    bullet: list[str] | None = None

    def title() -> str | None:
        return " › ".join(h for _, h in headings) or None

    def flush_bullet() -> None:
        nonlocal bullet
        if bullet:
            items.append((title(), " ".join(part.strip() for part in bullet).strip()))
        bullet = None

    def flush_prose() -> None:
        body = "\n".join(prose).strip()
        if body:
            items.append((title(), body))
        prose.clear()

    in_fence = False
    for line in lines:
        if line.strip().startswith("```"):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            flush_bullet()
            flush_prose()
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
            continue
        match = None if in_fence else _BULLET.match(line)
        if match:
            flush_bullet()
            bullet = [match.group(2)]
        elif bullet is not None and line.strip() and line.startswith((" ", "\t")):
            bullet.append(line)
        else:
            flush_bullet()
            prose.append(line)
    flush_bullet()
    flush_prose()
    return items


def parse_markdown(text: str, filename: str, written: datetime | None = None) -> list[Draft]:
    """One memory per bullet; a section's prose (outside bullets) is one memory. Identity files
    (SOUL.md, IDENTITY.md) become pinned core memories, earlier items with higher priority. Each is
    dated `written` (the file's last write), the one date such a file carries."""
    identity = filename.lower() in IDENTITY_FILES
    tag = Path(filename).stem.lower()
    drafts = []
    for index, (heading_path, content) in enumerate(sections(text)):
        drafts.append(Draft(
            content=content, title=heading_path, kind="identity" if identity else "note", tags=[tag],
            metadata={"imported_from": filename}, pinned=identity, occurred_at=written,
            priority=max(1000 - index, 1) if identity else 0, record=f"item {index + 1} ({heading_path or 'top'})"))
    return drafts


