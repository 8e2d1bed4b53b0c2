"""Which of the formats `mcp-memory import` reads a file is in, and reading one whole: its drafts
(or an export's records), or a refusal naming the record it cannot read. `mcp_memory.importers`
writes what this reads."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from .. import limits
from ..errors import InvalidInput
from ..repository.maintenance import EXPORT_COLUMNS
from ..validation import content_hash
from . import Draft, Format, basic_memory, claude_md, doobidoo, doobidoo_json, export_vectors, file_time, mem0
from .export_graph import Reader
from .markdown import parse_markdown

EXPORT_FORMAT = "mcp-memory-export"
# 1: memories, history, vectors and what their writer said; 2: and the graph whole (export_graph.py).
VERSIONS = (1, 2)

KNOWN = ("a markdown memory file (MEMORY.md, SOUL.md, IDENTITY.md), Claude Code's CLAUDE.md, an mcp-memory export, "
         "a memory.json knowledge graph, an mcp-memory-service (doobidoo) sqlite_vec.db or JSON export, a mem0 / "
         "OpenMemory export, or a basic-memory project folder")


def detect_format(path: Path, given: Format | None = None) -> Format:
    """The format of `path` (or `given`, checked), or one clear line saying it is none of those
    known (a binary file, another database, text that is not UTF-8: never a traceback)."""
    if path.is_dir():  # only a basic-memory project is read as one folder
        if given in (None, "basic-memory") and (given or basic_memory.looks_like(path)):
            return "basic-memory"
        raise InvalidInput(f"{path}: a folder, not {given or 'a basic-memory project'}; the formats mcp-memory "
                           f"import reads: {KNOWN}")
    try:
        sqlite = doobidoo.is_sqlite(path)
        if sqlite and given not in (None, "doobidoo"):
            raise InvalidInput(f"{path}: an SQLite database, not {given}; the formats mcp-memory import reads: {KNOWN}")
        if sqlite or given == "doobidoo":
            if doobidoo.looks_like(path):
                return "doobidoo"
            what = doobidoo.not_its(path) if sqlite else "not SQLite"
            raise InvalidInput(f"{path}: {what}; the formats mcp-memory import reads: {KNOWN}")
        if mem0.is_zip(path) and given in (None, "mem0"):
            if given:
                return "mem0"
            try:
                if mem0.flavour(mem0.load(path)):
                    return "mem0"
                why = "a zip but not an OpenMemory backup"
            except InvalidInput as exc:
                why = str(exc)
            raise InvalidInput(f"{path}: {why}; the formats mcp-memory import reads: {KNOWN}")
        first = _utf8_first_line(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if given is not None:
        return given
    if claude_md.is_claude_md(path):
        return "claude-md"
    if path.suffix.lower() == ".md" and basic_memory.looks_like(path):
        return "basic-memory"
    if path.suffix.lower() in (".md", ".markdown"):
        return "markdown"
    first = first.strip()
    try:
        head = json.loads(first) if first else {}
    except json.JSONDecodeError:
        head = {}
    if isinstance(head, dict) and head.get("format") == EXPORT_FORMAT:
        return "export"
    # JSON is known by its content, whatever the file's name (an export saved as .txt too).
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if doobidoo_json.looks_like(whole):
        return "doobidoo-json"
    if mem0.flavour(whole):
        return "mem0"
    if _is_knowledge_graph(text, whole) if text.strip() else path.suffix.lower() in (".json", ".jsonl"):
        return "knowledge-graph"  # an empty memory.json: a graph with nothing in it yet
    raise InvalidInput(f"{path}: not one of the formats mcp-memory import reads: {KNOWN} (if it is one of "
                       f"them, say which with --from)")


def _unreadable(path: Path, exc: OSError) -> InvalidInput:
    return InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})")


def _utf8_first_line(path: Path, chunk: int = 1 << 20) -> str:
    """The file's first line, once all of it is found to be UTF-8 (a refusal naming the first byte
    that is not): read a chunk at a time, as an export of a million memories is gigabytes, which were
    held whole as text here before a line of them was read."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    head: list[str] = []  # the text up to the first newline, a chunk's worth at a time
    ended, offset = False, 0
    with path.open("rb") as f:
        while True:
            data = f.read(chunk)
            pending = decoder.getstate()[0]  # the bytes of a character the last chunk cut
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"{path}: not UTF-8 text (byte {offset - len(pending) + exc.start}); the formats "
                                   f"mcp-memory import reads: {KNOWN}") from None
            if not ended:  # a list, and only the new text looked at: a one-line JSON file stays linear
                head.append(text)
                ended = "\n" in text
            if not data:
                return "".join(head).split("\n", 1)[0]
            offset += len(data)


