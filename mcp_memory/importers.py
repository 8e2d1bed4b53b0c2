"""Import and export: markdown memory files (MEMORY.md, SOUL.md, IDENTITY.md), our JSONL export,
and the official MCP memory server's knowledge graph (memory.json). Importing twice adds nothing."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO
from uuid import UUID

from pydantic import BaseModel
from tqdm import tqdm

from . import limits
from .encoding import to_json
from .errors import InvalidInput
from .importing import Draft, Format, basic_memory, claude_md, doobidoo, doobidoo_json, mem0, peer_vectors
from .importing.markdown import parse_markdown
from .models import Principal, ScopeLevel, WriteItem
from .repository.maintenance import EXPORT_COLUMNS, MaintenanceRepository
from .service import MemoryService
from .validation import content_hash, moment

EXPORT_FORMAT = "mcp-memory-export"


class ImportReport(BaseModel):
    files: int = 0
    created: int = 0
    unchanged: int = 0
    dry_run: bool = False
    planned: dict[str, int] = {}  # "kind in namespace" -> how many new memories (written, or would be)
    first: list[str] = []  # the first few new ones, for a dry run to show
    # A peer's file with vectors: whether they were taken (checked to be our model's) or every
    # memory embedded again, and why; one line per such file (importing/peer_vectors.py).
    embedding: list[str] = []


# --- parsing ---------------------------------------------------------------------------------------

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
        if doobidoo.is_sqlite(path) and given not in (None, "doobidoo"):
            raise InvalidInput(f"{path}: an SQLite database, not {given}; the formats mcp-memory import reads: {KNOWN}")
        if doobidoo.is_sqlite(path) or given == "doobidoo":
            if doobidoo.looks_like(path):
                return "doobidoo"
            what = doobidoo.not_its(path) if doobidoo.is_sqlite(path) else "not SQLite"
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
        raw = path.read_bytes()
        raw.decode("utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start}); the formats mcp-memory import reads: "
                           f"{KNOWN}") from None
    if given is not None:
        return given
    if claude_md.is_claude_md(path):
        return "claude-md"
    if path.suffix.lower() == ".md" and basic_memory.looks_like(path):
        return "basic-memory"
    if path.suffix.lower() in (".md", ".markdown"):
        return "markdown"
    first = raw.decode("utf-8").split("\n", 1)[0].strip()
    try:
        head = json.loads(first) if first else {}
    except json.JSONDecodeError:
        head = {}
    if isinstance(head, dict) and head.get("format") == EXPORT_FORMAT:
        return "export"
    # JSON is known by its content, whatever the file's name (an export saved as .txt too).
    try:
        whole = json.loads(raw)
    except json.JSONDecodeError:
        whole = None
    if doobidoo_json.looks_like(whole):
        return "doobidoo-json"
    if mem0.flavour(whole):
        return "mem0"
    text = raw.decode("utf-8")
    if _is_knowledge_graph(text) if text.strip() else path.suffix.lower() in (".json", ".jsonl"):
        return "knowledge-graph"  # an empty memory.json: a graph with nothing in it yet
    raise InvalidInput(f"{path}: not one of the formats mcp-memory import reads: {KNOWN} (if it is one of "
                       f"them, say which with --from)")


def _is_knowledge_graph(text: str) -> bool:
    """memory.json as the official server writes it: JSON lines of entities and relations (or one
    object with `entities` and `relations`). Any other JSON is not one."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        try:
            whole = json.loads(stripped.split("\n", 1)[0])
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


def read_export(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("type") == "header":
            if record.get("version") != 1:
                raise InvalidInput(f"line {number}: export format version {record.get('version')} is not supported")
            continue
        history = [{**h, "memory_id": UUID(h["memory_id"]), "created_at": datetime.fromisoformat(h["created_at"])}
                   for h in record.get("history", [])]
        yield {"memory": _typed(record["memory"]), "history": history,
               "structure": _structure(record.get("structure"), number)}


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


# --- running ---------------------------------------------------------------------------------------

def files_under(paths: Iterable[Path], fmt: Format | None = None) -> list[Path]:
    """The files to read; a basic-memory project folder stays whole (its relations name its notes)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir() and (fmt == "basic-memory" or fmt is None and basic_memory.looks_like(path)):
            found.append(path)
        elif path.is_dir():  # its markdown, and the JSON and databases of a format it reads
            found += sorted(p for p in path.rglob("*") if p.is_file() and (
                p.suffix.lower() in (".md", ".markdown")
                or p.suffix.lower() in (".json", ".jsonl") and _readable(p, fmt)
                or p.suffix.lower() in (".db", ".sqlite", ".sqlite3") and doobidoo.looks_like(p)))
        elif path.is_file():
            found.append(path)
        else:
            raise InvalidInput(f"{path}: no such file or directory")
    return found


def _readable(path: Path, fmt: Format | None) -> bool:
    """Whether a file found in a folder is of a format it reads (another tool's settings.json is not)."""
    try:
        detect_format(path, fmt)
    except InvalidInput:
        return False
    return True


def read_file(path: Path, fmt: Format) -> list[Draft] | list[dict[str, Any]]:
    """Drafts (or, for an export, its records), every one of them, or a refusal naming the one it
    cannot read: nothing of a file is written unless all of it was read."""
    try:
        if fmt == "doobidoo":
            return doobidoo.read(path)
        if fmt == "mem0":
            return mem0.read(mem0.load(path))
        if fmt == "basic-memory":
            return basic_memory.read(path)
        text = path.read_text(encoding="utf-8")
        if fmt == "doobidoo-json":
            try:
                return doobidoo_json.read(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"not JSON ({exc})") from None
        if fmt == "export":
            # Split on newlines only: exported text may hold U+2028 and friends, which
            # str.splitlines() would treat as line breaks.
            return list(read_export(text.split("\n")))
        if fmt == "claude-md":
            return claude_md.read(text, path.name)
        return parse_markdown(text, path.name) if fmt == "markdown" else parse_knowledge_graph(text)
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc}; nothing was imported") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"{path}: not a readable {fmt} file ({type(exc).__name__}: {exc}); "
                           "nothing was imported") from None


