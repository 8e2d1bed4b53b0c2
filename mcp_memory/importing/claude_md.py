"""Claude Code's memory files: the user's `~/.claude/CLAUDE.md` and a project's `CLAUDE.md`
(`./CLAUDE.md`, `./.claude/CLAUDE.md`, `CLAUDE.local.md`, or one in a subfolder). Each bullet, and
each section's prose, is a memory as in MEMORY.md, of kind `procedure` (they say how to work); a
line that only imports another file (`@path`) is left out. Each keeps the file's path and is dated
by the file's last write, the one date it carries.

The user's file goes to the user's namespace. A project's goes to the project our server names for
its folder (the git repository's name, else the folder's own: `auth.git_project`), unless the
importer named one (`--project`, `MCP_MEMORY_PROJECT`) or a scope (`--scope`)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from ..auth import check_identifier, git_project
from ..models import Principal, ScopeLevel
from . import Draft
from .markdown import sections

NAMES = {"claude.md", "claude.local.md"}
SOURCE = "claude-md"
_IMPORT_LINE = re.compile(r"^\s*@\S+\s*$")


def is_claude_md(path: Path) -> bool:
    return path.name.lower() in NAMES


def is_user_file(path: Path) -> bool:
    """~/.claude/CLAUDE.md, the instructions of every project."""
    folder = path.resolve().parent
    return folder.name == ".claude" and folder.parent == Path.home().resolve()


def project_of(path: Path) -> str:
    """The project our server derives for the folder a project's CLAUDE.md is in."""
    folder = path.resolve().parent
    if folder.name == ".claude":
        folder = folder.parent
    return check_identifier("project", git_project(folder) or folder.name)


def placement(path: Path, p: Principal, scope: ScopeLevel | None,
              project_given: bool) -> tuple[Principal, ScopeLevel | None]:
    """Who writes the file's memories, and in which scope."""
    if scope is not None:
        return p, scope
    if is_user_file(path):
        return p, "user"
    if project_given:
        return p, None
    return p.model_copy(update={"project_id": project_of(path)}), "project"


def read(text: str, path: Path, written: datetime | None = None) -> list[Draft]:
    """The file's memories, each keeping `path` and dated `written` (the file's last write)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        if fenced or not _IMPORT_LINE.match(line):
            kept.append(line)
    metadata = {"source": SOURCE, "imported_from": path.name, "original_path": str(path.resolve())}
    return [Draft(content=content, title=heading, kind="procedure", tags=[SOURCE], metadata=dict(metadata),
                  occurred_at=written, record=f"item {index + 1} ({heading or 'top'})")
            for index, (heading, content) in enumerate(sections("\n".join(kept)))]