def _is_knowledge_graph(text: str, whole: Any) -> bool:
    """memory.json as the official server writes it: JSON lines of entities and relations (or one
    object with `entities` and `relations`). Any other JSON is not one. `whole`: `text` parsed as
    one JSON value, None when it is not one (JSON lines: their first is read)."""
    if whole is None:
        try:
            whole = json.loads(text.strip().split("\n", 1)[0])
        except json.JSONDecodeError:
            return False
    return isinstance(whole, dict) and ("entities" in whole or "relations" in whole
                                        or whole.get("type") in ("entity", "relation"))


def parse_knowledge_graph(text: str) -> list[Draft]:
    """The official MCP memory server's store: JSON lines of entities and relations (or one
    object with `entities` and `relations`, as older versions wrote)."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:  # JSON lines
        whole = None
    if isinstance(whole, dict) and ("entities" in whole or "relations" in whole):
        records = [{"type": "entity", **e} for e in whole.get("entities", [])] + \
                  [{"type": "relation", **r} for r in whole.get("relations", [])]
    elif isinstance(whole, dict):
        records = [whole]
    else:
        try:
            records = [json.loads(line) for line in stripped.split("\n") if line.strip()]
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"not a memory.json knowledge graph: {exc}") from None
    drafts = []
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict) or record.get("type") not in ("entity", "relation"):
            raise InvalidInput(f"record {number}: neither an entity nor a relation")
        try:
            if record["type"] == "entity":
                name, etype = record["name"], record.get("entityType") or "entity"
                for observation in record.get("observations", []):
                    drafts.append(Draft(content=f"{name}: {observation}", title=name, kind="fact",
                                        tags=[str(etype).lower()], metadata={"entity": name, "entity_type": etype}))
            else:
                verb = str(record["relationType"]).replace("_", " ")
                drafts.append(Draft(content=f"{record['from']} {verb} {record['to']}", kind="fact",
                                    tags=["relation"], metadata={"from": record["from"], "to": record["to"],
                                                                 "relation": record["relationType"]}))
        except KeyError as exc:
            raise InvalidInput(f"record {number}: a {record['type']} without {exc}") from None
    return drafts


def _typed(memory: dict[str, Any]) -> dict[str, Any]:
    out = {c: memory.get(c) for c in EXPORT_COLUMNS}
    for key in ("id", "superseded_by"):
        out[key] = UUID(out[key]) if out[key] else None
    for key in ("occurred_at", "valid_until", "created_at", "updated_at", "last_accessed", "deleted_at"):
        out[key] = datetime.fromisoformat(out[key]) if out[key] else None
    out["tags"] = list(out["tags"] or [])
    out["metadata"] = out["metadata"] or {}
    out["content_hash"] = content_hash(out["content"], out["kind"], out["metadata"])  # never trust a file's
    return out


@dataclass
class Exported:
    """An export read whole: its memories (`records`) and, from a version 2 file, the graph's
    entities and the edits a person made to it."""

    records: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    edits: list[dict[str, Any]]


def read_export(lines: Iterable[str]) -> Exported:
    """An export's memories, each with its graph (`graph`: None where the store it came from had
    not read it, or the file is of version 1, which carries none), the vector it carries (`vector`),
    the model the header says made it (`vector_model`) and what an episode's vector holds of the
    turn before it (`vector_turns`: export_vectors.header), all None when it carries none."""
    model: str | None = None
    dimension: int | None = None
    turns: tuple[float, float] | None = None
    graph = Reader()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = json.loads(line)
        kind = record.get("type")
        if kind == "header":
            if record.get("version") not in VERSIONS:
                raise InvalidInput(f"line {number}: export format version {record.get('version')} is not supported")
            model, dimension, turns = (export_vectors.embedding_of(record.get("embedding"), number)
                                       or (None, None, None))
            continue
        if kind == "entity":
            graph.entity(record.get("entity"), number)
            continue
        if kind == "edit":
            graph.edit(record.get("edit"), number)
            continue
        history = [{**h, "memory_id": UUID(h["memory_id"]), "created_at": datetime.fromisoformat(h["created_at"])}
                   for h in record.get("history", [])]
        vector = record.get("vector")
        memory = _typed(record["memory"])
        records.append({"memory": memory, "history": history,
                        "structure": _structure(record.get("structure"), number),
                        "graph": graph.graph(record.get("graph"), memory, number),
                        "vector": None if vector is None else export_vectors.decoded(vector, dimension, number),
                        "vector_model": model, "vector_turns": turns})
    return Exported(records, graph.entities, graph.edits)


def _structure(given: Any, number: int) -> dict[str, Any] | None:
    """What an export says the memory's writer told of it (`about`, `key`), checked as a write's."""
    if given is None:
        return None
    about = given.get("about", []) if isinstance(given, dict) else None
    key = given.get("key") if isinstance(given, dict) else None
    if (not isinstance(about, list) or len(about) > limits.MAX_ABOUT
            or not all(isinstance(n, str) and 0 < len(n) <= limits.MAX_NAME_CHARS for n in about)
            or key is not None and not (isinstance(key, str) and 0 < len(key) <= limits.MAX_KEY_WORDS_CHARS)):
        raise InvalidInput(f"line {number}: structure must be {{'about': [up to {limits.MAX_ABOUT} names], "
                           f"'key': 'a few words'}}")
    return {"about": about, **({"key": key} if key is not None else {})}


def files_under(paths: Iterable[Path], fmt: Format | None = None) -> list[tuple[Path, Format]]:
    """The files to read, each with its format (`detect_format`, once); a basic-memory project
    folder stays whole (its relations name its notes)."""
    found: list[tuple[Path, Format]] = []
    for path in paths:
        if path.is_dir() and (fmt == "basic-memory" or fmt is None and basic_memory.looks_like(path)):
            found.append((path, detect_format(path, fmt)))
        elif path.is_dir():  # its markdown, and the JSON and databases of a format it reads
            for member in sorted(path.rglob("*")):
                kind = _in_folder(member, fmt) if member.is_file() else None
                if kind is not None:
                    found.append((member, kind))
        elif path.is_file():
            found.append((path, detect_format(path, fmt)))
        else:
            raise InvalidInput(f"{path}: no such file or directory")
    return found


def _in_folder(path: Path, fmt: Format | None) -> Format | None:
    """The format of a file found in a folder: every markdown file's (or why it cannot be read),
    None for JSON of no format it reads (another tool's settings.json) and for other files."""
    suffix = path.suffix.lower()
    if suffix in (".json", ".jsonl"):
        try:
            return detect_format(path, fmt)
        except InvalidInput:
            return None
    if suffix in (".md", ".markdown") or suffix in (".db", ".sqlite", ".sqlite3") and doobidoo.looks_like(path):
        return detect_format(path, fmt)
    return None


def read_file(path: Path, fmt: Format) -> list[Draft] | Exported:
    """Drafts (or, for an export, its records), every one of them, or a refusal naming the one it
    cannot read: nothing of a file is written unless all of it was read."""
    try:
        if fmt == "doobidoo":
            return doobidoo.read(path)
        if fmt == "mem0":
            return mem0.read(mem0.load(path))
        if fmt == "basic-memory":
            return basic_memory.read(path)
        if fmt == "export":
            # Line by line (an export of a million memories is gigabytes), split on newlines only:
            # exported text may hold U+2028 and friends, which str.splitlines() would break at.
            with path.open(encoding="utf-8", newline="\n") as lines:
                return read_export(lines)
        text = path.read_text(encoding="utf-8")
        if fmt == "doobidoo-json":
            try:
                return doobidoo_json.read(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"not JSON ({exc})") from None
        if fmt == "claude-md":
            return claude_md.read(text, path, file_time(path))
        return parse_markdown(text, path.name, file_time(path)) if fmt == "markdown" else parse_knowledge_graph(text)
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc}; nothing was imported") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"{path}: not a readable {fmt} file ({type(exc).__name__}: {exc}); "
                           "nothing was imported") from None
