"""How a window finds the store's resident server (server/resident.py), or starts it: the socket's
place, the hello, the detached start under a lock, and one-off questions (`status`, `stop`).
Standard library only: the relay (relay.py) and `mcp-memory resident` use it, the server only for
names they share.
"""

from __future__ import annotations

import json
import os
import sys
import time

from . import __file__ as _package_init
from . import __version__
from .hooksocket import connect_private, default_data_dir, private_dir_ok, socket_path

PROTOCOL = 1
IDENTITY = ("user", "agent", "project", "local_permissions")
HELLO_TIMEOUT_S = 5.0     # the resident answers a hello on its event loop, whatever its tools are doing
START_TIMEOUT_S = 60.0    # MCP_MEMORY_RESIDENT_START_TIMEOUT_S as config/server.py: import, then listen
POLL_S = 0.05
MAX_HELLO = 64 * 1024
LOG_FILE = "resident.log"
LOG_BYTES = 4 * 1024 * 1024
MODULE = "mcp_memory.server.resident"


def build() -> str:
    """What the installed package is: its version and when its files were written, so an upgrade
    (or a reinstall) is told apart from the code a running resident server loaded."""
    try:
        stamp = os.stat(_package_init).st_mtime_ns
    except OSError:
        stamp = 0
    return f"{__version__}:{stamp}"


def resident_path(database_url: str | None, data_dir: str | None) -> str | None:
    """The resident server's socket: beside the store's hook socket (hooksocket.socket_path)."""
    hook = socket_path(database_url, data_dir)
    return None if hook is None else hook[: -len(".sock")] + ".mcp.sock"


def hello(args: dict[str, str]) -> dict[str, object]:
    """What this window is: identity and settings as the full server would resolve them."""
    env = {k: v for k, v in os.environ.items() if k.startswith("MCP_MEMORY_")}
    identity = {k: args.get(k, env.get(f"MCP_MEMORY_{k.upper()}")) for k in IDENTITY}
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    return {"v": PROTOCOL, "kind": "session", "build": build(), "pid": os.getpid(), "identity": identity,
            "env": env, "database_url": store(args)[0], "data_dir": store(args)[1], "cwd": cwd}


def store(args: dict[str, str]) -> tuple[str | None, str | None]:
    url = args.get("database_url", os.environ.get("MCP_MEMORY_DATABASE_URL")) or None
    data_dir = args.get("data_dir", os.environ.get("MCP_MEMORY_DATA_DIR")) or default_data_dir()
    return url, os.path.expanduser(data_dir) if data_dir else None


class NoServer(Exception):
    """Nothing listens (or may be trusted) at the socket."""


class Busy(NoServer):
    """A server took the connection but did not say hello in time (starting, or a loaded machine)."""


def ask(path: str, message: dict[str, object], timeout: float = HELLO_TIMEOUT_S) -> tuple[object, dict, bytes]:
    """Connect, send one header line, read the reply line: (socket, reply, bytes after it)."""
    sock = connect_private(path, timeout, NoServer)
    try:
        data = b""
        try:
            sock.sendall(json.dumps(message).encode() + b"\n")
            while b"\n" not in data and len(data) < MAX_HELLO:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            raise Busy(f"no hello within {timeout:g}s") from None
        except OSError as exc:  # a resident server that is leaving
            raise NoServer(f"hello: {exc}") from None
        line, _, rest = data.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            raise NoServer("no hello (the server closed the connection)") from None
        if not isinstance(reply, dict) or reply.get("v") != PROTOCOL:
            raise NoServer("an incompatible resident server")
        sock.settimeout(None)
        return sock, reply, rest
    except BaseException:
        sock.close()
        raise


def _log_fd(data_dir: str | None) -> int:
    """The resident server's stderr: resident.log under the data dir, one old copy past 4 MB."""
    if not data_dir:
        return os.open(os.devnull, os.O_WRONLY)
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    path = os.path.join(data_dir, LOG_FILE)
    try:
        if os.stat(path).st_size > LOG_BYTES:
            os.replace(path, path + ".1")
    except OSError:
        pass
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def spawn(args: dict[str, str]) -> int | None:
    """Start the resident server detached: its own session (a harness that kills the window's
    process group leaves it alone), not our child (nothing to reap when the window closes), nothing on
    our stdout, its stderr to resident.log. The store travels in the environment, not in argv (a
    database URL may hold a password). Returns its pid (None if it could not be told), so a server
    that dies while starting is noticed at once instead of waited for."""
    url, data_dir = store(args)
    env = dict(os.environ)
    if url:
        env["MCP_MEMORY_DATABASE_URL"] = url
    if data_dir:
        env["MCP_MEMORY_DATA_DIR"] = data_dir
    log = _log_fd(data_dir)
    read, write = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            try:
                os.close(read)
                os.setsid()
                grandchild = os.fork()
                if grandchild:
                    os.write(write, str(grandchild).encode())
                    os._exit(0)
                os.close(write)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(log, 2)
                os.chdir("/")
                os.execve(sys.executable, [sys.executable, "-m", MODULE], env)
            finally:
                os._exit(127)
        os.close(write)
        write = -1
        os.waitpid(pid, 0)
        said = os.read(read, 32)
        return int(said) if said.isdigit() else None
    finally:
        os.close(log)
        os.close(read)
        if write >= 0:
            os.close(write)


