"""The resident server (mcp_memory/server/resident.py) and the thin stdio relay (mcp_memory/relay.py):
real `mcp-memory serve` subprocesses relaying to one real resident server on the suite's database."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import Client, StdioServerParameters

from mcp_memory import relay, resident_client
from mcp_memory.server.resident import peer_allowed

from .test_server import call

CLI = str(Path(sys.executable).with_name("mcp-memory"))


class Store:
    """One database, a private runtime directory for its sockets, the environment its windows share."""

    def __init__(self, url: str, runtime: Path) -> None:
        self.url, self.runtime, self.data = url, runtime, runtime / "data"
        self.env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                    "XDG_RUNTIME_DIR": str(runtime), "MCP_MEMORY_DATABASE_URL": url,
                    "MCP_MEMORY_DATA_DIR": str(self.data), "MCP_MEMORY_USER": "alice",
                    "MCP_MEMORY_RESIDENT": "true"}

    def ask(self, kind: str) -> dict[str, Any] | None:
        with self._runtime():
            return resident_client.request(kind, self.url, str(self.data))

    def socket_path(self) -> str:
        with self._runtime():
            path = resident_client.resident_path(self.url, str(self.data))
        assert path is not None
        return path

    @contextmanager
    def _runtime(self) -> Iterator[None]:
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(self.runtime)
        try:
            yield
        finally:
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old

    def residents(self) -> list[psutil.Process]:
        """The resident server processes of this store."""
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            try:
                if resident_client.MODULE in (proc.info["cmdline"] or []) and \
                        proc.environ().get("MCP_MEMORY_DATA_DIR") == str(self.data):
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def window(self, *args: str, **env: str) -> StdioServerParameters:
        return StdioServerParameters(command=CLI, args=["serve", *args], env={**self.env, **env})

    def popen(self, *args: str, cwd: Path | None = None, **env: str | None) -> subprocess.Popen:
        merged = {k: v for k, v in {**self.env, **env}.items() if v is not None}
        return subprocess.Popen([CLI, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=merged, cwd=cwd)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    runtime = Path(tempfile.mkdtemp(prefix="mres-", dir="/tmp"))
    s = Store(db_url, runtime)
    try:
        yield s
    finally:
        for proc in s.residents():
            proc.terminate()
        gone, alive = psutil.wait_procs(s.residents(), timeout=15)
        for proc in alive:
            proc.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def rpc(proc: subprocess.Popen, message: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, f"the window closed stdout; stderr: {proc.stderr.read()}"
        reply = json.loads(line)   # every stdout line is a JSON-RPC message
        if reply.get("id") == message.get("id"):
            return reply
    raise AssertionError("no reply")


def initialize(proc: subprocess.Popen, name: str = "raw") -> dict[str, Any]:
    init = rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "0"}}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    return init


def write(proc: subprocess.Popen, request_id: int, content: str) -> dict[str, Any]:
    return rpc(proc, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": "memory_write", "arguments": {"content": content}}})


def test_peer_check() -> None:
    assert peer_allowed(os.getuid())
    assert not peer_allowed(os.getuid() + 1)
    assert not peer_allowed(0, own=1000)
    assert peer_allowed(None)   # no SO_PEERCRED: the 0600 socket in a 0700 directory keeps others out


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
def test_a_connection_from_another_user_is_refused(tmp_path: Path) -> None:
    """The resident server's own check, with a real peer of another uid (the socket is put where
    that user may reach it, as a mistake or an attack would)."""
    from mcp_memory.server.resident import Resident

    where = Path(tempfile.mkdtemp(dir="/tmp"))
    where.chmod(0o777)
    path = str(where / "r.sock")
    replies: list[bytes] = []

    async def main() -> None:
        listener = await anyio.create_unix_listener(path, mode=0o666)
        resident = Resident.__new__(Resident)
        resident.windows = {}

        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, resident.connection)
            replies.append(await anyio.to_thread.run_sync(_as_nobody, path))
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    assert replies == [b""]   # closed without a word


def _as_nobody(path: str) -> bytes:
    """What a process of uid 65534 hears from the socket after saying hello (b"": nothing)."""
    code = f"""
import os, socket, sys
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect({path!r})
try:
    s.sendall(b'{{"v": 1, "kind": "status"}}\\n')
    sys.stdout.buffer.write(s.recv(1000))
except OSError:
    pass
