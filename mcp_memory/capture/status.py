"""Capture runs that failed for a reason of ours (database down or hanging, a bug), per transcript,
in a small JSON file under the data dir, so the user hears of them: the next session start says so
in one line (`notice`), `mcp-memory capture --status` and `doctor` list them.

Hook processes import this, so it stays on the standard library. The file is user-only, replaced
atomically, and read-modify-written under an advisory lock (hooks of several sessions end at
once). Nothing here raises: a status that cannot be written must not turn a failed capture into a
crashed hook; the hook's own stderr line still says what happened."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import Settings
from .localfiles import held, write_private

log = logging.getLogger(__name__)

FILE = "capture-status.json"
LOCK = "capture-status.lock"
MAX_ENTRIES = 200      # the oldest go first; a status file must not grow with every failure forever
REASON_CHARS = 300
LOCK_WAIT_S = 2.0      # a hook has a budget; a status not recorded is better than a hook past it

# A database URL in an error message may carry its password.
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+@", re.I)


@dataclass(frozen=True)
class CaptureFailure:
    key: str
    reason: str
    at: datetime
    reported: bool = False
    attempts: int = 1


def status_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / FILE


def _clean_reason(reason: str) -> str:
    line = " ".join(str(reason).split()) or "unknown error"
    line = _URL_PASSWORD.sub(r"\g<head>***@", line)
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("capture status %s unreadable (%s); starting it afresh", path, exc)
        return {}
    entries = data.get("failures") if isinstance(data, dict) else None
    return {k: v for k, v in entries.items() if isinstance(v, dict)} if isinstance(entries, dict) else {}


def _save(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    if len(entries) > MAX_ENTRIES:
        newest = sorted(entries.items(), key=lambda kv: str(kv[1].get("at", "")))[-MAX_ENTRIES:]
        entries = dict(newest)
    write_private(path, json.dumps({"version": 1, "failures": entries}, ensure_ascii=False, indent=1), durable=True)


def _update(settings: Settings, change: Any) -> Any:
    path = status_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Without the lock in time the record is still written (atomic replace keeps the file whole;
    # at worst one of two concurrent records is lost) rather than wait past a hook's budget.
    with held(path.parent / LOCK, LOCK_WAIT_S):
        entries = _load(path)
        result, changed = change(entries)
        if changed:
            _save(path, entries)
        return result


def record_failure(settings: Settings, key: str, reason: str) -> None:
    """The capture of `key` failed for a reason of ours; a later failure of the same transcript
    replaces the reason and is reported again. `reason` is "category: detail" ("database not
    available: connection refused"); session start's line names only the category."""
    def change(entries: dict[str, dict[str, Any]]) -> tuple[None, bool]:
        before = entries.get(key) or {}
        attempts = before.get("attempts", 0) if isinstance(before.get("attempts"), int) else 0
        entries[key] = {"reason": _clean_reason(reason), "at": datetime.now(UTC).isoformat(),
                        "reported": False, "attempts": attempts + 1}
        return None, True
    try:
        _update(settings, change)
    except Exception as exc:  # never raises: see the module's docstring
        log.warning("could not record the failed capture of %s: %s", key, exc)


def record_success(settings: Settings, key: str) -> None:
    """`key` is captured now: a failure recorded for it earlier is over."""
    if not status_path(settings).exists():  # the common case, without taking the lock
        return
    try:
        _update(settings, lambda entries: (None, entries.pop(key, None) is not None))
    except Exception as exc:
        log.warning("could not clear the capture status of %s: %s", key, exc)


def _failure(key: str, v: dict[str, Any]) -> CaptureFailure:
    try:
        at = datetime.fromisoformat(str(v.get("at")))
    except ValueError:
        at = datetime.fromtimestamp(0, UTC)
    attempts = v.get("attempts")
    return CaptureFailure(key=key, reason=str(v.get("reason") or "unknown error"), at=at,
                          reported=bool(v.get("reported")), attempts=attempts if isinstance(attempts, int) else 1)


def failures(settings: Settings) -> list[CaptureFailure]:
    """Every recorded failure, oldest first."""
    try:
        entries = _load(status_path(settings))
    except Exception as exc:
        log.warning("could not read the capture status: %s", exc)
        return []
    return sorted((_failure(k, v) for k, v in entries.items()), key=lambda f: f.at)


def notice(settings: Settings) -> str | None:
    """One line for session start naming the failures not yet reported, which it marks reported;
    None when there are none."""
    if not status_path(settings).exists():
        return None

    def change(entries: dict[str, dict[str, Any]]) -> tuple[list[CaptureFailure], bool]:
        fresh = [_failure(k, v) for k, v in entries.items() if not v.get("reported")]
        for f in fresh:
            entries[f.key]["reported"] = True
        return fresh, bool(fresh)
    try:
        fresh = _update(settings, change)
    except Exception as exc:
        log.warning("could not read the capture status: %s", exc)
        return None
    if not fresh:
        return None
    # The most common reason names the line (newest first among equals); the others are counted.
    # A reason is "category: detail"; the line names the category, `capture --status` the detail.
    counts: dict[str, int] = {}
    for f in sorted(fresh, key=lambda f: f.at, reverse=True):
        category = f.reason.split(": ", 1)[0]
        counts[category] = counts.get(category, 0) + 1
    reasons = sorted(counts, key=lambda r: -counts[r])
    others = len(reasons) - 1
    why = reasons[0] + (f", and {others} other reason{'s' if others > 1 else ''}" if others else "")
    if len(why) > 160:
        why = why[:159] + "…"
    n = len(fresh)
    return (f"mcp-memory: {n} session{'s' if n != 1 else ''} not captured ({why}); "
            "see `mcp-memory capture --status`")
