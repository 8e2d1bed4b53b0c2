"""Catching up sessions whose capture did not finish.

A harness may kill a capture hook before it has handed its work off (`claude -p` kills its Stop
hook 10-15 ms after starting it, and often never runs SessionEnd), so no capture can count on its
own hook. Every hook therefore also looks at the session's transcripts directory (Claude Code keeps
one per working directory, `~/.claude/projects/<encoded cwd>/<session>.jsonl`) and hands whatever
changed since it was last captured to the detached worker (worker.py).

The hook's look must cost next to nothing when nothing is behind: a small JSON file under the data
dir remembers each transcript's size and mtime when it was last captured in full, so the look is one
directory scan and one file read, no database. The cursors in the database stay the truth of what is
stored: this file only decides whether a worker is worth starting, so losing an update to it costs
a capture that finds nothing new, never a turn.

Which transcripts count: those a hook of ours has seen (registered by session start and prompt
submit, however old), and those changed within `capture_catch_up_days` (a session whose every hook
was killed). Older history from before the hooks were installed is left alone.

Imported by hook processes: the standard library and the settings only, the rest where it is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings
from .localfiles import held, write_private

if TYPE_CHECKING:
    from ..models import Principal
    from ..service import MemoryService
    from .capture import Capturer
    from .transcripts import Transcript

log = logging.getLogger(__name__)

STATE_FILE = "capture-seen.json"
LOCKS = "capture-locks"
LOCK_WAIT_S = 2.0          # a hook has a budget; a state not written only costs a capture that finds nothing
RETRY_AFTER_S = 60.0       # after a failed catch-up (database down), hooks wait this long before the next
MAX_FILES = 5000           # remembered transcripts; the ones whose file is gone go first
UNCAPTURED = [-1, -1]      # registered by a hook, not captured yet

Stamp = tuple[int, int]    # (size, mtime in ns) of a transcript file


# --- where a harness keeps its transcripts ----------------------------------------------------

def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def claude_project_key(cwd: str) -> str:
    """Claude Code's directory name for a working directory: every UTF-16 code unit outside
    [A-Za-z0-9] becomes '-' (so '/', '.', '_', spaces and non-ASCII all fold); a name longer than
    200 is cut there and gets '-' and the base-36 of its string hash (Java's, over UTF-16 units)."""
    raw = cwd.encode("utf-16-le")
    units = [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]
    key = "".join(chr(u) if chr(u).isascii() and chr(u).isalnum() else "-" for u in units)
    if len(key) <= 200:
        return key
    h = 0
    for u in units:
        h = (h * 31 + u) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return f"{key[:200]}-{_base36(abs(h))}"


def claude_projects_root() -> Path:
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config).expanduser() if config else Path.home() / ".claude") / "projects"


def transcripts_dir(harness: str, transcript: str | None, cwd: str | None) -> Path | None:
    """The folder holding this session's transcript and its siblings (the other sessions of the
    project). The hook's transcript_path says it exactly; without one, Claude Code's encoding of
    the working directory."""
    if transcript:
        return Path(transcript).expanduser().parent
    if harness == "claude-code" and cwd:
        return claude_projects_root() / claude_project_key(cwd)
    return None


# --- the state file -------------------------------------------------------------------------------

def _state_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / STATE_FILE


def _lock_path(settings: Settings, name: str) -> Path:
    folder = Path(settings.data_dir) / LOCKS
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / (hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".lock")


def lock(settings: Settings, name: str, wait: float = 0.0) -> contextlib.AbstractContextManager[bool]:
    """A named lock under the data dir (a transcript's capture, a folder's catch-up)."""
    return held(_lock_path(settings, name), wait)


def busy(settings: Settings, name: str) -> bool:
    """Whether another process holds the named lock now."""
    with lock(settings, name) as got:
        return not got


def _load(settings: Settings) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        data = {}
    files = data.get("files")
    failed = data.get("failed")
    return {"files": files if isinstance(files, dict) else {}, "failed": failed if isinstance(failed, dict) else {}}


def _save(settings: Settings, state: dict[str, Any]) -> None:
    files: dict[str, Any] = state["files"]
    if len(files) > MAX_FILES:
        for name in [n for n in files if not os.path.exists(n)]:
            del files[name]
        while len(files) > MAX_FILES:
            del files[next(iter(files))]   # insertion order: the longest known
    write_private(_state_path(settings), json.dumps({"version": 1, **state}, ensure_ascii=False))


def _update(settings: Settings, change: Callable[[dict[str, Any]], bool]) -> None:
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    with lock(settings, STATE_FILE, LOCK_WAIT_S):
        state = _load(settings)
        if change(state):
            _save(settings, state)


def stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _key(path: Path) -> str:
    return os.path.abspath(path)


def mark_captured(settings: Settings, path: Path, at: Stamp) -> None:
    """`path` is captured as it stood at `at` (taken before it was read: a line appended while it
    was being captured makes it differ, so it is looked at again)."""
    def change(state: dict[str, Any]) -> bool:
        state["files"][_key(path)] = list(at)
        return True
    _update(settings, change)


