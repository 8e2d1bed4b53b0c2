"""Import and export: what importing/files.py reads from each file (our JSONL export, markdown
memory files, other memory tools' stores) checked, deduplicated and written through the service,
with a dry run and a progress bar; and our JSONL export. Importing twice adds nothing."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

import anyio
import numpy as np
from pydantic import BaseModel
from tqdm import tqdm

from .encoding import to_json
from .errors import InvalidInput
from .importing import Draft, Format, basic_memory, claude_md, doobidoo, doobidoo_json, export_vectors, peer_vectors
from .importing.files import EXPORT_FORMAT, Exported, files_under, read_file
from .models import Principal, ScopeLevel, WriteItem
from .repository.maintenance import MaintenanceRepository
from .service import MemoryService
from .validation import content_hash, moment


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
    # An export's graph: what of it could not go in as it was, and why.
    graph: list[str] = []


# --- running ---------------------------------------------------------------------------------------

def namespace(agent_id: str | None, project_id: str | None) -> str:
    parts = [f"agent {agent_id}"] * bool(agent_id) + [f"project {project_id}"] * bool(project_id)
    return ", ".join(parts) or "user"


T = TypeVar("T")
# Memories of an export written in one transaction.
BATCH = 500
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
                       taken: dict[peer_vectors.Embedded, np.ndarray]) -> list[str]:
    """The chunk written; `taken`: vectors of a peer's (checked to be our model's) by text, stored
    with their memories in the batch's transaction, never through the shared embedding cache."""
    if any(d.pinned or d.priority for d, *_ in chunk):  # what a batch write does not take (nor `taken`)
        return [(await service.write(
            p, d.content, title=d.title, kind=d.kind, tags=d.tags, metadata=d.metadata, pinned=d.pinned,
            priority=d.priority, scope=level, occurred_at=d.occurred_at, source=source, about=d.about)).status
            for d, level, *_ in chunk]
    items = [WriteItem(content=d.content, title=d.title, kind=d.kind, tags=d.tags, metadata=d.metadata,
                       scope=level, occurred_at=d.occurred_at, about=d.about) for d, level, *_ in chunk]
    given = [v.tolist() if (v := taken.get((service.check.content(d.content), None))) is not None else None
             for d, *_ in chunk] if taken else None
    # The subjects' forms a question compares are left to the questions (writing.py `write_many`).
    return [m.status for m in (await service.write_many(p, items, source=source, embeddings=given,
                                                        compared_forms=False)).memories]


def _plan(report: ImportReport, kind: str, where: str, content: str) -> None:
    key = f"{kind} in {where}"
    report.planned[key] = report.planned.get(key, 0) + 1
    if len(report.first) < 5:
        report.first.append(f"[{kind}, {where}] {content[:100]}")


async def _write_drafts(service: MemoryService, p: Principal, path: Path, checked: list[Checked],
                        report: ImportReport, progress: bool,
                        taken: dict[peer_vectors.Embedded, np.ndarray]) -> None:
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
    items = [((text, None), d.metadata.get("original_id") if text == d.content else None)
             for d, *_ in todo for text in (service.check.content(d.content),)]
    return await peer_vectors.take_verified(service.vectors, stored, items, path.name)


