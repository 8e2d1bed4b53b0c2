"""The small files capture keeps under the data dir (status, what was seen, the recall ledger, its
locks): written whole or not at all, readable by this user only, locked across processes without
ever waiting past a hook's budget. Standard library only: hook processes import it."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; os.replace still keeps each file whole
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def held(path: Path, wait: float = 0.0) -> Iterator[bool]:
    """An exclusive advisory lock on `path` (made 0600), tried for `wait` seconds; yields whether
    it is held (True where the platform has no locks). The kernel drops it when the holder dies,
    however it dies."""
    if fcntl is None:
        yield True
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    got = False
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
        yield got
    finally:
        if got:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_private(path: Path, text: str, *, durable: bool = False) -> None:
    """Replaces `path` with `text` in one step (a reader sees the old file or the new, never half),
    mode 0600; `durable` also waits for the disk."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)   # mkstemp makes it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