def mark_failed(settings: Settings, folder: Path, failed: bool) -> None:
    def change(state: dict[str, Any]) -> bool:
        name, before = _key(folder), state["failed"]
        if failed:
            before[name] = time.time()
            return True
        return before.pop(name, None) is not None
    _update(settings, change)


def harness_folder(folder: Path) -> bool:
    """A folder a harness keeps its sessions in: under Claude Code's projects root, or named as it
    names a project (an encoded absolute path starts with '-'). Elsewhere (a hook payload pointing
    at /tmp/x.jsonl) the folder's other files are not sessions of ours to take unless a hook of ours
    registered them."""
    try:
        if folder.resolve().is_relative_to(claude_projects_root().resolve()):
            return True
    except OSError:
        return False
    return folder.name.startswith("-")


def _candidates(settings: Settings, state: dict[str, Any], folder: Path, exclude: str | None) -> list[Path]:
    files: dict[str, Any] = state["files"]
    ours = harness_folder(folder)
    since = time.time_ns() - int(settings.capture_catch_up_days * 86400 * 1e9)
    found: list[tuple[int, Path]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(".jsonl") or _key(Path(entry.path)) == exclude:
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        if not entry.is_file():
            continue
        known = files.get(_key(Path(entry.path)))
        if known == [st.st_size, st.st_mtime_ns]:
            continue
        if known is None and (st.st_mtime_ns < since or not ours):
            continue   # history from before our hooks, or a file that is no harness session: not ours to take
        found.append((st.st_mtime_ns, Path(entry.path)))
    return [p for _, p in sorted(found)]


def behind(settings: Settings, folder: Path, exclude: Path | None = None) -> list[Path]:
    """Transcripts in `folder` changed since they were last captured (oldest first)."""
    return _candidates(settings, _load(settings), folder, _key(exclude) if exclude else None)


def look(settings: Settings, folder: Path, current: Path | None, own: bool = False) -> bool:
    """The hook's look: registers the session's own transcript (so it is caught up however long
    the next hook takes to come) and says whether a catch-up worker is worth starting for the
    others: something is behind, no catch-up of this folder runs, and none failed a moment ago.
    `own`: the session's own transcript counts too. At a session's start it holds what earlier runs
    of a resumed session said (`claude -p --resume`), whose Stop hooks `-p` killed: left to the
    session's own capture events, it was never taken."""
    current_key = _key(current) if current else None
    state = _load(settings)
    if current_key and current_key not in state["files"] and current is not None and current.is_file():
        def change(s: dict[str, Any]) -> bool:
            if current_key in s["files"]:
                return False
            s["files"][current_key] = UNCAPTURED
            return True
        _update(settings, change)
    if not _candidates(settings, _load(settings) if own else state, folder, None if own else current_key):
        return False
    failed_at = state["failed"].get(_key(folder))
    if isinstance(failed_at, int | float) and time.time() - failed_at < RETRY_AFTER_S:
        return False
    return not busy(settings, f"catch-up:{_key(folder)}")


# --- the catch-up itself (in the worker) -----------------------------------------------------------

def cursor_key(harness: str, session_id: str | None, path: Path) -> str:
    """The key a capture's cursor is stored under: the same whichever hook or catch-up runs it."""
    return f"{harness}:{session_id}" if session_id else str(path.resolve())


async def catch_up(service: MemoryService, settings: Settings, principal: Principal, harness: str,
                   transcripts_dir: Path) -> int:
    """Capture every transcript in `transcripts_dir` that changed since it was last captured;
    returns how many were taken. One catch-up per folder at a time: another run finds the lock
    held and leaves it to the one running. A transcript that cannot be read is remembered as it
    stands (it is not read again until it changes); a database error stops the catch-up (recorded
    against the transcript it was on) and is raised."""
    from .capture import Capturer
    from .transcripts import TranscriptError, read

    folder = transcripts_dir
    with lock(settings, f"catch-up:{_key(folder)}") as got:
        if not got:
            return 0
        capturer = Capturer(service, settings, harness)
        taken = 0
        for path in behind(settings, folder):
            at = stamp(path)
            if at is None:
                continue
            try:
                transcript = read(path)
            except TranscriptError as exc:
                log.info("catch-up: %s skipped: %s", path, exc)
                mark_captured(settings, path, at)
                continue
            key = cursor_key(harness, transcript.session_id, path)
            try:   # the capturer records a failure of ours against `key`, and clears it on success
                await capturer.capture(principal, transcript, key=key, path=str(path))
            except Exception:
                mark_failed(settings, folder, True)
                raise
            mark_captured(settings, path, at)
            taken += 1
        mark_failed(settings, folder, False)
        return taken


async def capture_file(capturer: Capturer, p: Principal, file: Path,
                       load: Callable[[], tuple[Transcript, str, str | None]]) -> tuple[Stamp | None, str]:
    """One capture of an event's own transcript `file` (`load` reads it: the transcript, its
    cursor's key and path), under the file's lock held by the caller, marked captured as it stood
    when read: its stamp then, and the key. A worker and a resumed session's start (hooks.py) both."""
    at = stamp(file)
    transcript, key, path = load()
    await capturer.capture(p, transcript, key=key, path=path)   # logs its line, records its status
    if at is not None:
        mark_captured(capturer.settings, file, at)
    return at, key
