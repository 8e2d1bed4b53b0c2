"""The capture commands of `mcp-memory`: hook, capture, install, uninstall."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..auth import local_principal
from ..config import Settings
from .hooks import EVENTS, run_hook
from .transcripts import Transcript, TranscriptError, read

HARNESSES = ("claude-code", "openclaw")


def cmd_hook(args: argparse.Namespace, settings: Settings) -> int:
    return run_hook(args.event, args.harness, lambda: settings)


def _load(paths: list[Path], fmt: str | None) -> list[tuple[Path, Transcript, Path | None]]:
    """Each transcript with its working directory when that still exists here (identity as for
    stdio: it decides the project)."""
    out = []
    for path in paths:
        t = read(path, fmt)  # type: ignore[arg-type]
        out.append((path, t, Path(t.cwd) if t.cwd and Path(t.cwd).is_dir() else None))
    return out


async def cmd_capture(args: argparse.Namespace, settings: Settings) -> int:
    from ..db import open_database
    from ..service import MemoryService
    from .capture import Capturer

    reports = []
    try:
        loaded = _load(args.paths, args.format)
    except TranscriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        for path, transcript, folder in loaded:
            if args.session:
                transcript.session_id = args.session
            p = local_principal(settings, client_name=args.harness, cwd=folder)
            key = f"{args.harness}:{transcript.session_id}" if transcript.session_id else str(path.resolve())
            report = await Capturer(service, settings, args.harness).capture(p, transcript, key=key, path=str(path))
            reports.append(report)
            if not args.json:
                print(report.line())
    finally:
        await db.close()
    if args.json:
        print(json.dumps([asdict(r) for r in reports], indent=2))
    return 0


def cmd_install(args: argparse.Namespace, settings: Settings) -> int:
    from .install import install, uninstall

    action = install if args.command == "install" else uninstall
    return action(args.harness, scope=args.scope, project_dir=Path(args.project_dir or ".").resolve(),
                  home=Path(args.home).expanduser() if args.home else None, dry_run=args.dry_run,
                  passthrough=_passthrough(args))


def _passthrough(args: argparse.Namespace) -> list[str]:
    """The identity / database flags given to install, repeated on the commands it writes."""
    out: list[str] = []
    for name in ("database_url", "data_dir", "user", "agent", "project"):
        value = getattr(args, name, None)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    hook = sub.add_parser("hook", parents=[common], help="run as a harness hook: JSON on stdin, context on stdout")
    hook.add_argument("event", choices=EVENTS)
    hook.add_argument("--harness", choices=HARNESSES, default="claude-code",
                      help="whose input and output format (default claude-code)")
    # A hook must never fail the user's turn (exit 2 blocks a Claude Code prompt): a bad setting
    # is reported on stderr with status 0.
    hook.set_defaults(run=cmd_hook, bad_config_status=0)

    cap = sub.add_parser("capture", parents=[common],
                         help="store a transcript's turns as episodes (only what is new since the last run)")
    cap.add_argument("paths", nargs="+", type=Path, help="Claude Code / OpenClaw session JSONL, or 'Speaker: text'")
    cap.add_argument("--format", choices=["claude-code", "openclaw", "plain"], help="default: detected")
    cap.add_argument("--harness", choices=[*HARNESSES, "cli"], default="cli", help="recorded as the agent and tag")
    cap.add_argument("--session", help="session id to tag with (default: the transcript's own)")
    cap.add_argument("--json", action="store_true")
    cap.set_defaults(run=cmd_capture)

    for name, what in (("install", "add the MCP server and the memory hooks to a harness's settings (backup first)"),
                       ("uninstall", "restore the settings as they were before install")):
        p = sub.add_parser(name, parents=[common], help=what)
        p.add_argument("harness", choices=HARNESSES)
        p.add_argument("--scope", choices=["user", "project"], default="user",
                       help="user (default): ~/.claude.json + ~/.claude/settings.json; project: .mcp.json + "
                            ".claude/settings.json in --project-dir (OpenClaw has user scope only)")
        p.add_argument("--project-dir", help="the project for --scope project (default: the working directory)")
        p.add_argument("--home", help="the home directory whose settings to change (default: yours)")
        p.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
        p.set_defaults(run=cmd_install)
