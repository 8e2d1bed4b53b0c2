"""The `mcp-memory` entry point, thin for hooks: `mcp-memory hook <event>` asks a running
`mcp-memory serve` of the same store over a user-only unix socket (capture/channel.py is the other
end), and everything else, or a hook no server answers, goes to the full command line.

A harness runs a hook as a new process for every prompt; the full path spends 0.4-0.6 s importing
and more loading the embedding model, while a server already has both. So this module imports only
the standard library and decides quickly: no socket or a refused connection falls back at once, a
server that does not answer is waited for no longer than the event's budget.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time

# `_signal`, not `signal`: the wrapper's enums cost a hook milliseconds it does not need.
try:
    import _signal as signal
except ImportError:  # pragma: no cover
    import signal  # type: ignore[no-redef]

from .hookprotocol import (
    BUDGETS,
    CAPTURE_EVENTS,
    EVENTS,
    HARNESSES,
    MAX_STDIN,
    OFF,
    ON,
    PROTOCOL,
    budget_from_env,
    worth_recalling,
)
from .hooksocket import connect_private, default_data_dir, parse_flags, socket, socket_path

# A capture event is only acknowledged (the server captures in its background); a server that has
# not acknowledged in this long after the request is treated as absent and the full path, which
# detaches, runs.
ACK_WAIT_S = 0.3
FLAGS = ("--harness", "--database-url", "--data-dir", "--user", "--agent", "--project", "--log-level")
IDENTITY = ("user", "agent", "project")
MAX_REPLY = 16 * 1024 * 1024
# MCP_MEMORY_HOOK_SERVER_ONLY: an answering event no server answers exits with this code (EX_TEMPFAIL)
# instead of taking the full path; OpenClaw's plugin asks so at a gateway's session_start, which
# comes before the gateway's relay has started a resident server, and asks again with the turn.
NOT_ANSWERED = 75
SETTINGS_FLAGS = ("database_url", "data_dir", "user", "agent", "project", "log_level")  # as cli._settings


def parse(argv: list[str]) -> dict[str, str] | None:
    """`hook <event> [--harness X] [--database-url U] …` as the full parser reads it; None for
    anything else (help, an unknown flag, a bad event), which the full parser then explains."""
    if len(argv) < 2 or argv[0] != "hook" or argv[1] not in EVENTS:
        return None
    flags = parse_flags(argv[2:], FLAGS)
    if flags is None:
        return None
    out = {"event": argv[1], "harness": "claude-code", **flags}
    if out["harness"] not in HARNESSES:
        return None
    return out


def request(args: dict[str, str], started: float) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k.startswith("MCP_MEMORY_")}
    identity = {k: args.get(k, env.get(f"MCP_MEMORY_{k.upper()}")) for k in IDENTITY}
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    data_dir = args.get("data_dir", env.get("MCP_MEMORY_DATA_DIR")) or default_data_dir()
    url = args.get("database_url", env.get("MCP_MEMORY_DATABASE_URL")) or None
    return {"v": PROTOCOL, "event": args["event"], "harness": args["harness"], **identity, "env": env,
            "database_url": url, "data_dir": data_dir, "cwd": cwd, "project_dir": os.environ.get("CLAUDE_PROJECT_DIR"),
            "started": started}


def wait_for(args: dict[str, str]) -> float:
    """How long the server may take to answer."""
    limit = budget_from_env(args["event"], dict(os.environ))
    return ACK_WAIT_S if limit is None else limit


class Fallback(Exception):
    """No server took the hook: the full path runs it."""


def ask(path: str, args: dict[str, str], raw: bytes, started: float) -> dict[str, object]:
    """The server's answer, or Fallback. TimeoutError when a server took the hook and did not
    answer within the event's budget."""
    sock = connect_private(path, ACK_WAIT_S, Fallback)
    try:
        header = json.dumps(request(args, started)).encode() + b"\n"
        try:
            sock.sendall(header + raw)
            sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise Fallback(f"send: {exc}") from None
        # An answer is due within the event's budget of the hook's start (the harness's timeout
        # counts from there); an acknowledgement within ACK_WAIT_S of the request, however long the
        # harness took to hand over the input (a gateway busy at the turn's end took over 0.3 s, and
        # a worker then captured what the server had taken too).
        deadline = started + wait_for(args) if args["event"] in BUDGETS else time.monotonic() + ACK_WAIT_S
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                raise
            except OSError as exc:
                raise Fallback(f"receive: {exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY:
                raise Fallback("reply too large")
    finally:
        sock.close()
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        raise Fallback("no reply (the server closed the connection)") from None
    if not isinstance(reply, dict) or reply.get("v") != PROTOCOL:
        raise Fallback("an incompatible server")
    if reply.get("fallback"):
        raise Fallback(str(reply["fallback"]))
    return reply


def trivial_prompt(raw: bytes) -> bool:
    """A prompt-submit input whose prompt asks nothing to look up (hookprotocol.worth_recalling,
    as the full path tests it), skipped before any import of the full path, socket or database.
    Input the full path would complain about (not JSON, not an object, a prompt that is not text) is
    not trivial: it goes on to be reported there."""
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    prompt = data.get("prompt")
    return (prompt is None or isinstance(prompt, str)) and not worth_recalling(prompt or "")


class Said(Exception):
    """The hook's one stderr line, as the full path words it; nothing is handed off."""


def hand_off(args: dict[str, str], raw: bytes) -> bool:
    """A capture event no server took: the checks capture/hooks.py's hand_off makes, then the
    detached worker started from here (capture/detach.py is stdlib-only), so the hook returns without
    importing the full command line. False: leave it to the full path (input or settings it would
    report, or a worker that could not be started; it records that failure). Settings of a config
    the worker reads (e.g. a project excluded from capture) are the worker's to check."""
    capture = os.environ.get("MCP_MEMORY_CAPTURE")
    if capture is not None and capture.lower() not in ON + OFF:
        return False
    if capture is not None and capture.lower() in OFF:
        raise Said("")   # capture is off: nothing to do, nothing to say
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    transcript = data.get("transcript_path") or data.get("sessionFile")
    session = data.get("session_id") or data.get("sessionId") or data.get("sessionKey")
    messages = data.get("messages")
    if not all(v is None or isinstance(v, str) for v in (transcript, session, data.get("cwd"),
                                                         data.get("workspaceDir"))):
        return False
    if messages is not None and not isinstance(messages, list):
        return False
    if messages is None or transcript:
        if not transcript:
            raise Said("nothing captured: no transcript_path (or sessionFile / messages) in the hook input")
        path = os.path.expanduser(transcript)
        if not os.path.isfile(path):
            raise Said(f"nothing captured: {path}: no such transcript file")
    elif not session:
        raise Said("nothing captured: the event carries messages but no sessionId / sessionKey to track them by")
    settings = {k: args[k] for k in SETTINGS_FLAGS if k in args}
    data_dir = args.get("data_dir", os.environ.get("MCP_MEMORY_DATA_DIR")) or default_data_dir()
    from .capture.detach import detach

    try:
        detach({"event": args["event"], "harness": args["harness"], "payload": data, "settings": settings},
               os.path.expanduser(data_dir) if data_dir else None)
    except OSError:
        return False
    return True


def full(argv: list[str], raw: bytes | None = None) -> int:
    """The full command line, with the hook input already read handed on as stdin."""
    if sys.flags.no_site:  # started lean (`python -S`) for the thin paths: the rest needs site-packages
        import site

        site.main()
    if raw is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    from .cli import main as cli_main

    return cli_main(argv)


def capture(argv: list[str], args: dict[str, str], raw: bytes, why: str) -> int:
    """A capture event no server took: handed off from here, else by the full path."""
    try:
        handed = hand_off(args, raw)
    except Said as said:
        if str(said):
            print(f"mcp-memory hook {args['event']}: {said}", file=sys.stderr)
        return 0
    if not handed:
        if os.environ.get("MCP_MEMORY_HOOK_TRACE"):
            print(f"mcp-memory hook {args['event']}: full path: {why}", file=sys.stderr)
        return full(argv, raw)
    if os.environ.get("MCP_MEMORY_HOOK_TRACE"):
        print(f"mcp-memory hook {args['event']}: handed to a capture worker ({why})", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        # A window's stdio server: a relay to the store's resident server when there is one (relay.py).
        from .relay import main as relay

        code = relay(argv)
        return full(argv) if code is None else code
    args = parse(argv)
    if args is None or os.environ.get("MCP_MEMORY_HOOK_CHANNEL", "").strip().lower() in OFF:
        return full(argv)
    if args["event"] in CAPTURE_EVENTS:
        # Until the capture is handed to a server or a worker (milliseconds), a harness's SIGTERM
        # would lose it; the worker resets this for itself.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raw = sys.stdin.buffer.read(MAX_STDIN + 1)
    if args["event"] == "prompt-submit" and len(raw) <= MAX_STDIN and trivial_prompt(raw):
        return 0
    path = socket_path(args.get("database_url", os.environ.get("MCP_MEMORY_DATABASE_URL")),
                       args.get("data_dir", os.environ.get("MCP_MEMORY_DATA_DIR")))
    try:
        if path is None or len(raw) > MAX_STDIN:
            raise Fallback("no socket for this store")
        reply = ask(path, args, raw, started)
    except Fallback as why:
        if args["event"] in CAPTURE_EVENTS and len(raw) <= MAX_STDIN:
            return capture(argv, args, raw, f"no server: {why}")
        if os.environ.get("MCP_MEMORY_HOOK_SERVER_ONLY", "").strip().lower() in ON:
            if os.environ.get("MCP_MEMORY_HOOK_TRACE"):
                print(f"mcp-memory hook {args['event']}: not answered (server only): {why}", file=sys.stderr)
            return NOT_ANSWERED
        if os.environ.get("MCP_MEMORY_HOOK_TRACE"):
            print(f"mcp-memory hook {args['event']}: full path: {why}", file=sys.stderr)
        return full(argv, raw)
    except TimeoutError:
        if args["event"] not in BUDGETS:  # not acknowledged: the capture must still happen
            return capture(argv, args, raw, "the server did not acknowledge")
        print(f"mcp-memory hook {args['event']}: no context added: the server took longer than "
              f"{wait_for(args):g}s", file=sys.stderr)
        return 0
    if reply.get("stdout"):
        sys.stdout.write(str(reply["stdout"]) + "\n")
        sys.stdout.flush()
    if reply.get("stderr"):
        print(str(reply["stderr"]), file=sys.stderr)
    if os.environ.get("MCP_MEMORY_HOOK_TRACE"):
        print(f"mcp-memory hook {args['event']}: answered by server pid {reply.get('pid')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