"""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30, check=True).stdout


async def test_five_windows_share_one_resident_server(store: Store) -> None:
    """Five windows started at once start one resident server between them; each keeps its own
    identity (here its --project flag) through it."""
    results: dict[int, dict[str, Any]] = {}

    async def window(i: int, ready: anyio.Event, done: anyio.Event) -> None:
        async with Client(store.window("--project", f"p{i}"), mode="legacy") as client:
            results[i] = await call(client, "memory_write", {"content": f"window {i} was here"})
            ready.set()
            await done.wait()

    done = anyio.Event()
    readies = [anyio.Event() for _ in range(5)]
    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(window, i, readies[i], done)
        with anyio.fail_after(120):
            for ready in readies:
                await ready.wait()
        status = store.ask("status")
        residents = store.residents()
        done.set()
    assert status is not None and status["windows"] == 5
    assert [p.pid for p in residents] == [status["pid"]]
    assert {i: r["memory"]["scope"]["project_id"] for i, r in results.items()} == {i: f"p{i}" for i in range(5)}
    # The windows are gone; the resident server stays (until its idle timeout).
    with anyio.fail_after(10):
        while (store.ask("status") or {}).get("windows"):  # noqa: ASYNC110 (another process's state)
            await anyio.sleep(0.1)
    assert [p.pid for p in store.residents()] == [status["pid"]]


def test_killed_mid_call_gives_a_retryable_error_and_no_duplicate(store: Store) -> None:
    proc = store.popen()
    try:
        assert initialize(proc)["result"]["serverInfo"]["name"] == "mcp-memory"
        assert write(proc, 1, "first write")["result"]["isError"] is False
        assert psutil.Process(proc.pid).memory_full_info().pss < 50 * 2**20   # a relay, not a server
        first = store.ask("status")
        assert first is not None
        # Frozen, the server cannot answer the call now sent; killed, it never will.
        os.kill(first["pid"], signal.SIGSTOP)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_write", "arguments": {"content": "the call in flight"}}}) + "\n")
        proc.stdin.flush()
        time.sleep(0.3)
        os.kill(first["pid"], signal.SIGKILL)
        lost = json.loads(proc.stdout.readline())
        assert lost["id"] == 2 and lost["error"]["code"] == relay.LOST and lost["error"]["data"]["retryable"]
        assert "retry" in lost["error"]["message"]
        # The next call starts a new resident server, to which the window is introduced again.
        retried = write(proc, 3, "the call in flight")
        assert "result" in retried and retried["result"]["isError"] is False, retried
        second = store.ask("status")
        assert second is not None and second["pid"] != first["pid"] and second["windows"] == 1
        listed = rpc(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "memory_list", "arguments": {"limit": 50}}})
        contents = [m["content"] for m in listed["result"]["structuredContent"]["memories"]]
        assert sorted(contents) == ["first write", "the call in flight"]   # once, never twice
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0   # the harness closed stdin: the window's relay is gone
    assert proc.stdout.read() == ""
    assert len(store.residents()) == 1      # and only the resident server is left


def test_other_settings_serve_in_process(store: Store) -> None:
    first = store.popen()
    try:
        initialize(first)
        other = store.popen(MCP_MEMORY_SNIPPET_CHARS="100")
        try:
            assert initialize(other)["result"]["serverInfo"]["name"] == "mcp-memory"
            assert write(other, 1, "from another setting")["result"]["isError"] is False
        finally:
            other.stdin.close()
            other.wait(timeout=30)
        said = other.stderr.read()
        assert "running in-process" in said and "MCP_MEMORY_SNIPPET_CHARS" in said
        status = store.ask("status")
        assert status is not None and status["windows"] == 1
    finally:
        first.stdin.close()
        first.wait(timeout=20)


def test_an_upgrade_replaces_the_older_resident_server(store: Store) -> None:
    """A resident server whose code is not what is installed leaves when a window of the installed
    package comes; that window starts the new one."""
    old = subprocess.Popen([sys.executable, "-c", "import sys, mcp_memory.server.resident as r; "
                            "r.BUILD = '0.0.0:old'; sys.exit(r.main())"],
                           env={**store.env, "MCP_MEMORY_DATA_DIR": str(store.data)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while (status := store.ask("status")) is None:
            assert time.monotonic() < deadline and old.poll() is None
            time.sleep(0.1)
        assert status["build"] == "0.0.0:old"
        proc = store.popen()
        try:
            initialize(proc)
            assert write(proc, 1, "after the upgrade")["result"]["isError"] is False
            now = store.ask("status")
            assert now is not None and now["build"] == resident_client.build() and now["pid"] != old.pid
            assert old.wait(timeout=30) == 0
        finally:
            proc.stdin.close()
            proc.wait(timeout=20)
    finally:
        if old.poll() is None:
            old.kill()


def test_standalone_and_false_serve_in_process(store: Store) -> None:
    """`--standalone`, and MCP_MEMORY_RESIDENT=false: the in-process server, no resident one."""
    for args, env in ((("--standalone",), {}), ((), {"MCP_MEMORY_RESIDENT": "false"})):
        proc = store.popen(*args, **env)
        try:
            initialize(proc)
            assert write(proc, 1, f"in-process {args}")["result"]["isError"] is False
            assert store.ask("status") is None
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        assert "running in-process" not in proc.stderr.read()   # chosen, not a fallback: nothing said
    assert store.residents() == []


def test_unset_relays_and_starts_the_resident_server(store: Store) -> None:
    """The default: a window's stdio serve starts the resident server and relays to it."""
    proc = store.popen(MCP_MEMORY_RESIDENT=None)
    try:
        initialize(proc)
        assert write(proc, 1, "through the default relay")["result"]["isError"] is False
        status = store.ask("status")
        assert status is not None and status["windows"] == 1
        assert psutil.Process(proc.pid).memory_full_info().pss < 50 * 2**20   # a relay, not a server
        assert [p.pid for p in store.residents()] == [status["pid"]]
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0


