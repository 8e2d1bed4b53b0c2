"""`mcp-memory serve` over stdio as a thin relay to the store's resident server (server/resident.py).

A harness starts one `serve` per window. A whole server per window costs a model, a pool and
workers each (~240 MiB); the relay costs an interpreter and a socket. It forwards the protocol's
bytes between stdin/stdout and the resident server's user-only socket and knows no tool; what it
reads of the messages is only their ids, to answer calls a lost server never answered, and the
client's `initialize`, to introduce the window again to a restarted server.

Standard library only (hookline.py imports this for every `serve`), and decided before stdin is
read. It is the default for stdio `serve` (MCP_MEMORY_RESIDENT unset or true); false, or
`serve --standalone`, runs the full in-process server. So does a window the resident server
refuses (other settings) or one that cannot reach or start it (one stderr line says why), exactly as
without a resident server.
"""

from __future__ import annotations

import json
import os
import select
import sys

from .hookprotocol import ON
from .hooksocket import parse_flags
from .resident_client import NoServer, connect, resident_path, store

FLAGS = ("--database-url", "--data-dir", "--user", "--agent", "--project", "--log-level", "--transport")
# JSON-RPC's "connection closed" (the SDK's CONNECTION_CLOSED): the call may or may not have run.
LOST = -32000
REPLAY_ID = "mcp-memory-relay-replay"