def namespace(agent_id: str | None, project_id: str | None) -> str:
    parts = [f"agent {agent_id}"] * bool(agent_id) + [f"project {project_id}"] * bool(project_id)
    return ", ".join(parts) or "user"


Checked = tuple[Draft, ScopeLevel | None, str | None, str | None, str]  # level, agent, project, text hash


def _level(p: Principal, scope: ScopeLevel | None, draft: Draft) -> ScopeLevel | None:
    """The importer's --scope, else the level the file gave (an agent's memory, when the importer
    has no agent, is the user's), else the importer's default."""
    if scope is not None or draft.scope is None:
        return scope
    return "user" if draft.scope in ("agent", "agent_project") and not p.agent_id else draft.scope


def _checked(service: MemoryService, p: Principal, path: Path, drafts: list[Draft],
             scope: ScopeLevel | None) -> list[Checked]:
    """Each draft as the write path will check it, with the scope and text hash it will have; a
    draft the write path would refuse is refused here, before anything is written, naming it."""
    out: list[Checked] = []
    for index, d in enumerate(drafts):
        level = _level(p, scope, d)
        agent_id, project_id = service.write_scope(p, level)
        try:
            content, metadata = service.check.content(d.content), service.check.metadata(d.metadata)
            service.check.title(d.title)
            service.check.tags(d.tags)
            moment("occurred_at", d.occurred_at)
        except InvalidInput as exc:
            raise InvalidInput(f"{path}: {d.record or f'item {index + 1}'}: {exc}; nothing was imported") from None
        out.append((d, level, agent_id, project_id, content_hash(content, d.kind, metadata)))
    return out


async def _write_chunk(service: MemoryService, p: Principal, chunk: list[Checked], source: str,
                       taken: dict[str, list[float]]) -> list[str]:
    """The chunk written; `taken`: vectors of a peer's (checked to be our model's) by text, stored
    with their memories in the batch's transaction, never through the shared embedding cache."""
    if any(d.pinned or d.priority for d, *_ in chunk):  # what a batch write does not take (nor `taken`)
        return [(await service.write(
            p, d.content, title=d.title, kind=d.kind, tags=d.tags, metadata=d.metadata, pinned=d.pinned,
            priority=d.priority, scope=level, occurred_at=d.occurred_at, source=source, about=d.about)).status
            for d, level, *_ in chunk]
    items = [WriteItem(content=d.content, title=d.title, kind=d.kind, tags=d.tags, metadata=d.metadata,
                       scope=level, occurred_at=d.occurred_at, about=d.about) for d, level, *_ in chunk]
    given = [taken.get(service.check.content(d.content)) for d, *_ in chunk] if taken else None
    return [m.status for m in (await service.write_many(p, items, source=source, embeddings=given)).memories]


def _plan(report: ImportReport, kind: str, where: str, content: str) -> None:
    key = f"{kind} in {where}"
    report.planned[key] = report.planned.get(key, 0) + 1
    if len(report.first) < 5:
        report.first.append(f"[{kind}, {where}] {content[:100]}")


async def _write_drafts(service: MemoryService, p: Principal, path: Path, checked: list[Checked],
                        report: ImportReport, progress: bool, taken: dict[str, list[float]]) -> None:
    """Write in batches; `taken`: vectors of a peer's (checked to be our model's) by text."""
    source = f"import:{path.name}"
    bar = tqdm(total=len(checked), desc=path.name, unit="memory", file=sys.stderr, disable=not progress)
    batch = service.settings.max_batch
    for start in range(0, len(checked), batch):
        chunk = checked[start:start + batch]
        statuses = await _write_chunk(service, p, chunk, source, taken)
        for (d, _, agent_id, project_id, _), status in zip(chunk, statuses, strict=True):
            if status == "created":
                report.created += 1
                _plan(report, d.kind, namespace(agent_id, project_id), d.content)
            else:
                report.unchanged += 1
        bar.update(len(chunk))
    bar.close()


