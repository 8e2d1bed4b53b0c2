"""`mcp-memory import|export`: memories in from files (ours, a peer's, MEMORY.md …) and out as
our export or in a peer's format."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .cli_common import opened
from .config import Settings
from .errors import InvalidInput
from .exporting import TARGETS
from .importing import FORMATS

if TYPE_CHECKING:
    from .importers import ImportReport
    from .service import MemoryService


def add_import(sub: Any, common: argparse.ArgumentParser) -> None:
    imp = sub.add_parser("import", parents=[common],
                         help="import MEMORY.md / SOUL.md / IDENTITY.md, CLAUDE.md, an export, a memory.json, "
                              "mcp-memory-service's sqlite_vec.db, a mem0 / OpenMemory export, or a basic-memory "
                              "project folder")
    imp.add_argument("paths", nargs="+", type=Path,
                     help="files or folders (searched for .md files, and .json, .jsonl and database files of a "
                          "format it reads; a basic-memory project folder is read whole)")
    imp.add_argument("--from", dest="from_format", choices=FORMATS,
                     help="the files' format (default: detected from each file's name and content)")
    imp.add_argument("--dry-run", action="store_true",
                     help="show what would be written (counts per kind and namespace, the first few); write nothing")
    imp.add_argument("--scope", choices=["user", "project", "agent", "agent_project"],
                     help="where imported memories go (default: project, else user)")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    imp.set_defaults(run=cmd_import, cut_off=(
        "the import stopped part way: what it wrote is kept (each batch of an export, each memory of other "
        "files); run the same command again to finish it, what is already there is skipped"))


def add_export(sub: Any, common: argparse.ArgumentParser) -> None:
    exp = sub.add_parser("export", parents=[common],
                         help="export the user's memories with history and graph as JSONL, or in a peer's format "
                              "(--to)")
    exp.add_argument("destination", nargs="?", help="file (a folder for --to basic-memory); same as --output")
    exp.add_argument("--output", "-o", help="file to write (default: stdout), or basic-memory's folder")
    exp.add_argument("--to", choices=TARGETS, default="mcp-memory",
                     help="mcp-memory: ours, with history; doobidoo-json: what mcp-memory-service imports; "
                          "basic-memory: a folder of notes (new or empty). Peers get live, current memories only")
    exp.add_argument("--live-only", action="store_true", help="leave forgotten memories out")
    exp.add_argument("--no-vectors", action="store_true",
                     help="leave each memory's vector out (a smaller file; an import then embeds every memory again)")
    exp.set_defaults(run=cmd_export)


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from .backlog import Backlog
    from .importers import import_paths

    async with opened(settings) as (db, service, p):
        def run() -> Awaitable[ImportReport]:
            return import_paths(service, service.whole_store(), p, args.paths, scope=args.scope, fmt=args.from_format,
                                dry_run=args.dry_run, progress=not args.quiet,
                                project_given=settings.project is not None)

        unread = unembedded = None
        if args.dry_run:
            report = await run()
        else:
            # An export's memories go in verbatim; their names and keys are read as they go in, as a write reads them.
            report, unread = await Backlog(db.admin, service.structure).alongside(run, progress=not args.quiet)
            unembedded = await _embed_the_rest(service, progress=not args.quiet) if report.created else None
    if args.dry_run:
        print(f"dry run: would import {report.created} new memories from {report.files} file(s); "
              f"{report.unchanged} are already there; nothing was written")
    else:
        print(f"imported {report.created} new memories from {report.files} file(s); "
              f"{report.unchanged} were already there")
        for line in (*report.embedding, *report.graph):  # a peer's vectors taken, or why not; the graph's
            print(f"  {line}")
        for line in (unread, unembedded):
            if line:
                print(f"  {line}")
    for where, count in sorted(report.planned.items()):
        print(f"  {count:6d}  {where}")
    if args.dry_run and report.first:
        print("first ones:")
        for line in report.first:
            print(f"  {line}")
    return 0


async def _embed_the_rest(service: MemoryService, *, progress: bool) -> str | None:
    """An export's memories whose vectors it did not carry (or not of our model) embedded now, so
    that what was imported is found by meaning when the command ends; a failure says what is left."""
    from .errors import Unavailable

    if service.vectors is None or service.vectors.embedder is None:
        return None
    if not await service.vectors.probe():  # a backfill waits out the model's own timeouts and retries
        return ("some memories have no vector yet (the model failed or did not answer): `mcp-memory backfill` "
                "embeds them, as the server does when it starts")
    try:
        await service.vectors.backfill(reembed=False, progress=progress)
    except (Unavailable, OSError) as exc:
        return (f"some memories have no vector yet ({exc}): `mcp-memory backfill` embeds them, as the server "
                "does when it starts")
    return None


async def _vectors_of(service: MemoryService) -> tuple[str, int] | None:
    """The model and dimension an export's vectors are of: the one the store embeds with."""
    from .embeddings.base import resolve_dimension

    embedder = service.vectors.embedder if service.vectors is not None else None
    return (embedder.model, await resolve_dimension(embedder)) if embedder is not None else None


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from .exporting.run import export_to
    from .importers import export_user

    output = args.output or args.destination
    async with opened(settings) as (_, service, p):
        maintenance = service.whole_store()
        if args.to == "basic-memory":
            count = await export_to(maintenance, p.user_id, "basic-memory", folder=Path(output) if output else None)
        else:
            with _written(output) as out:
                if args.to == "doobidoo-json":
                    count = await export_to(maintenance, p.user_id, "doobidoo-json", out=out)
                else:
                    with_vectors = None if args.no_vectors else await _vectors_of(service)
                    count = await export_user(maintenance, p.user_id, out, include_forgotten=not args.live_only,
                                              vectors=with_vectors,
                                              turns=service.vectors.turns if service.vectors else (0.0, 0.0))
    print(f"exported {count} memories of user {p.user_id}", file=sys.stderr)
    return 0


@contextmanager
def _written(output: str | None) -> Iterator[TextIO]:
    """Standard output, or the file (a one-shot command: nothing else runs on the loop while it is
    written); one it cannot write is one line saying why, never a traceback."""
    if output in (None, "-"):
        yield sys.stdout
        return
    try:
        out = open(output, "w", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{output}: cannot be written ({exc.strerror or exc})") from None
    with out:
        yield out
