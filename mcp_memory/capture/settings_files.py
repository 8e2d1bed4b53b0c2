"""Changing a harness's JSON settings file with a way back: refuse a file we cannot parse, show
the change as a diff, back the file up first, and on uninstall put the original bytes back (or,
when the harness has changed the file since, take out only what we added)."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..encoding import sha256_hex

BACKUP_SUFFIX = ".mcp-memory.bak"
STATE_SUFFIX = ".mcp-memory.json"


class SettingsFileError(Exception):
    """A file we must not touch (unparseable, not a JSON object) or an install state we cannot use."""


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """The parsed object and the exact bytes (None: the file does not exist yet)."""
    if not path.exists():
        return {}, None
    raw = path.read_bytes()
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SettingsFileError(f"{path} is not valid JSON ({exc}); not changed. Fix it, or add the entries "
                                "shown in the README by hand") from None
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} holds a JSON {type(data).__name__}, not an object; not changed")
    return data, raw


def diff(path: Path, before: bytes | None, after: str) -> str:
    old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, after.splitlines(keepends=True),
                                 fromfile=f"{path} (before)" if before is not None else "/dev/null",
                                 tofile=str(path))
    return "".join(lines)


def state_path(path: Path) -> Path:
    return path.with_name(path.name + STATE_SUFFIX)


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


@dataclass
class Change:
    path: Path
    before: bytes | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before is None or self.before != self.after.encode()


def plan(path: Path, edit: Callable[[dict[str, Any]], None]) -> Change:
    data, raw = load(path)
    edit(data)
    return Change(path, raw, dump(data))


def apply(change: Change, extra: dict[str, Any] | None = None) -> None:
    """Back up, record how to undo, then write (the state first: an interrupted install can still
    be undone)."""
    path = change.path
    if state_path(path).exists():
        raise SettingsFileError(f"{path} was already changed by an earlier install ({state_path(path)}); "
                                "run uninstall first")
    created = []
    for folder in reversed(path.parents):
        if not folder.exists():
            created.append(str(folder))
    path.parent.mkdir(parents=True, exist_ok=True)
    if change.before is not None:
        backup_path(path).write_bytes(change.before)
    state = {"existed": change.before is not None, "installed_sha256": sha256_hex(change.after),
             "created_dirs": created, "installed_at": datetime.now(UTC).isoformat(), **(extra or {})}
    state_path(path).write_text(dump(state), encoding="utf-8")
    tmp = path.with_name(path.name + ".mcp-memory.tmp")
    tmp.write_text(change.after, encoding="utf-8")
    if change.before is not None:
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def read_state(path: Path) -> dict[str, Any] | None:
    sp = state_path(path)
    if not sp.exists():
        return None
    try:
        state = json.loads(sp.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SettingsFileError(f"{sp} is damaged ({exc}); restore {path} from {backup_path(path)} by hand") from None
    return state if isinstance(state, dict) else None


def restore(path: Path, strip: Callable[[dict[str, Any]], None]) -> tuple[Change, str]:
    """What uninstall writes, and how: 'restored' (the original bytes), 'removed' (the file did
    not exist before), or 'stripped' (changed since install: only our entries taken out)."""
    state = read_state(path)
    if state is None:
        raise SettingsFileError(f"no install record for {path} ({state_path(path)}): nothing to undo")
    current = path.read_bytes() if path.exists() else None
    original = backup_path(path).read_bytes() if state.get("existed") else None
    if current is not None and sha256_hex(current.decode("utf-8", errors="replace")) == state["installed_sha256"]:
        how = "restored" if original is not None else "removed"
        return Change(path, current, (original or b"").decode("utf-8")), how
    if current is None:
        return Change(path, None, ""), "gone"
    data, _ = load(path)
    strip(data)
    if original is not None and _same_json(data, original):
        # Whatever changed since went away with our entries: the original bytes, exactly.
        return Change(path, current, original.decode("utf-8")), "restored"
    if original is None and not data:
        return Change(path, current, ""), "removed"
    return Change(path, current, dump(data)), "stripped"


def _same_json(data: dict[str, Any], raw: bytes) -> bool:
    try:
        return json.loads(raw) == data
    except ValueError:
        return False


def finish_restore(change: Change, how: str) -> None:
    path = change.path
    state = read_state(path) or {}
    if how == "removed":
        path.unlink(missing_ok=True)
    elif how == "restored":
        path.write_bytes(backup_path(path).read_bytes())
    elif how == "stripped":
        path.write_text(change.after, encoding="utf-8")
    state_path(path).unlink(missing_ok=True)
    if how != "stripped":  # a stripped file keeps its backup, for the user to compare
        backup_path(path).unlink(missing_ok=True)
    for folder in reversed(state.get("created_dirs", [])):
        try:
            Path(folder).rmdir()   # only if empty: nothing of the user's goes
        except OSError:
            break
