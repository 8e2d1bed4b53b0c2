"""basic-memory projects: a folder of Markdown notes, as the `basic-memory` package writes them.

    ---
    title: Session Cache          # else the file's name
    type: decision                # else note
    permalink: demo/decisions/session-cache
    tags: [cache, redis]
    created: 2025-03-01T09:00:00  # optional; else the file's modification time
    ---
    We keep sessions in Redis.                        <- prose: a memory per section / bullet
    ## Observations
    - [decision] Use Redis #redis (memcached lacked persistence)   <- an observation
    ## Relations
    - depends_on [[Staging Database]] (context)       <- a relation

Read as basic-memory reads them (its markdown plugins), in list items: `[category] text #tag
(context)` is an observation, a line with a standalone #tag too; `type [[Target]] (context)` a
relation; other `[[links]]` stay in the text as plain words. A fenced block or a quote holds
neither. Each becomes a memory about the note (`about`: its title): an observation as "Title:
text (context)", a relation as "Title depends on Target", about both ends, so the graph links the
two notes' entities; the prose as the markdown import reads it, titled by the note's title. The
category is a tag (and `original_category`) rather than a `key`: a key is an attribute holding one
value at a time, so a note's second `[fact]` would replace its first. Front matter that is not
YAML is the note's text, as basic-memory takes it; a file that is not UTF-8 text is refused."""

from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from .. import limits
from ..errors import InvalidInput
from ..models import Kind
from . import Draft, file_time
from .markdown import sections

SOURCE = "basic-memory"
NOTE_KINDS: dict[str, Kind] = {
    "decision": "decision", "preference": "preference", "fact": "fact", "procedure": "procedure",
    "guide": "procedure", "howto": "procedure", "how-to": "procedure", "meeting": "episode", "journal": "episode",
    "episode": "episode", "conversation": "episode",
}
CATEGORY_KINDS: dict[str, Kind] = {**NOTE_KINDS, "step": "procedure", "event": "episode"}
_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)\s*$")
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)$")
_CLOCK = re.compile(r"^\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?(?:\s+-\s+\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?)?$")
_HASHTAG = re.compile(r"(?<!\S)#([^\s#]+)")
_TRAILING_TAGS = re.compile(r"(?:\s+#[^\s#]+)+$")
_LINK = re.compile(r"\[\[([^\[\]]+?)\]\]")


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The note's front matter and body; a fenced block that is not a YAML mapping is body."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        return {}, text
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return {}, text
    if meta is None:
        meta = {}
    return (meta, "\n".join(lines[end + 1:])) if isinstance(meta, dict) else ({}, text)


def looks_like(path: Path) -> bool:
    """A note with basic-memory's front matter (a `permalink`), or a folder holding one."""
    notes = [path] if path.is_file() else _notes(path) if path.is_dir() else []
    for note in notes[:200]:
        try:
            with note.open(encoding="utf-8") as fh:
                head = fh.read(4096)
        except (OSError, UnicodeDecodeError):
            continue
        if head.startswith("---") and re.search(r"(?m)^permalink:\s*\S", head.split("\n---", 1)[0]):
            return True
    return False


def _notes(root: Path) -> list[Path]:
    """The project's notes; hidden folders (.git, .obsidian) hold none."""
    return sorted(p for p in root.rglob("*.md")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))


def _when(value: Any, fallback: datetime) -> datetime:
    """Front matter's `created`, local time when it names no zone (as basic-memory reads it)."""
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return fallback  # basic-memory too falls back to the file's time
    if not isinstance(value, datetime):
        return fallback
    return value if value.utcoffset() is not None else value.astimezone()


def _tags(value: Any) -> list[str]:
    raw = value if isinstance(value, list) else str(value).split(",") if value else []
    tags = [t.strip().lstrip("#") for item in raw if item is not None for t in str(item).split(",")]
    return [t for t in dict.fromkeys(tags) if t and len(t) <= limits.MAX_TAG_CHARS]


def _plain(text: str) -> str:
    """[[Target]] and [[Target|shown]] as their words."""
    return _LINK.sub(lambda m: m.group(1).split("|")[-1].strip(), text)


def _relation(item: str) -> tuple[str, str, str | None] | None:
    """`type [[Target]] (context)`: a relation type of one word (or quoted) and nothing after the link
    but one parenthesised context."""
    before, _, rest = item.partition("[[")
    before = before.strip()
    if not before or "]]" not in rest:
        return None
    if before[0] in "'\"" and before.endswith(before[0]) and len(before) > 1:
        rtype = before[1:-1].strip()
    elif any(c.isspace() for c in before):
        return None
    else:
        rtype = before
    target, _, after = rest.partition("]]")
    after = after.strip()
    if not rtype or not target.strip() or after and not (after.startswith("(") and after.endswith(")")
                                                          and after.count("(") == after.count(")")):
        return None
    return rtype, target.split("|")[0].strip(), after[1:-1].strip() or None if after else None


