"""A folder of Markdown notes basic-memory indexes (`basic-memory project add NAME FOLDER`): one
note per memory, in a folder per kind, named by its title as basic-memory names its own:

    ---
    title: Session cache            # the memory's title, else its first words
    type: decision                  # our kind
    permalink: decision/session-cache
    tags: [redis]
    created: 2025-03-01T09:00:00+00:00   # when it became true (occurred_at)
    modified: ...
    mcp_memory_id: ...              # and its agent and project, when it has them
    ---
    The memory's text.

basic-memory reads the front matter's `created` and `modified` before the file's times, and keeps
the other keys as the note's metadata. The text is the note's body as it is: a line in it shaped
like an observation or a relation is one there too."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from ..errors import InvalidInput
from . import ours

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
TITLE_WORDS = 8


def title_of(memory: dict[str, Any]) -> str:
    if memory.get("title"):
        return str(memory["title"]).strip()
    words = memory["content"].split()
    return " ".join(words[:TITLE_WORDS]) + ("…" if len(words) > TITLE_WORDS else "")


def slug(text: str) -> str:
    """basic-memory's permalink form: ASCII, lower case, words joined by hyphens."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-") or "note"


def _file_name(title: str) -> str:
    return " ".join(_UNSAFE.sub(" ", title).split()).strip(" .")[:100].strip() or "note"


def note(memory: dict[str, Any], folder: str, stem: str) -> str:
    title = title_of(memory)
    meta: dict[str, Any] = {"title": title, "type": memory["kind"], "permalink": f"{folder}/{slug(stem)}"}
    if memory.get("tags"):
        meta["tags"] = list(memory["tags"])
    created = memory.get("occurred_at") or memory.get("created_at")
    if created is not None:
        meta["created"] = created.isoformat()
    if memory.get("updated_at") is not None:
        meta["modified"] = memory["updated_at"].isoformat()
    meta.update(ours(memory))
    head = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=10**6)
    return f"---\n{head}---\n\n{memory['content'].rstrip()}\n"


def check_folder(folder: Path) -> None:
    """Empty or absent (then made): a user's notes are never overwritten, and a folder that cannot be
    made is one line saying why before anything is read."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder}: not an empty folder; export to basic-memory writes into a new or empty one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"{folder}: cannot be made ({exc.strerror or exc})") from None


def write(memories: list[dict[str, Any]], folder: Path) -> int:
    """One note per memory under `folder` (see `check_folder`); returns how many."""
    check_folder(folder)
    taken: set[str] = set()
    for memory in memories:
        kind_folder = memory["kind"]
        stem = _file_name(title_of(memory))
        name, n = stem, 1
        while f"{kind_folder}/{name}".lower() in taken or f"{kind_folder}/{slug(name)}" in taken:
            n += 1
            name = f"{stem} ({n})"
        taken |= {f"{kind_folder}/{name}".lower(), f"{kind_folder}/{slug(name)}"}
        path = folder / kind_folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(memory, kind_folder, name), encoding="utf-8")
    return len(memories)
