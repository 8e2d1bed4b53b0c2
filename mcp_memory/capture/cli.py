"""The capture commands of `mcp-memory`: hook, capture, install, uninstall."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import MemoryServiceError
from ..hooksocket import EVENTS
from . import status
from .hooks import run_hook
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


def _key(harness: str, path: Path, transcript: Transcript) -> str:
    return f"{harness}:{transcript.session_id}" if transcript.session_id else str(path.resolve())


async def cmd_capture(args: argparse.Namespace, settings: Settings) -> int:
    # The one summary line per transcript is at INFO; other commands keep the root at WARNING.
    logging.getLogger("mcp_memory.capture").setLevel(settings.log_level.upper())
    if args.status:
        return await cmd_status(args, settings)
    if not args.paths:
        print("error: give the transcripts to capture (or --status)", file=sys.stderr)
        return 2
    from ..auth import local_principal
    from ..composition import compose
    from ..db import open_database
    from .capture import Capturer, failure_reason

    reports = []
    try:
        loaded = _load(args.paths, args.format)
    except TranscriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for _, transcript, _ in loaded:
        if args.session:
            transcript.session_id = args.session
    try:
        db = await open_database(settings)
    except Exception as exc:
        # Every transcript asked for is a session not captured, for a reason of ours.
        for path, transcript, _ in loaded:
            status.record_failure(settings, _key(args.harness, path, transcript), failure_reason(exc))
        print(f"error: nothing captured: {failure_reason(exc)}", file=sys.stderr)
        return 1
    failed = 0
    try:
        service = (await compose(db, settings)).service
        for path, transcript, folder in loaded:
            p = local_principal(settings, client_name=args.harness, cwd=folder)
            try:
                report = await Capturer(service, settings, args.harness).capture(
                    p, transcript, key=_key(args.harness, path, transcript), path=str(path.resolve()))
            except MemoryServiceError as exc:
                failed += 1
                print(f"{path}: not captured: {exc}", file=sys.stderr)
                continue
            except Exception as exc:  # recorded by the capturer; the next transcript may still go in
                failed += 1
                print(f"{path}: not captured: {failure_reason(exc)}", file=sys.stderr)
                continue
            reports.append(report)
            if not args.json:
                print(report.line())
    finally:
        await db.close()
    if args.json:
        print(json.dumps([asdict(r) for r in reports], indent=2))
    return 1 if failed else 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """`capture --status`: failed captures (from the status file, readable with the database
    down) and, from the database, transcripts whose turns were cleaned, cut or skipped."""
    from .status_view import cursor_problems, render

    failures = status.failures(settings)
    problems, error = await cursor_problems(settings)
    if args.json:
        print(json.dumps({"failures": [{**asdict(f), "at": f.at.isoformat()} for f in failures],
                          "transcripts": [{**asdict(c), "updated_at": c.updated_at.isoformat()} for c in problems],
                          "database_error": error}, indent=2, ensure_ascii=False))
    else:
        print(render(failures, problems, error))
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
    cap.add_argument("paths", nargs="*", type=Path, help="Claude Code / OpenClaw session JSONL, or 'Speaker: text'")
    cap.add_argument("--status", action="store_true",
                     help="list captures that failed and turns that were cleaned, cut or skipped; capture nothing")
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