def in_process_fallback(store: Store, why: str, **env: str | None) -> str:
    """A window that cannot use a resident server: it serves in-process (stdout only protocol) and
    says why in one stderr line; no resident server runs. Its stderr."""
    started = time.monotonic()
    proc = store.popen(MCP_MEMORY_RESIDENT=None, **env)
    try:
        assert initialize(proc)["result"]["serverInfo"]["name"] == "mcp-memory"
        assert time.monotonic() - started < 45   # not the start timeout (60 s) waited out
        assert write(proc, 1, "served in-process")["result"]["isError"] is False
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.stdout.read() == ""
    said = proc.stderr.read()
    lines = [line for line in said.splitlines() if "running in-process" in line]
    assert len(lines) == 1 and why in lines[0], said
    assert store.residents() == []
    return said


def test_a_data_dir_that_cannot_be_written_serves_in_process(store: Store, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    in_process_fallback(store, "could not start the resident server", MCP_MEMORY_DATA_DIR=str(blocker / "data"))


def test_a_socket_directory_others_may_enter_serves_in_process(store: Store) -> None:
    where = store.runtime / f"mcp-memory-{os.getuid()}"
    where.mkdir(mode=0o755)
    where.chmod(0o755)
    in_process_fallback(store, "is not a directory only this user can enter")


def test_a_long_runtime_dir_still_gets_a_short_socket(store: Store, tmp_path: Path) -> None:
    """An XDG_RUNTIME_DIR too long for a socket path: the sockets go under /tmp, still private."""
    long = store.runtime / ("d" * 90)
    long.mkdir()
    proc = store.popen(MCP_MEMORY_RESIDENT=None, XDG_RUNTIME_DIR=str(long))
    try:
        initialize(proc)
        assert write(proc, 1, "a long runtime dir")["result"]["isError"] is False
        assert len(store.residents()) == 1
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
        for resident in store.residents():   # its socket is not under store.runtime: stop it by pid
            resident.terminate()
            resident.wait(timeout=30)
    assert "running in-process" not in proc.stderr.read()


def test_a_resident_server_that_cannot_start_is_not_waited_for(store: Store) -> None:
    """Settings the resident server refuses to start with: the window notices it exited (not the
    60 s start timeout), says so with the log's reason, and the full server then reports the
    setting as it always did."""
    started = time.monotonic()
    proc = store.popen(MCP_MEMORY_RESIDENT=None, MCP_MEMORY_SNIPPET_CHARS="many")
    out, err = proc.communicate(timeout=90)
    assert time.monotonic() - started < 45
    assert proc.returncode == 2 and out == ""
    said = [line for line in err.splitlines() if "running in-process" in line]
    assert len(said) == 1 and "resident server exited while starting" in said[0], err
    assert "snippet_chars" in said[0] and "resident.log" in said[0]   # the log's reason, in that one line
    assert "invalid configuration" in err   # and the in-process server's own report
    assert store.residents() == []


def test_the_relay_takes_only_stdio_serve() -> None:
    """HTTP and SSE serve, --standalone and every other command are the full command line's."""
    assert relay.parse(["serve"]) == {}
    assert relay.parse(["serve", "--transport", "stdio", "--user", "u"]) == {"user": "u"}
    for argv in (["serve", "--transport", "http"], ["serve", "--transport=sse"], ["serve", "--standalone"],
                 ["serve", "--help"], ["doctor"], ["ui"], ["import", "x"], ["hook", "stop"], []):
        assert relay.parse(argv) is None, argv


def test_the_sockets_are_private(store: Store) -> None:
    proc = store.popen()
    try:
        initialize(proc)
        status = store.ask("status")
        assert status is not None
        path = store.socket_path()
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
        with socket.socket(socket.AF_UNIX) as s:   # a stranger's hello is not a window
            s.connect(path)
            s.sendall(b'{"v": 99}\n')
            assert b"refused" in s.recv(1000)
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


@pytest.mark.parametrize("hello", [
    {"data_dir": "/tmp/\u0000"},
    {"identity": {"user": "al\u0000ice"}},
    {"identity": {"local_permissions": "\u0000"}},
    {"env": {"MCP_MEMORY_POOL_MAX_SIZE": "-5"}},
])
def test_a_malformed_hello_is_refused_and_every_window_goes_on(store: Store, hello: dict[str, Any]) -> None:
    """A hello the resident server could not read (a NUL in a path) once ended it, and every
    window with it: any process of the user may speak to its socket."""
    proc = store.popen()
    try:
        initialize(proc)
        pid = store.ask("status")["pid"]
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(30)
            s.connect(store.socket_path())
            s.sendall(json.dumps({"v": resident_client.PROTOCOL, "kind": "window", "build": resident_client.build(),
                                  "database_url": store.url, "data_dir": str(store.data), **hello}).encode() + b"\n")
            assert b"refused" in s.recv(1000)
        assert store.ask("status")["pid"] == pid
        assert write(proc, 1, "Still served after a stranger's hello.")["result"]["isError"] is False
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


async def test_a_2026_client_and_a_legacy_one_through_one_server(store: Store) -> None:
    """Both protocol eras through the relay: the bytes are the client's own either way."""
    async with Client(store.window(), mode="auto") as modern, Client(store.window(), mode="legacy") as legacy:
        written = await call(modern, "memory_write", {"content": "written by a 2026 client", "scope": "user"})
        hits = (await call(legacy, "memory_search", {"query": "written by a 2026 client"}))["hits"]
        assert [h["id"] for h in hits][:1] == [written["memory"]["id"]]
        status = store.ask("status")
        assert status is not None and status["windows"] == 2


def test_hooks_are_answered_by_the_resident_server(store: Store) -> None:
    proc = store.popen(MCP_MEMORY_RECALL_TIMEOUT_S="60")   # the hook's settings are the server's
    try:
        initialize(proc)
        written = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write",
                             "arguments": {"content": "The staging database lives on the blue cluster",
                                           "scope": "user"}}})
        assert written["result"]["isError"] is False
        status = store.ask("status")
        assert status is not None
        hook = {"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": "/tmp",
                "hook_event_name": "UserPromptSubmit", "prompt": "where does the staging database live?"}
        env = {**store.env, "MCP_MEMORY_HOOK_TRACE": "1", "MCP_MEMORY_RECALL_TIMEOUT_S": "60",
               "MCP_MEMORY_PROJECT": "none"}
        deadline = time.monotonic() + 60
        while True:   # the hook channel listens once the database is open
            out = subprocess.run([CLI, "hook", "prompt-submit"], input=json.dumps(hook), capture_output=True,
                                 text=True, env=env, timeout=60)
            if f"answered by server pid {status['pid']}" in out.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert f"answered by server pid {status['pid']}" in out.stderr, out.stderr
        assert "blue cluster" in out.stdout
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