async def _import_export(service: MemoryService, maintenance: MaintenanceRepository, p: Principal, path: Path,
                         exported: Exported, report: ImportReport, *, dry_run: bool, progress: bool) -> None:
    """An export's memories verbatim, under the importing user, with the graph it carries."""
    records = exported.records
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
        return
    # The export's vectors, where they are our model's: a store moved is not embedded again.
    model, turns = (records[0]["vector_model"], records[0]["vector_turns"]) if records else (None, None)
    # An episode's vector holds the turn before it in its store, as the file has it.
    befores = export_vectors.turns_before([r["memory"] for r in records], service.vectors, turns)
    verdict = await export_vectors.take(
        service.vectors, model,
        [(r["memory"]["content"], str(r["memory"]["id"]), r["vector"], before)
         for r, before in zip(records, befores, strict=True)], path.name)
    if verdict is not None:
        report.embedding.append(verdict.note)
    taken = verdict.taken if verdict else {}
    # A version 2 file's graph goes in as it was (a person's merges, splits and key fixes kept), not
    # read again by rules; its entities first, its edits last.
    carried = exported.entities or any(r["graph"] is not None for r in records)
    graph = await maintenance.import_entities(p.user_id, exported.entities) if carried else None
    bar = tqdm(total=len(records), desc=path.name, unit="memory", file=sys.stderr, disable=not progress)

    async def write(start: int) -> None:
        chunk = [{**r, "vector": taken.get((r["memory"]["content"], before))}
                 for r, before in zip(records[start:start + BATCH], befores[start:start + BATCH], strict=True)]
        created = await maintenance.import_records(p.user_id, chunk, model if taken else None, graph)
        report.created += created
        report.unchanged += len(chunk) - created
        bar.update(len(chunk))
    await _at_once(range(0, len(records), BATCH), write, service.settings.import_writers)
    bar.close()
    if graph is not None:  # once every batch is in: an edge's two ends may be in two of them
        await maintenance.import_edges(p.user_id, records)
    if graph is not None and exported.edits:
        _, left = await maintenance.import_edits(p.user_id, graph, exported.edits)
        if left:
            report.graph.append(f"{path.name}: {left} of the graph's edits were left out: they touch entities this "
                                "store held already under other ids, where undoing them could not be right")


async def _at_once(items: Iterable[T], work: Callable[[T], Awaitable[None]], workers: int) -> None:
    """`work` on each of `items`, up to `workers` of them at a time; the first failure stops the rest
    and is raised as it was."""
    left = iter(items)
    failed: list[Exception] = []

    async def worker() -> None:
        try:
            for item in left:
                await work(item)
        except Exception as exc:  # raised below, not as a task group's ExceptionGroup
            failed.append(exc)
            group.cancel_scope.cancel()
    async with anyio.create_task_group() as group:
        for _ in range(workers):
            group.start_soon(worker)
    if failed:
        raise failed[0]


async def _import_file(service: MemoryService, maintenance: MaintenanceRepository, p: Principal, path: Path,
                       kind: Format, fp: Principal, items: list[Checked] | Exported, report: ImportReport, *,
                       dry_run: bool, progress: bool) -> None:
    """One file's records (an export's) or checked drafts counted (a dry run) or written."""
    if isinstance(items, Exported):
        await _import_export(service, maintenance, p, path, items, report, dry_run=dry_run, progress=progress)
        return
    checked = items
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
        return
    # What is there already is not embedded again: a second import of 10,000 takes a second, not 24.
    there = await maintenance.already_there(p.user_id, [(None, a, pr, h) for _, _, a, pr, h in checked])
    report.unchanged += sum(there)
    todo = [c for c, old in zip(checked, there, strict=True) if not old]
    verdict = await _peer_vectors(service, path, kind, todo) if kind in ("doobidoo", "doobidoo-json") else None
    if verdict is not None:
        report.embedding.append(verdict.note)
    await _write_drafts(service, fp, path, todo, report, progress, verdict.taken if verdict else {})


@contextlib.asynccontextmanager
async def _text_indexes_after(maintenance: MaintenanceRepository, rows: int, at_least: int, memory_mb: int,
                              progress: bool) -> AsyncIterator[None]:
    """Around a load of `rows` memories into a store that holds none, and at least `at_least` of
    them: the GIN indexes (full text, trigram, tags) are built once after the rows, which then go in
    at nearly twice the rate (docs/benchmarks.md, "A first load's text indexes after its rows"). A
    search meanwhile reads every row, correctly; a load killed midway leaves them to the next start."""
    deferred = await maintenance.defer_text_indexes_of_empty_store() if at_least and rows >= at_least else []
    try:
        yield
    finally:
        if deferred:
            if progress:
                print("building the full-text, trigram and tag indexes ...", file=sys.stderr)
            await maintenance.restore_deferred_indexes(memory_mb)