def stored_vectors(path: Path, kind: Format) -> peer_vectors.StoredVectors:
    if kind == "doobidoo":
        return doobidoo.stored_vectors(path)
    return doobidoo_json.stored_vectors(json.loads(path.read_text(encoding="utf-8")))


async def _peer_vectors(service: MemoryService, path: Path, kind: Format,
                        todo: list[Checked]) -> peer_vectors.Verdict | None:
    """The peer's stored vectors for what is to be written, if they are our model's (checked on a
    sample): the write path then embeds only what has none."""
    if not todo or service.vectors is None or service.vectors.embedder is None:
        return None
    stored = stored_vectors(path, kind)
    # The write path embeds the text as checked (stripped); the peer embedded it as stored.
    items = [(text, d.metadata.get("original_id") if text == d.content else None)
             for d, *_ in todo for text in (service.check.content(d.content),)]
    return await peer_vectors.take_verified(service.vectors, stored, items, path.name)


async def import_paths(service: MemoryService, maintenance: MaintenanceRepository, p: Principal,
                       paths: Iterable[Path], *, scope: ScopeLevel | None = None, fmt: Format | None = None,
                       dry_run: bool = False, progress: bool = True, project_given: bool = False) -> ImportReport:
    """Import files (every one read, and checked, before any is written) as `p`; a project's
    CLAUDE.md into the project its folder is (unless `project_given`: the importer named one). A
    dry run counts what would be new, per kind and namespace, and writes nothing."""
    files = files_under(paths, fmt)
    report = ImportReport(files=len(files), dry_run=dry_run)
    read = []
    for path in files:
        kind = detect_format(path, fmt)
        got = read_file(path, kind)
        if kind == "basic-memory":  # a project folder counts its notes
            report.files += basic_memory.note_count(got) - 1  # type: ignore[arg-type]
        fp, fscope = claude_md.placement(path, p, scope, project_given) if kind == "claude-md" else (p, scope)
        if got and isinstance(got[0], Draft):
            read.append((path, kind, fp, _checked(service, fp, path, got, fscope)))  # type: ignore[arg-type]
        else:
            read.append((path, kind, fp, got))
    for path, kind, fp, items in read:
        if items and isinstance(items[0], dict):  # an export: verbatim, under the importing user
            records: list[dict[str, Any]] = items  # type: ignore[assignment]
            if dry_run:
                there = await maintenance.already_there(p.user_id, [
                    (r["memory"]["id"], r["memory"]["agent_id"], r["memory"]["project_id"],
                     r["memory"]["content_hash"]) for r in records])
                for r, old in zip(records, there, strict=True):
                    if old:
                        report.unchanged += 1
                    else:
                        report.created += 1
                        _plan(report, r["memory"]["kind"], namespace(r["memory"]["agent_id"],
                                                                     r["memory"]["project_id"]), r["memory"]["content"])
                continue
            bar = tqdm(total=len(records), desc=path.name, unit="memory", file=sys.stderr, disable=not progress)
            for start in range(0, len(records), 500):
                chunk = records[start:start + 500]
                created = await maintenance.import_records(p.user_id, chunk)
                report.created += created
                report.unchanged += len(chunk) - created
                bar.update(len(chunk))
            bar.close()
            continue
        checked: list[Checked] = items  # type: ignore[assignment]
        if dry_run:
            there = await maintenance.already_there(p.user_id, [(None, a, pr, h) for _, _, a, pr, h in checked])
            seen: set[tuple[str | None, str | None, str]] = set()
            for (d, _, a, pr, h), old in zip(checked, there, strict=True):
                if old or (a, pr, h) in seen:
                    report.unchanged += 1
                else:
                    report.created += 1
                    _plan(report, d.kind, namespace(a, pr), d.content)
                seen.add((a, pr, h))
            continue
        # What is there already is not embedded again: a second import of 10,000 takes a second, not 24.
        there = await maintenance.already_there(p.user_id, [(None, a, pr, h) for _, _, a, pr, h in checked])
        report.unchanged += sum(there)
        todo = [c for c, old in zip(checked, there, strict=True) if not old]
        verdict = await _peer_vectors(service, path, kind, todo) if kind in ("doobidoo", "doobidoo-json") else None
        if verdict is not None:
            report.embedding.append(verdict.note)
        await _write_drafts(service, fp, path, todo, report, progress, verdict.taken if verdict else {})
    if report.created and not dry_run:
        await maintenance.analyze()  # searches right after a big import plan with real statistics
    return report


async def export_user(maintenance: MaintenanceRepository, user_id: str, out: TextIO, *,
                      include_forgotten: bool = True) -> int:
    """Write every memory of the user with its history as JSON lines; returns the count."""
    from . import __version__

    def dumps(value: Any) -> str:
        return to_json(value, ensure_ascii=False)

    out.write(dumps({"type": "header", "format": EXPORT_FORMAT, "version": 1, "user_id": user_id,
                     "exported_by": f"mcp-memory {__version__}"}) + "\n")
    count = 0
    records: AsyncIterator[dict[str, Any]] = maintenance.export(user_id, include_forgotten=include_forgotten)
    async for record in records:
        out.write(dumps({"type": "memory", **record}) + "\n")
        count += 1
    return count
