"""Where a server answers hooks: a unix socket only its user can reach (directory 0700, socket
0600), at a path derived from its store (hooksocket.py). Several servers of one store take turns:
the one holding the store's lock file listens, the others try again every `TAKEOVER_S`, so one
takes over when it exits (the kernel lets go of the lock even on SIGKILL). What it answers is
channel.py's `Channel`."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from .. import hooksocket
from ..config import Settings
from ..contained import contained
from ..service import MemoryService
from . import redact
from .channel import Channel

try:
    import fcntl
except ImportError:  # Windows: no unix sockets either; hooks take the full path
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("mcp_memory.hook.channel")

TAKEOVER_S = 1.0          # how often a server that does not listen tries to take over


def private_dir(path: str) -> None:
    """The socket directory, created 0700; refuses one someone else owns or may enter."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not hooksocket.private_dir_ok(path):
        raise PermissionError(f"{path} is not a directory only this user can enter; remove it or set "
                              "XDG_RUNTIME_DIR to a private directory")


def take_lock(path: str) -> int | None:
    """The listener's lock (held for the process's life, released by the kernel even on SIGKILL),
    or None while another server holds it."""
    assert fcntl is not None
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class HasService(Protocol):
    async def service(self) -> MemoryService: ...


@asynccontextmanager
async def serving(state: HasService, settings: Settings) -> AsyncIterator[None]:
    """Around a server's life (`mcp-memory serve`, stdio or HTTP): hooks are answered once its
    database is open. Leaving waits for captures already acknowledged (each within its budget)."""
    async with anyio.create_task_group() as tg:
        if settings.hook_channel:
            tg.start_soon(_when_open, state, settings, tg)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def _when_open(state: HasService, settings: Settings, tg: anyio.abc.TaskGroup) -> None:
    try:
        service = await state.service()
    except Exception as exc:  # the server reports its database itself; hooks take the full path
        log.info("hook channel off: %s", exc)
        return
    redact.warm()   # hooks are redacted once more on the way out: not on the first prompt's time
    await listen(service, settings, tg)


async def listen(service: MemoryService, settings: Settings, tg: anyio.abc.TaskGroup,
                 ready: anyio.Event | None = None) -> None:
    """Serve hooks until cancelled: wait for the store's lock, then listen on its socket."""
    path = hooksocket.socket_path(settings.database_url, settings.data_dir)
    if path is None or fcntl is None:
        log.info("hook channel: not available on this platform; hooks take the full path")
        return
    try:
        private_dir(os.path.dirname(path))
    except OSError as exc:
        log.warning("hook channel off: %s", exc)
        return
    lock = Path(path).with_suffix(".lock")
    fd = None
    try:
        while (fd := take_lock(str(lock))) is None:  # noqa: ASYNC110 (a lock file has no event to wait on)
            await anyio.sleep(TAKEOVER_S)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by a server that was killed; we hold the lock, so it is no one's
        listener = await anyio.create_unix_listener(path, mode=0o600)
        inode = os.stat(path).st_ino
        unlink = unlinker(path, inode)
        atexit.register(unlink)  # SIGTERM exits through atexit (cli_server._exit_on_sigterm)
        log.info("hook channel: listening on %s", path)
        channel = Channel(service, settings, tg)
        if ready is not None:
            ready.set()
        try:
            async with listener:
                await listener.serve(lambda stream: contained("a hook channel connection", channel.connection(stream)),
                                     task_group=tg)
        finally:
            unlink()
            atexit.unregister(unlink)
    finally:
        if fd is not None:
            os.close(fd)


def unlinker(path: str, inode: int) -> Any:
    def unlink() -> None:
        # Only our own socket: after we let go of the lock another server may have bound its own.
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:
                os.unlink(path)
    return unlink