async def import_paths(service: MemoryService, maintenance: MaintenanceRepository, p: Principal,
                       paths: Iterable[Path], *, scope: ScopeLevel | None = None, fmt: Format | None = None,
                       dry_run: bool = False, progress: bool = True, project_given: bool = False) -> ImportReport:
    """Import files (every one read, and checked, before any is written) as `p`; a project's
    CLAUDE.md into the project its folder is (unless `project_given`: the importer named one). A
    dry run counts what would be new, per kind and namespace, and writes nothing."""
    files = files_under(paths, fmt)
    report = ImportReport(files=len(files), dry_run=dry_run)
    read = []
    with _held_whole():
        for path, kind in files:
            got = read_file(path, kind)
            if kind == "basic-memory":  # a project folder counts its notes
                report.files += basic_memory.note_count(got) - 1  # type: ignore[arg-type]
            fp, fscope = claude_md.placement(path, p, scope, project_given) if kind == "claude-md" else (p, scope)
            read.append((path, kind, fp, got if isinstance(got, Exported)
                         else _checked(service, fp, path, got, fscope)))
    try:
        await _write_read(service, maintenance, p, read, report, dry_run=dry_run, progress=progress)
    finally:
        gc.unfreeze()
    return report


@contextlib.contextmanager
def _held_whole() -> Iterator[None]:
    """Around reading every file an import writes: what they hold is kept whole until it is written
    (a million memories are tens of millions of objects) and holds no cycles, yet the cyclic collector
    walked all of it again at each full collection, half the read's time at 100,000 (docs/benchmarks.md,
    "The collector and a big import's read"). So none runs during the read, and what was read is then
    left out of every collection (`gc.freeze`) until the caller's `gc.unfreeze` once it is written."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()  # not when the read is refused: nothing is then written, nor unfrozen
    finally:
        if enabled:
            gc.enable()


async def _write_read(service: MemoryService, maintenance: MaintenanceRepository, p: Principal,
                      read: list[tuple[Path, Format, Principal, list[Checked] | Exported]], report: ImportReport, *,
                      dry_run: bool, progress: bool) -> None:
    """Write (or, in a dry run, count) what `import_paths` read and checked."""
    # A first load into an empty store builds the vector index after its rows (vectors.py `loading`),
    # and the text indexes (`_text_indexes_after`).
    rows = sum(len(items.records if isinstance(items, Exported) else items) for *_, items in read)
    at_least, memory_mb = service.settings.import_index_after, service.settings.import_index_memory_mb
    loading = (service.vectors.loading(rows, at_least, memory_mb=memory_mb, progress=progress)
               if service.vectors is not None and not dry_run else contextlib.nullcontext())
    text_indexes = (_text_indexes_after(maintenance, rows, at_least, memory_mb, progress)
                    if not dry_run else contextlib.nullcontext())
    async with text_indexes, loading:
        for path, kind, fp, items in read:
            await _import_file(service, maintenance, p, path, kind, fp, items, report, dry_run=dry_run,
                               progress=progress)
    if report.created and not dry_run:
        await maintenance.analyze()  # searches right after a big import plan with real statistics


async def export_user(maintenance: MaintenanceRepository, user_id: str, out: TextIO, *,
                      include_forgotten: bool = True, vectors: tuple[str, int] | None = None,
                      turns: tuple[float, float] = (0.0, 0.0)) -> int:
    """Write every memory of the user with its history as JSON lines; returns the count. With
    `vectors` (the model and dimension the store embeds with), each memory's vector of that model,
    and `turns`, what an episode's holds of the turn before it (Vectors.turns)."""
    from . import __version__

    def dumps(value: Any) -> str:
        return to_json(value, ensure_ascii=False)

    head = {"type": "header", "format": EXPORT_FORMAT, "version": 2, "user_id": user_id,
            "exported_by": f"mcp-memory {__version__}"}
    if vectors is not None:
        head["embedding"] = export_vectors.header(*vectors, turns)
    out.write(dumps(head) + "\n")
    count = 0
    records: AsyncIterator[tuple[str, dict[str, Any]]] = maintenance.export(
        user_id, include_forgotten=include_forgotten, vectors_of=vectors[0] if vectors else None)
    async for kind, record in records:
        if kind == "memory":
            count += 1
            if "vector" in record:
                record["vector"] = export_vectors.encoded(record["vector"])
            out.write(dumps({"type": kind, **record}) + "\n")
        else:
            out.write(dumps({"type": kind, kind: record}) + "\n")
    return count