def alive(pid: int) -> bool:
    """The process runs (a zombie no one has reaped yet has exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def held(path: str) -> bool:
    """Some process holds this lock file (a resident server holds its own for its whole life)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def why_gone(data_dir: str | None) -> str:
    """The last lines the resident server wrote to its log (a traceback's or a settings error's
    last three, links left out), to say why it did not start."""
    if not data_dir:
        return ""
    try:
        with open(os.path.join(data_dir, LOG_FILE), "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - 4096))
            lines = [x.strip() for x in log.read().decode("utf-8", "replace").splitlines()
                     if x.strip() and not x.strip().startswith("For further information")]
    except OSError:
        return ""
    return f": {' | '.join(lines[-3:])[:500]}" if lines else ""


def _lock(path: str, deadline: float) -> int | None:
    """The start lock (one resident server started at a time), or None past the deadline."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(POLL_S)


def _private_dir(path: str) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    if not private_dir_ok(path):
        raise NoServer(f"{path} is not a directory only this user can enter")


def start_timeout() -> float:
    try:
        value = float(os.environ.get("MCP_MEMORY_RESIDENT_START_TIMEOUT_S", START_TIMEOUT_S))
    except ValueError:
        return START_TIMEOUT_S
    return value if value > 0 else START_TIMEOUT_S


def connect(path: str, args: dict[str, str], start: bool) -> tuple[object, dict, bytes]:
    """A socket to the resident server, said hello to; started (once, under a lock) when none
    runs and `start`. NoServer when there is none to use (also at once when the one started here
    exits before it listens); a reply with `refused` is returned. OSError when the data dir (its
    log) or the socket's directory cannot be made."""
    message = hello(args)
    deadline = time.monotonic() + start_timeout()
    lock = None
    started: int | None = None
    try:
        while True:
            try:
                sock, reply, rest = ask(path, message)
            except Busy:
                if time.monotonic() > deadline:
                    raise
                continue   # alive: never a second one beside it
            except NoServer:
                if not start:
                    raise
            else:
                if "retry" not in reply:  # an older resident server on its way out: wait for it
                    return sock, reply, rest
                sock.close()  # type: ignore[attr-defined]
            if time.monotonic() > deadline:
                raise NoServer(f"no resident server answered within {start_timeout():g}s (see "
                               f"{os.path.join(store(args)[1] or '', LOG_FILE)})")
            if started is not None and not alive(started) and not held(path[: -len(".sock")] + ".lock"):
                # Ours exited without listening, and no other holds the store: nothing will answer.
                log = os.path.join(store(args)[1] or "", LOG_FILE)
                raise NoServer(f"the resident server exited while starting (see {log}){why_gone(store(args)[1])}")
            if lock is None:
                _private_dir(os.path.dirname(path))
                lock = _lock(path[: -len(".sock")] + ".start.lock", deadline)
                if lock is None:
                    continue
                try:  # another window may have started it while we waited for the lock
                    sock, reply, rest = ask(path, message)
                    if "retry" not in reply:
                        return sock, reply, rest
                    sock.close()  # type: ignore[attr-defined]
                except Busy:
                    continue
                except NoServer:
                    pass
                # Ours to start (a socket left by a killed server answers nothing); one started
                # meanwhile by someone else would find its lock taken and leave.
                started = spawn(args)
            time.sleep(POLL_S)
    finally:
        if lock is not None:
            os.close(lock)


def request(kind: str, database_url: str | None, data_dir: str | None) -> dict | None:
    """One question to the store's resident server (`status`, `stop`); None when none runs."""
    path = resident_path(database_url, data_dir)
    if path is None:
        return None
    try:
        sock, reply, _ = ask(path, {"v": PROTOCOL, "kind": kind})
    except NoServer:
        return None
    sock.close()  # type: ignore[attr-defined]
    return reply