def test_the_resident_server_leaves_when_idle(store: Store) -> None:
    proc = store.popen(MCP_MEMORY_RESIDENT_IDLE_TIMEOUT_S="2")
    initialize(proc)
    status = store.ask("status")
    assert status is not None
    time.sleep(3)
    assert psutil.pid_exists(status["pid"])   # a window is connected: not idle
    proc.stdin.close()
    proc.wait(timeout=20)
    deadline = time.monotonic() + 30
    while psutil.pid_exists(status["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(status["pid"]) and store.ask("status") is None


def test_status_doctor_and_stop_from_the_command_line(store: Store) -> None:
    proc = store.popen()
    try:
        initialize(proc)
        status = store.ask("status")
        assert status is not None
        env = {**store.env, "MCP_MEMORY_RESIDENT": "false"}   # the commands only ask; they start nothing
        shown = subprocess.run([CLI, "resident", "status"], capture_output=True, text=True, env=env, timeout=60)
        assert f"resident server pid {status['pid']}" in shown.stdout and "1 window(s) connected" in shown.stdout
        assert "MiB PSS" in shown.stdout
        doctor = subprocess.run([CLI, "doctor"], capture_output=True, text=True, env=env, timeout=120)
        assert f"[info] resident server pid {status['pid']}" in doctor.stdout, doctor.stdout
        stopped = subprocess.run([CLI, "resident", "stop"], capture_output=True, text=True, env=env, timeout=60)
        assert stopped.returncode == 0 and "is stopping" in stopped.stdout
        deadline = time.monotonic() + 30
        while psutil.pid_exists(status["pid"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not psutil.pid_exists(status["pid"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


def test_each_window_keeps_its_own_folder_and_user(store: Store, tmp_path: Path) -> None:
    """The project a window derives from its working directory's repository, and its user, are its
    own, not the resident server's (started from the first window, in /)."""
    procs = []
    for name, user in (("alpha", "alice"), ("beta", "bob")):
        (tmp_path / name / ".git").mkdir(parents=True)
        procs.append(store.popen(cwd=tmp_path / name, MCP_MEMORY_USER=user))
    try:
        scopes = []
        for proc in procs:
            initialize(proc)
            reply = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "memory_write", "arguments": {"content": "where am I", "scope": "project"}}})
            scopes.append(reply["result"]["structuredContent"]["memory"]["scope"]["project_id"])
        assert scopes == ["alpha", "beta"]
        listed = rpc(procs[1], {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_list", "arguments": {}}})
        assert len(listed["result"]["structuredContent"]["memories"]) == 1   # bob's own, not alice's
        status = store.ask("status")
        assert status is not None and status["windows"] == 2
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(timeout=20)


def test_the_relay_imports_only_the_standard_library() -> None:
    code = ("import sys, mcp_memory.hookline, mcp_memory.relay, mcp_memory.resident_client; "
            "print(sorted({m.partition('.')[0] for m in sys.modules}))")
    loaded = json.loads(subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                                       check=True, cwd=Path(__file__).parent.parent).stdout.replace("'", '"'))
    assert not {"mcp", "pydantic", "anyio", "asyncpg", "numpy", "onnxruntime"} & set(loaded), loaded


def test_a_capture_hook_whose_input_comes_slowly_is_still_acknowledged(store: Store, tmp_path: Path) -> None:
    """A harness busy at the end of a turn (OpenClaw's gateway) may take longer than the capture's
    acknowledgement wait to hand the hook its input: the wait counts from the request sent, so the
    resident server that took the capture is not given up on, and no worker is started to capture
    it a second time."""
    proc = store.popen()
    try:
        initialize(proc)
        assert write(proc, 1, "opens the database")["result"]["isError"] is False
        status = store.ask("status")
        assert status is not None
        env = {**store.env, "MCP_MEMORY_HOOK_TRACE": "1"}
        answered = f"answered by server pid {status['pid']}"
        prompt = {"session_id": "s0", "transcript_path": "/nonexistent.jsonl", "cwd": str(tmp_path),
                  "hook_event_name": "UserPromptSubmit", "prompt": "is the hook channel listening yet?"}
        deadline = time.monotonic() + 60
        while answered not in subprocess.run([CLI, "hook", "prompt-submit"], input=json.dumps(prompt), text=True,
                                             capture_output=True, env=env, timeout=60).stderr:
            assert time.monotonic() < deadline, "the hook channel never answered"
            time.sleep(0.3)
        turn = {"sessionId": "slow-1", "agentId": "main", "workspaceDir": str(tmp_path), "messages": [
            {"role": "user", "content": [{"type": "text", "text": "The shed key hangs behind the door."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}]}
        text = json.dumps(turn)
        hook = subprocess.Popen([CLI, "hook", "stop", "--harness", "openclaw"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert hook.stdin is not None
        hook.stdin.write(text[:20])
        hook.stdin.flush()
        time.sleep(1.0)   # over the acknowledgement wait (hookline.ACK_WAIT_S)
        hook.stdin.write(text[20:])
        hook.stdin.close()
        assert hook.wait(timeout=60) == 0
        said = hook.stderr.read() if hook.stderr else ""
        assert answered in said and "capture worker" not in said, said
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