def parse(argv: list[str]) -> dict[str, str] | None:
    """`serve [--transport stdio] [--user U] …` as cli.py reads it; None for anything the relay
    does not take (another transport, --standalone, help, an unknown flag)."""
    if not argv or argv[0] != "serve":
        return None
    out = parse_flags(argv[1:], FLAGS, switches=("--resident",))
    if out is None:
        return None
    return out if out.pop("transport", "stdio") == "stdio" else None


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _error(request_id: object, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": LOST, "message": message, "data": {"retryable": True}}}).encode() + b"\n"


class Relay:
    """Bytes between the window and the resident server, line by line."""

    def __init__(self, path: str, args: dict[str, str], sock: object, rest: bytes) -> None:
        self.path, self.args = path, args
        self.sock: object | None = sock
        self.from_server = bytearray(rest)
        self.from_client = bytearray()
        self.to_server = bytearray()
        self.calls: dict[str, object] = {}        # requests the server has not answered: key -> id
        self.asked: set[str] = set()               # the server's requests the client has not answered
        self.orphans: set[str] = set()             # those of a lost connection: their answers go nowhere
        self.initialize: dict | None = None
        self.initialized: bytes | None = None
        self.replays = 0
        self.why = ""

    def run(self) -> int:
        stdin_open = True
        while True:
            poll = select.poll()
            if stdin_open:
                poll.register(0, select.POLLIN)
            if self.sock is not None:
                poll.register(self.sock, select.POLLIN | (select.POLLOUT if self.to_server else 0))
            elif not stdin_open:
                return 0
            for fd, event in poll.poll():
                if fd == 0:
                    data = os.read(0, 65536)
                    if not data:   # the harness is gone (or closed our stdin): so are we
                        stdin_open = False
                        self._flush()
                        return 0
                    self._client_bytes(data)
                    continue
                if event & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    self._server_readable()
                if event & select.POLLOUT and self.sock is not None and self.to_server:
                    try:
                        sent = self.sock.send(self.to_server)  # type: ignore[attr-defined]
                    except BlockingIOError:
                        continue
                    except OSError:
                        self._lost()
                        continue
                    del self.to_server[:sent]

    def _flush(self) -> None:
        if self.sock is not None and self.to_server:
            try:
                self.sock.setblocking(True)  # type: ignore[attr-defined]
                self.sock.sendall(self.to_server)  # type: ignore[attr-defined]
            except OSError:
                pass
        if self.sock is not None:
            self.sock.close()  # type: ignore[attr-defined]

    def _client_bytes(self, data: bytes) -> None:
        self.from_client += data
        while (end := self.from_client.find(b"\n")) >= 0:
            line = bytes(self.from_client[: end + 1])
            del self.from_client[: end + 1]
            self._client_line(line)

    def _client_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:   # the server answers it (a parse error), as it would without us
            message = None
        method = message.get("method") if isinstance(message, dict) else None
        has_id = isinstance(message, dict) and message.get("id") is not None
        if has_id and method is None:   # the client's answer to a server's request
            key = _key(message["id"])   # type: ignore[index]
            if key in self.orphans:
                self.orphans.discard(key)
                return
            self.asked.discard(key)
        if self.sock is None and not self._reconnect():
            if has_id and method is not None:
                self._out(_error(message["id"], self.why))  # type: ignore[index]
            return
        if method == "initialize" and has_id:
            self.initialize = message  # type: ignore[assignment]
        elif method == "notifications/initialized":
            self.initialized = line
        if has_id and method is not None:
            self.calls[_key(message["id"])] = message["id"]  # type: ignore[index]
        self.to_server += line

    def _reconnect(self) -> bool:
        """A new connection, introduced as this window was (the client's own initialize, whose
        answer it already has, under an id of ours whose answer is dropped)."""
        try:
            sock, reply, rest = connect(self.path, self.args, start=True)
        except NoServer as exc:
            self.why = f"the resident memory server is gone and could not be restarted: {exc}; retry"
            return False
        if "refused" in reply:
            sock.close()  # type: ignore[attr-defined]
            self.why = f"the resident memory server refused this window: {reply['refused']}"
            return False
        sock.setblocking(False)  # type: ignore[attr-defined]
        self.sock, self.from_server = sock, bytearray(rest)
        print(f"mcp-memory relay: connected again to resident server pid {reply.get('pid')}", file=sys.stderr)
        if self.initialize is not None:
            self.replays += 1
            replay = dict(self.initialize, id=f"{REPLAY_ID}-{self.replays}")
            self.to_server += json.dumps(replay).encode() + b"\n"
            if self.initialized is not None:
                self.to_server += self.initialized
        return True

    def _server_readable(self) -> None:
        try:
            data = self.sock.recv(65536)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._lost()
            return
        self.from_server += data
        while (end := self.from_server.find(b"\n")) >= 0:
            line = bytes(self.from_server[: end + 1])
            del self.from_server[: end + 1]
            self._server_line(line)

    def _server_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("id") is not None:
            key = _key(message["id"])
            if "method" in message:
                self.asked.add(key)
            elif isinstance(message["id"], str) and message["id"].startswith(REPLAY_ID):
                return   # the answer to our replayed initialize
            else:
                self.calls.pop(key, None)
        self._out(line)

    def _lost(self) -> None:
        """The resident server went away: every call it had not answered gets a retryable error
        (it may or may not have run: never resent by us, so never done twice); the next message
        starts or finds a server."""
        if self.sock is not None:
            self.sock.close()  # type: ignore[attr-defined]
        self.sock = None
        self.to_server.clear()
        self.from_server.clear()
        for request_id in self.calls.values():
            self._out(_error(request_id, "the resident memory server stopped while this call ran; it may or may "
                             "not have completed (a write: search before writing again, or pass idempotency_key)"
                             "; retry"))
        self.calls.clear()
        self.orphans |= self.asked
        self.asked.clear()
        print("mcp-memory relay: the resident server went away; the next call reconnects", file=sys.stderr)

    def _out(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(1, view)
            except BlockingIOError:
                select.select([], [1], [])
                continue
            except BrokenPipeError:   # the harness is gone
                raise SystemExit(0) from None
            view = view[written:]


def main(argv: list[str]) -> int | None:
    """Relay this `serve`, or None: the caller runs the full in-process server. Unset, the setting
    means relay, starting the resident server when none runs; false (or `serve --standalone`, which
    `parse` does not take) means in-process. Whatever keeps a window from the resident server (a data
    dir or socket directory it cannot use, a server that will not start or refuses this window) is
    said in one stderr line, and the window serves in-process: never a failed harness."""
    args = parse(argv)
    if args is None:
        return None
    setting = os.environ.get("MCP_MEMORY_RESIDENT", "").strip().lower()
    if "resident" not in args and setting and setting not in ON:
        return None   # false; or a value the full path reports as invalid configuration
    try:
        path = resident_path(*store(args))
        if path is None:
            print("mcp-memory serve: running in-process: no unix sockets for a resident server here",
                  file=sys.stderr)
            return None
        sock, reply, rest = connect(path, args, start=True)
    except NoServer as exc:
        print(f"mcp-memory serve: running in-process: {exc}", file=sys.stderr)
        return None
    except Exception as exc:  # e.g. a data dir that cannot be written: the window still gets its server
        print(f"mcp-memory serve: running in-process: could not start the resident server: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    if "refused" in reply:
        sock.close()  # type: ignore[attr-defined]
        print(f"mcp-memory serve: running in-process: the resident server refused this window: "
              f"{reply['refused']}", file=sys.stderr)
        return None
    sock.setblocking(False)  # type: ignore[attr-defined]
    # A harness stops its stdio server with SIGTERM; nothing of ours needs to outlive it.
    try:
        return Relay(path, args, sock, rest).run()
    except KeyboardInterrupt:
        return 130
