"""Debian's PgBouncer in transaction mode in front of the test PostgreSQL, on a free loopback port,
stopped by its pid. Tests that need it skip, saying why, where the binary is missing."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

BINARY = shutil.which("pgbouncer") or next((p for p in ("/usr/sbin/pgbouncer",) if os.access(p, os.X_OK)), None)
MISSING = "pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)"
# PgBouncer refuses to run as root; the embedded server runs as this user then (db/embedded.py).
RUN_AS = "embedded_postgres"


@dataclass
class Bouncer:
    port: int
    pid: int
    home: Path
    pool_size: int

    def url(self, direct_dsn: str) -> str:
        """`direct_dsn`'s database, through the pooler."""
        parts = urlsplit(direct_dsn)
        user = parts.username or "postgres"
        return f"postgresql://{user}@127.0.0.1:{self.port}{parts.path}"

    def log(self) -> str:
        path = self.home / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _socket_of(direct_dsn: str) -> tuple[str, int]:
    """Where PostgreSQL listens: its Unix socket directory (or host) and port."""
    parts = urlsplit(direct_dsn)
    host = parse_qs(parts.query).get("host", [parts.hostname or "127.0.0.1"])[0]
    if parts.port:
        return host, parts.port
    sockets = sorted(Path(host).glob(".s.PGSQL.*")) if host.startswith("/") else []
    return host, int(sockets[0].name.rsplit(".", 1)[1]) if sockets else 5432


CONFIG = """\
[databases]
* = host={host} port={pg_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {home}/users.txt
pool_mode = transaction
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 200
max_db_connections = {pool_size}
server_reset_query = DISCARD ALL
server_check_delay = 0
logfile = {home}/pgbouncer.log
pidfile =
admin_users = {user}
ignore_startup_parameters = {ignore}
"""


def _listening(proc: subprocess.Popen, port: int) -> bool:
    """Wait until PgBouncer `proc` listens on `port` (True), or has exited (False)."""
    deadline = time.monotonic() + 30
    while proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return proc.poll() is None
        if time.monotonic() > deadline:
            raise RuntimeError("pgbouncer did not listen within 30 s")
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def pgbouncer(direct_dsn: str, *, pool_size: int = 2, ignore: str = "") -> Iterator[Bouncer]:
    """PgBouncer, pool_mode = transaction, `pool_size` server connections per database and user (few,
    so that clients certainly share them), trust on 127.0.0.1 only, every database of the server
    behind it (the wildcard entry). `ignore`: startup parameters it drops instead of refusing them."""
    assert BINARY, MISSING
    host, pg_port = _socket_of(direct_dsn)
    user = urlsplit(direct_dsn).username or "postgres"
    home = Path(tempfile.mkdtemp(prefix="mcp-memory-pgbouncer-"))
    (home / "users.txt").write_text(f'"{user}" ""\n')
    command = [BINARY, str(home / "pgbouncer.ini")]
    if os.geteuid() == 0:
        account = pwd.getpwnam(RUN_AS)
        os.chown(home, account.pw_uid, account.pw_gid)
        os.chown(home / "users.txt", account.pw_uid, account.pw_gid)
        command[1:1] = ["-u", RUN_AS]
    proc: subprocess.Popen | None = None
    why = b""
    try:
        for _ in range(3):  # a free port may be taken between the look and PgBouncer's bind: another then
            port = _free_port()
            (home / "pgbouncer.ini").write_text(CONFIG.format(host=host, pg_port=pg_port, port=port, home=home,
                                                              pool_size=pool_size, user=user, ignore=ignore))
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if _listening(proc, port):
                break
            why = proc.communicate()[1]
        else:
            raise RuntimeError(f"pgbouncer did not start: {why.decode(errors='replace')[-2000:]}")
        yield Bouncer(port=port, pid=proc.pid, home=home, pool_size=pool_size)
    finally:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, 15)  # SIGTERM: PgBouncer stops at once
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, 9)
                proc.wait()
        if proc is not None and proc.stderr:
            proc.stderr.close()
        shutil.rmtree(home, ignore_errors=True)
