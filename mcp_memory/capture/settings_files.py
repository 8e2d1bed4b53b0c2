"""Changing a harness's settings file (JSON, or JSON5 for OpenClaw) with a way back: refuse a file
we cannot parse, show the change as a diff, back the file up first, and on uninstall put the
original bytes back (or, when that is not possible, take out only what we added and say why).

A settings file kept as a symlink (stow, chezmoi, home-manager) stays a link: what is written goes
to the file it points at. A backup is never overwritten: a second one gets a number."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..encoding import sha256_hex
from . import json5_edit

BACKUP_SUFFIX = ".mcp-memory.bak"
STATE_SUFFIX = ".mcp-memory.json"

Flavor = Literal["json", "json5"]
Strip = Callable[[dict[str, Any]], None]
Ours = Callable[[dict[str, Any]], list[str]]


class SettingsFileError(Exception):
    """A file we must not touch (unparseable, not a JSON object) or an install state we cannot use."""


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def real_path(path: Path) -> Path:
    """Where the bytes live: the file a symlink points at (followed all the way), else the path.
    A link to a file not there yet points where it will be; a symlink loop is refused."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        return Path(os.path.realpath(path))
    except OSError as exc:
        raise SettingsFileError(f"cannot follow {path} ({exc.strerror or exc}); not changed") from None


def parse(raw: bytes, path: Path, flavor: Flavor = "json") -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
        data = json5_edit.parse(text) if flavor == "json5" else json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        what = "JSON5" if flavor == "json5" else "JSON"
        raise SettingsFileError(f"{path} is not valid {what} ({exc}); not changed. Fix it, or add the entries "
                                "shown in the README by hand") from None
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} holds a JSON {type(data).__name__}, not an object; not changed")
    return data


def load(path: Path, flavor: Flavor = "json") -> tuple[dict[str, Any], bytes | None]:
    """The parsed object and the exact bytes (None: the file does not exist yet)."""
    real = real_path(path)
    try:
        if not real.exists():
            return {}, None
        raw = real.read_bytes()
    except OSError as exc:   # unreadable, a symlink loop, a folder
        raise SettingsFileError(f"cannot read {path} ({exc.strerror or exc}); not changed") from None
    if not raw.strip():
        return {}, raw
    return parse(raw, path, flavor), raw


def render(data: dict[str, Any], before: bytes | None, flavor: Flavor) -> str:
    """`data` as the file's text: a JSON5 file keeps its comments and layout where unchanged."""
    if flavor == "json5" and before is not None and before.strip():
        try:
            return json5_edit.edit(before.decode("utf-8"), data)
        except ValueError as exc:
            raise SettingsFileError(f"could not edit the JSON5 file without losing its layout ({exc}); "
                                    "not changed: add the entries shown in the README by hand") from None
    return dump(data)


# user:password@ in a URL; the diff goes to a terminal (and CI logs), the file keeps it.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s\"']+:)[^@\s\"'/]+@", re.IGNORECASE)


def diff(path: Path, before: bytes | None, after: str) -> str:
    old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, after.splitlines(keepends=True),
                                 fromfile=f"{path} (before)" if before is not None else "/dev/null",
                                 tofile=str(path))
    return _URL_PASSWORD.sub(r"\1***@", "".join(lines))


def state_path(path: Path) -> Path:
    return path.with_name(path.name + STATE_SUFFIX)


def backup_path(path: Path, state: dict[str, Any] | None = None) -> Path:
    """The backup an install made (its name is in the install record), or the default name."""
    name = (state or {}).get("backup")
    return path.with_name(name) if isinstance(name, str) and "/" not in name else \
        path.with_name(path.name + BACKUP_SUFFIX)


def backups(path: Path) -> list[Path]:
    """Every backup of `path` present, e.g. from an earlier install whose record was deleted."""
    return sorted(p for p in path.parent.glob(path.name + BACKUP_SUFFIX + "*") if p.is_file())


def _free_backup(path: Path) -> Path:
    first = backup_path(path)
    n = 1
    candidate = first
    while candidate.exists() or candidate.is_symlink():
        candidate = first.with_name(f"{first.name}.{n}")
        n += 1
    return candidate


@dataclass
class Change:
    path: Path
    before: bytes | None
    after: str
    flavor: Flavor = "json"

    @property
    def changed(self) -> bool:
        return self.before is None or self.before != self.after.encode()


def plan(path: Path, edit: Callable[[dict[str, Any]], None], flavor: Flavor = "json") -> Change:
    data, raw = load(path, flavor)
    edit(data)
    return Change(path, raw, render(data, raw, flavor), flavor)


