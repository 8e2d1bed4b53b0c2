"""Where a store's hook socket is, and who may use it: shared by both ends of the hook channel, the
thin entry point (hookline.py) and the server (capture/channel.py), so neither imports the other.

Standard library only, and only the cheap parts of it: hookline imports this on every prompt.
"""

from __future__ import annotations

import os
import stat
import sys

# The C modules under `socket` and `hashlib`: their Python wrappers (enums, selectors, OpenSSL)
# cost a hook several milliseconds on every prompt, more on a busy machine.
try:
    import _socket as socket
except ImportError:  # pragma: no cover
    import socket  # type: ignore[no-redef]
try:
    from _sha2 import sha256  # Python >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # pragma: no cover
        from hashlib import sha256

# The protocol's names are hookprotocol's; these are here for the modules that read them from here.
from .hookprotocol import CAPTURE_EVENTS, EVENTS, MAX_STDIN, OFF, ON, PROTOCOL  # noqa: E402, F401

SUN_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS; keep a margin


def parse_flags(rest: list[str], flags: tuple[str, ...], switches: tuple[str, ...] = ()) -> dict[str, str] | None:
    """`--name value` / `--name=value` for each of `flags`, and `switches` alone (as "1"), as argparse
    reads them, each under its name in snake case; None for anything else (help, an unknown flag,
    a flag without its value), which the full parser then explains."""
    out: dict[str, str] = {}
    rest = list(rest)
    while rest:
        arg = rest.pop(0)
        if arg in switches:
            out[arg[2:].replace("-", "_")] = "1"
            continue
        name, eq, value = arg.partition("=")
        if name not in flags:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        out[name[2:].replace("-", "_")] = value
    return out


def default_data_dir() -> str | None:
    """platformdirs.user_data_dir("mcp-memory", appauthor=False), which config/storage.py uses, without
    importing it (tests/test_hook_channel.py checks they agree). None where this is not known."""
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/mcp-memory")
    if sys.platform.startswith("win"):
        return None
    base = os.environ.get("XDG_DATA_HOME", "")
    if not base.strip():
        base = os.path.expanduser("~/.local/share")
    return os.path.join(base, "mcp-memory")


def store_key(database_url: str | None, data_dir: str | os.PathLike[str] | None) -> str | None:
    """What names a store: the database URL as given, else the embedded server's data dir."""
    if database_url:
        return "url\0" + database_url
    where = os.fspath(data_dir) if data_dir else default_data_dir()
    if where is None:
        return None
    return "dir\0" + os.path.realpath(os.path.expanduser(where))


def runtime_dir() -> str:
    """The user's own directory for sockets: under XDG_RUNTIME_DIR (per user, in memory) when
    set, else /tmp; the uid in the name keeps users apart, the 0700 mode checked keeps others out."""
    base = os.environ.get("XDG_RUNTIME_DIR") or ""
    if not base.startswith("/") or len(base) > 60:
        base = "/tmp"
    return os.path.join(base, f"mcp-memory-{os.getuid()}")


def socket_path(database_url: str | None, data_dir: str | os.PathLike[str] | None) -> str | None:
    """Where the server of this store listens: a hash, since a data dir or a URL can be longer than
    a socket path may be (and a URL may hold a password)."""
    key = store_key(database_url, data_dir)
    if key is None or not hasattr(socket, "AF_UNIX"):
        return None
    name = sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".sock"
    path = os.path.join(runtime_dir(), name)
    if len(path.encode()) > SUN_PATH_MAX:
        path = os.path.join("/tmp", f"mcp-memory-{os.getuid()}", name)
    return path


def private_dir_ok(path: str) -> bool:
    """The directory is ours and no one else may enter it (not a link someone else planted)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def connect_private(path: str, timeout: float, refused: type[Exception]) -> object:
    """A connected Unix socket to `path`, in a private directory of ours, with a process of our own
    user at the other end; `refused` (with why) for anything else. The caller closes it."""
    if not private_dir_ok(os.path.dirname(path)):
        raise refused("no private socket directory")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:  # no socket, refused (the server is gone), a full backlog
            raise refused(f"connect: {exc}") from None
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            raise refused("the socket belongs to another user")
    except BaseException:
        sock.close()
        raise
    return sock


def peer_uid(sock: object) -> int | None:
    """The uid of the process at the other end (Linux SO_PEERCRED: struct ucred, three 32-bit
    ints pid, uid, gid); None where not available."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    cred = sock.getsockopt(socket.SOL_SOCKET, option, 12)  # type: ignore[attr-defined]
    return int.from_bytes(cred[4:8], sys.byteorder)
