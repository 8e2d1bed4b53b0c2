"""Readers of other memory tools' stores, one small module each. A reader turns a file into
drafts (or refuses it, naming the record it cannot read); `mcp_memory.importers` writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the command line lists FORMATS without loading the models
    from ..models import Kind, ScopeLevel

# What `mcp-memory import --from` takes; without it each file's format is detected.
Format = Literal["markdown", "claude-md", "export", "knowledge-graph", "doobidoo", "doobidoo-json", "mem0",
                 "basic-memory"]
FORMATS: tuple[str, ...] = Format.__args__  # type: ignore[attr-defined]


@dataclass
class Draft:
    """A memory parsed from a file, written through the normal write path. `record` names where
    it came from in the file (a row, a line, a heading), for a refusal to point at; `scope`, the
    level the file gave it (a user's or an agent's memory), which an importer's --scope overrides;
    `about`, whom the file says it is about (a basic-memory note's title), as a writer's `about`."""

    content: str
    title: str | None = None
    kind: Kind = "note"
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    pinned: bool = False
    priority: int = 0
    occurred_at: datetime | None = None
    record: str | None = None
    scope: ScopeLevel | None = None
    about: list[str] | None = None


def file_time(path: Path) -> datetime:
    """When a file was last written: the one date a Markdown file of memories carries."""
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)