def _observation(item: str) -> tuple[str | None, str, list[str], str | None] | None:
    """`[category] text #tag (context)`, or text with a standalone #tag: (category, text, tags, context)."""
    if item.startswith(("[ ]", "[x]", "[X]", "[-]")) or re.fullmatch(r"\[.*?\]\(.*?\)", item):
        return None
    match = _CATEGORY.match(item)
    category = None
    if match and not _CLOCK.match(match.group(1).strip()) and not (
            len(match.group(1).strip()) == 1 and not match.group(1).strip().isalnum()):
        category, item = match.group(1).strip(), match.group(2).strip()
    elif not _HASHTAG.search(item):
        return None
    context = None
    if item.endswith(")") and "(" in item:
        start = item.rfind("(")
        context, item = item[start + 1:-1].strip() or None, item[:start].strip()
    tags = [t for m in _HASHTAG.finditer(item) for t in m.group(1).split("#") if t]
    text = _HASHTAG.sub(lambda m: m.group(1), _TRAILING_TAGS.sub("", item)).strip()
    return (category, text, tags, context) if text else None


class _Note:
    def __init__(self, root: Path, path: Path) -> None:
        self.rel = path.relative_to(root).as_posix() if path != root else path.name
        try:
            raw = path.read_bytes()
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"note {self.rel}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise InvalidInput(f"note {self.rel}: cannot be read ({exc.strerror or exc})") from None
        text = text.removeprefix("\ufeff").replace("\x00", "").replace("\r\n", "\n")
        meta, self.body = _front_matter(text)
        title = meta.get("title")
        title = ", ".join(map(str, title)) if isinstance(title, list) else str(title) if title else ""
        self.title = (title.strip() or path.stem)[:limits.MAX_TITLE_CHARS]
        self.type = str(meta.get("type") or "note")
        self.permalink = meta.get("permalink") if isinstance(meta.get("permalink"), str) else None
        self.tags = _tags(meta.get("tags"))
        self.created = _when(meta.get("created"), file_time(path))

    def provenance(self) -> dict[str, Any]:
        return {"source": SOURCE, "original_path": self.rel, "original_type": self.type,
                **({"original_permalink": self.permalink} if self.permalink else {})}


def _name(title: str) -> list[str] | None:
    return [title] if 0 < len(title) <= limits.MAX_NAME_CHARS else None


def _drafts(note: _Note, titles: dict[str, str]) -> list[Draft]:
    out: list[Draft] = []
    prose: list[str] = []
    fence = False
    about = _name(note.title)
    for number, line in enumerate(note.body.split("\n"), 1):
        if _FENCE.match(line):
            fence = not fence
        item = None if fence or line.lstrip().startswith(">") else _ITEM.match(line)
        record = f"note {note.rel} line {number}"
        if item and "[[" in item.group(1) and (rel := _relation(item.group(1))):
            rtype, target, context = rel
            target = titles.get(target.lower(), target)
            words = rtype.replace("_", " ").replace("-", " ")
            content = f"{note.title} {words} {target}" + (f" ({context})" if context else "")
            ends = [n for n in (note.title, target) if 0 < len(n) <= limits.MAX_NAME_CHARS]
            out.append(Draft(content=content, title=note.title, kind="fact", tags=["relation"],
                             metadata={**note.provenance(), "relation": rtype, "from": note.title, "to": target},
                             occurred_at=note.created, record=record, about=list(dict.fromkeys(ends)) or None))
        elif item and (obs := _observation(_plain(item.group(1)))):
            category, text, tags, context = obs
            kind = CATEGORY_KINDS.get((category or "").lower(), "note")
            tags = tags + ([category.lower()] if category and len(category) <= limits.MAX_TAG_CHARS else [])
            metadata = {**note.provenance(), **({"original_category": category} if category else {})}
            out.append(Draft(content=f"{note.title}: {text}" + (f" ({context})" if context else ""),
                             title=note.title, kind=kind, tags=list(dict.fromkeys(tags))[:limits.MAX_TAGS],
                             metadata=metadata, occurred_at=note.created, record=record, about=about))
        else:
            prose.append(line)
    kind = NOTE_KINDS.get(note.type.lower(), "note")
    text: list[Draft] = []  # the prose first, as the note reads
    for index, (heading, content) in enumerate(sections(_plain("\n".join(prose)))):
        title = f"{note.title} › {heading}" if heading else note.title
        text.append(Draft(content=content, title=title[:limits.MAX_TITLE_CHARS], kind=kind,
                         tags=note.tags[:limits.MAX_TAGS], metadata=note.provenance(), occurred_at=note.created,
                         record=f"note {note.rel} section {index + 1} ({heading or 'top'})", about=about))
    return text + out


def read(path: Path) -> list[Draft]:
    """Every observation, relation and section of prose of the project at `path` (a folder, or one
    note); a note it cannot read is refused, naming it (the caller then writes nothing). A relation's
    target given as a permalink or in other case is the title of the note it names."""
    root = path if path.is_dir() else path.parent
    notes = [_Note(root, p) for p in (_notes(path) if path.is_dir() else [path])]
    titles = {n.title.lower(): n.title for n in notes}
    titles.update({n.permalink.lower(): n.title for n in notes if n.permalink})
    titles.update({n.permalink.lower().split("/", 1)[-1]: n.title for n in notes if n.permalink and "/" in n.permalink})
    return [d for n in notes for d in _drafts(n, titles)]


def note_count(drafts: list[Draft]) -> int:
    return len({d.metadata.get("original_path") for d in drafts})
