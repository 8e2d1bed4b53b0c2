"""The line a session start adds for the user before its memories: captures that failed
(status.py), and, at most once a day, hook commands of an earlier install that can lose a
session's turns (harness_check.stale_claude_hooks), with the one command that brings them up to
date. Whatever goes wrong here adds nothing: a notice must never cost the session its context."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..config import Settings
from . import status
from .harness_check import stale_claude_hooks
from .localfiles import write_private

log = logging.getLogger(__name__)

STALE_MARK = "stale-hooks-noticed"
STALE_EVERY_S = 24 * 3600   # a reminder a day, not one per session


def session_start(settings: Settings, harness: str, cwd: str | None) -> str | None:
    """The notice lines for a session start in `cwd`, or None."""
    lines = [status.notice(settings), _stale_hooks(settings, cwd) if harness == "claude-code" else None]
    return "\n".join(line for line in lines if line) or None


def _stale_hooks(settings: Settings, cwd: str | None) -> str | None:
    try:
        mark = Path(settings.data_dir) / STALE_MARK
        if mark.exists() and time.time() - mark.stat().st_mtime < STALE_EVERY_S:
            return None
        found = stale_claude_hooks(Path.home(), Path(cwd) if cwd else Path.cwd())
        if not found:
            return None
        mark.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(mark, time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
        why, fix = found[0]
        return f"mcp-memory: a hook command's {why}; tell the user to run `{fix}` again, which updates them"
    except Exception as exc:  # see the module's docstring
        log.debug("stale hook check skipped: %s", exc)
        return None