def write_through(path: Path, text: str | bytes) -> None:
    """Replace the file's content atomically, at the symlink's target when it is one (the link stays)."""
    real = real_path(path)
    tmp = real.with_name(real.name + ".mcp-memory.tmp")
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    if real.exists():
        os.chmod(tmp, real.stat().st_mode & 0o777)
    else:
        os.chmod(tmp, 0o666 & ~_umask())
    os.replace(tmp, real)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def apply(change: Change, extra: dict[str, Any] | None = None) -> Path | None:
    """Back up, record how to undo, then write (the record first: an interrupted install can still
    be undone). Returns the backup written, if any."""
    path, real = change.path, real_path(change.path)
    if state_path(path).exists():
        raise SettingsFileError(f"{path} was already changed by an earlier install ({state_path(path)}); "
                                "run uninstall first")
    created = [str(folder) for folder in reversed(real.parents) if not folder.exists()]
    real.parent.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if change.before is not None:
        backup = _free_backup(path)
        fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, real.stat().st_mode & 0o777)
        with os.fdopen(fd, "wb") as f:
            f.write(change.before)
    state = {"existed": change.before is not None, "installed_sha256": sha256_hex(change.after),
             "backup": backup.name if backup else None, "created_dirs": created,
             "installed_at": datetime.now(UTC).isoformat(), **(extra or {})}
    if real != path:
        state["target"] = str(real)
    state_path(path).write_text(dump(state), encoding="utf-8")
    write_through(path, change.after)
    return backup


def read_state(path: Path) -> dict[str, Any] | None:
    sp = state_path(path)
    if not sp.exists():
        return None
    try:
        state = json.loads(sp.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SettingsFileError(f"{sp} is damaged ({exc}); restore {path} from {backup_path(path)} by hand") from None
    return state if isinstance(state, dict) else None


@dataclass
class Undo:
    """What uninstall writes and how, with what it took out and what it could not restore.

    how: 'restored' (the original bytes exactly), 'removed' (did not exist before install),
    'stripped' (changed since install: only our entries out), 'restored-without-ours' (the backup
    itself held our entries, from an earlier install: restored without them), 'no-backup' (the
    backup is gone: only our entries out), 'gone' (the file no longer exists)."""

    change: Change
    how: str
    backup: Path | None = None
    taken_out: list[str] = field(default_factory=list)


def restore(path: Path, strip: Strip, ours: Ours, flavor: Flavor = "json") -> Undo:
    state = read_state(path)
    if state is None:
        raise SettingsFileError(f"no install record for {path} ({state_path(path)}): nothing to undo")
    real = real_path(path)
    current = real.read_bytes() if real.exists() else None
    backup = backup_path(path, state) if state.get("existed") else None
    original = backup.read_bytes() if backup is not None and backup.exists() else None
    if current is None:
        return Undo(Change(path, None, "", flavor), "gone", backup)
    unchanged = sha256_hex(current.decode("utf-8", errors="replace")) == state.get("installed_sha256")
    if unchanged and original is not None:
        held = ours(parse(original, backup or path, flavor)) if original.strip() else []
        if not held:
            return Undo(Change(path, current, original.decode("utf-8"), flavor), "restored", backup)
        # The backup was taken over an earlier install whose record is gone: it holds our entries too.
        data = parse(original, backup or path, flavor)
        strip(data)
        return Undo(Change(path, current, render(data, original, flavor), flavor), "restored-without-ours",
                    backup, held)
    if unchanged and not state.get("existed"):
        return Undo(Change(path, current, "", flavor), "removed")
    data = parse(current, path, flavor) if current.strip() else {}
    taken = ours(data)
    strip(data)
    if original is not None and _same(data, original, flavor):
        # Whatever changed since went away with our entries: the original bytes, exactly.
        return Undo(Change(path, current, original.decode("utf-8"), flavor), "restored", backup, taken)
    if not state.get("existed") and not data:
        return Undo(Change(path, current, "", flavor), "removed", None, taken)
    how = "no-backup" if state.get("existed") and original is None else "stripped"
    return Undo(Change(path, current, render(data, current, flavor), flavor), how, backup, taken)


def _same(data: dict[str, Any], raw: bytes, flavor: Flavor) -> bool:
    try:
        return parse(raw, Path("backup"), flavor) == data
    except SettingsFileError:
        return False


def finish_restore(undo: Undo) -> None:
    path, how = undo.change.path, undo.how
    state = read_state(path) or {}
    if how == "removed":
        real_path(path).unlink(missing_ok=True)   # the file we created; a link to it stays as it was
    elif how == "restored" and undo.backup is not None:
        write_through(path, undo.backup.read_bytes())   # byte for byte
    elif how != "gone":
        write_through(path, undo.change.after)
    state_path(path).unlink(missing_ok=True)
    # Only an exact restore makes the backup redundant; otherwise it stays for the user to compare.
    if how in ("restored", "removed") and undo.backup is not None:
        undo.backup.unlink(missing_ok=True)
    for folder in reversed(state.get("created_dirs", [])):
        try:
            Path(folder).rmdir()   # only if empty: nothing of the user's goes
        except OSError:
            break
