"""The hook channel: `mcp-memory hook` (mcp_memory/hookline.py) asking a running `mcp-memory serve`
(capture/channel.py) over a user-only unix socket, with real server and hook subprocesses, and the
full path whenever no server answers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory import hookline, hookprotocol, hooksocket
from mcp_memory.capture.channel import Channel, Unresolvable, differing_settings
from mcp_memory.config import Settings, default_data_dir
from mcp_memory.db import open_database
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLI = str(Path(sys.executable).with_name("mcp-memory"))
# Functional tests must not depend on this machine's speed; bench/hooks_latency.py measures it.
RELAXED = {"MCP_MEMORY_RECALL_TIMEOUT_S": "60", "MCP_MEMORY_SESSION_START_TIMEOUT_S": "60"}


def claude(event: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook input, in a session of its own (recall leaves out what a session was given)."""
    return {"session_id": str(uuid.uuid4()), "transcript_path": "/nonexistent.jsonl", "cwd": "/tmp",
            "permission_mode": "default", "hook_event_name": event, **fields}


class Store:
    """One database for the module, a private runtime directory for its sockets and the
    environment every server and hook of a test shares."""

    def __init__(self, url: str, runtime: Path) -> None:
        self.url, self.runtime = url, runtime
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
        # Each test's own `serve` (conftest: MCP_MEMORY_RESIDENT=false), not a resident server.
        self.env = {**env, **RELAXED, "XDG_RUNTIME_DIR": str(runtime), "MCP_MEMORY_HOOK_TRACE": "1",
                    "MCP_MEMORY_RESIDENT": os.environ["MCP_MEMORY_RESIDENT"],
                    "MCP_MEMORY_DATA_DIR": str(runtime / "data")}

    @property
    def socket(self) -> str:
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(self.runtime)
        try:
            path = hooksocket.socket_path(self.url, None)
        finally:
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old
        assert path is not None
        return path

    def serve(self, log: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """`mcp-memory serve` as a harness starts it: stdio, its input kept open."""
        return subprocess.Popen([CLI, "serve", "--database-url", self.url, "--user", "alice", *flags],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("wb"),
                                env={**self.env, **(env or {})})

    def hook(self, event: str, payload: Any, *flags: str, env: dict[str, str] | None = None,
             timeout: float = 180) -> subprocess.CompletedProcess[str]:
        args = [CLI, "hook", event, "--database-url", self.url, "--user", "alice", *flags]
        out = subprocess.run(args, input=json.dumps(payload), capture_output=True, text=True, timeout=timeout,
                             env={**self.env, **(env or {})})
        assert out.returncode == 0, out.stderr
        return out

    def full(self, event: str, payload: Any, *flags: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
        return self.hook(event, payload, *flags, env={**(env or {}), "MCP_MEMORY_HOOK_CHANNEL": "off"})


def answered_by(out: subprocess.CompletedProcess[str]) -> int | None:
    for line in out.stderr.splitlines():
        if "answered by server pid" in line:
            return int(line.rsplit(" ", 1)[1])
    return None


def listening(store: Store, proc: subprocess.Popen[bytes], log: Path, within: float = 120) -> None:
    """Until this server (not another) answers on the store's socket."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        assert proc.poll() is None, log.read_text()
        if f"listening on {store.socket}" in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"the server never listened:\n{log.read_text()}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        assert proc.stdin is not None
        proc.stdin.close()   # as a harness ends a stdio server
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def runtime_dir() -> Path:
    """A runtime directory others may enter (as /tmp is), so that only the channel's own 0700
    directory keeps them out; pytest's own temporary directories are 0700 already."""
    path = Path(tempfile.mkdtemp(prefix="mcpm-rt-", dir="/tmp"))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
async def store(make_module_db: str) -> AsyncIterator[Store]:
    runtime = runtime_dir()
    yield Store(make_module_db, runtime)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def own_store(store: Store) -> Iterator[Store]:
    """The module's database with sockets of its own: the module's server listens elsewhere."""
    runtime = runtime_dir()
    yield Store(store.url, runtime)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
async def make_module_db(pg: Any, template_db: str) -> AsyncIterator[str]:
    import asyncpg

    admin = await asyncpg.connect(pg.dsn("postgres"))
    await admin.execute(f'CREATE DATABASE "t_channel" TEMPLATE "{template_db}"')
    try:
        yield pg.dsn("t_channel")
    finally:
        await admin.execute('DROP DATABASE IF EXISTS "t_channel" WITH (FORCE)')
        await admin.close()


@pytest.fixture(scope="module")
async def module_service(store: Store) -> AsyncIterator[MemoryService]:
    settings = Settings(database_url=store.url, user="alice")
    db = await open_database(settings)
    service = await MemoryService.open(db, settings)
    alice = Principal(user_id="alice", agent_id=None, project_id=None, actor="test:alice")
    await service.write(alice, "Production deploys happen only on Tuesdays after the standup.", kind="procedure",
                        pinned=True, priority=10, scope="user")
    await service.write(alice, "I prefer black over autopep8 for formatting Python code.", kind="preference",
                        scope="user")
    await service.write(alice, "The job queue runs on PostgreSQL with SKIP LOCKED; Redis was removed.",
                        kind="decision", scope="user")
    yield service
    await db.close()


@pytest.fixture(scope="module")
def server(store: Store, module_service: MemoryService, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[subprocess.Popen[bytes]]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    proc = store.serve(log)
    try:
        listening(store, proc, log)
        yield proc
    finally:
        stop(proc)


def prompt() -> dict[str, Any]:
    return claude("UserPromptSubmit", prompt="Do I prefer black or autopep8 for formatting my Python code?")


def start() -> dict[str, Any]:
    return claude("SessionStart", source="startup", model="claude-sonnet-4-5")


def test_prompt_recall_is_answered_by_the_server_as_the_full_path_answers(
        store: Store, server: subprocess.Popen[bytes]) -> None:
    warm = store.hook("prompt-submit", prompt())
    assert answered_by(warm) == server.pid, warm.stderr   # not the fallback
    assert "black over autopep8" in warm.stdout
    cold = store.full("prompt-submit", prompt())
    assert answered_by(cold) is None
    assert warm.stdout == cold.stdout, cold.stderr


def test_session_start_is_answered_by_the_server_as_the_full_path_answers(
        store: Store, server: subprocess.Popen[bytes]) -> None:
    warm = store.hook("session-start", start())
    assert answered_by(warm) == server.pid, warm.stderr
    assert "Tuesdays" in warm.stdout
    assert warm.stdout == store.full("session-start", start()).stdout


def test_identity_comes_from_the_hook_not_the_server(store: Store, server: subprocess.Popen[bytes]) -> None:
    """The server runs as --user alice; a hook for another user gets that user's (empty) memories,
    and a project flag or variable of the hook's applies as in the full path."""
    other = store.hook("prompt-submit", prompt(), "--user", "bob")
    assert answered_by(other) == server.pid and other.stdout == ""
    by_env = store.hook("session-start", start(), env={"MCP_MEMORY_PROJECT": "none"})
    assert answered_by(by_env) == server.pid
    assert by_env.stdout == store.full("session-start", start(), env={"MCP_MEMORY_PROJECT": "none"}).stdout


def test_settings_that_differ_from_the_servers_take_the_full_path(
        store: Store, server: subprocess.Popen[bytes]) -> None:
    out = store.hook("prompt-submit", prompt(), env={"MCP_MEMORY_RECALL_LIMIT": "1"})
    assert answered_by(out) is None
    assert "settings differ from the server's: MCP_MEMORY_RECALL_LIMIT" in out.stderr


def test_bad_input_is_left_to_the_full_path(store: Store, server: subprocess.Popen[bytes]) -> None:
    out = subprocess.run([CLI, "hook", "prompt-submit", "--database-url", store.url], input="[1, 2",
                         capture_output=True, text=True, timeout=120, env=store.env)
    assert out.returncode == 0 and out.stdout == ""
    assert "ignored" in out.stderr and answered_by(out) is None


@pytest.mark.parametrize("fields", [{"transcript_path": "/tmp/session\u0000.jsonl"}, {"cwd": "/tmp/\u0000"},
                                    {"session_id": "s\u0000"}])
def test_a_hook_input_no_capture_could_read_leaves_the_server_answering(
        store: Store, server: subprocess.Popen[bytes], tmp_path: Path, fields: dict[str, str]) -> None:
    """A NUL in a path (no harness sends one; a broken one might) failed the capture after the hook
    was acknowledged, in the server's own task group: the server answering the hooks ended with it.
    The hook command checks the transcript exists first, so the input goes to the socket as it would."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "claude_code_session.jsonl", transcript)
    env = {k: v for k, v in store.env.items() if k.startswith("MCP_MEMORY_")}
    header = {"v": hookprotocol.PROTOCOL, "event": "stop", "harness": "claude-code", "user": "alice", "env": env,
              "database_url": store.url, "data_dir": env["MCP_MEMORY_DATA_DIR"], "cwd": str(tmp_path)}
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(store.socket)
        s.sendall(json.dumps(header).encode() + b"\n" +
                  json.dumps({**claude("Stop", transcript_path=str(transcript)), **fields}).encode())
        s.shutdown(socket.SHUT_WR)
        said = s.recv(10_000)
        assert b"fallback" in said, said   # the full path says why it ignores it
    time.sleep(1)
    assert server.poll() is None
    assert answered_by(store.hook("prompt-submit", prompt())) == server.pid


async def test_capture_is_acknowledged_and_done_in_the_servers_background(
        store: Store, server: subprocess.Popen[bytes], module_service: MemoryService, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "claude_code_session.jsonl", transcript)
    started = time.monotonic()
    out = store.hook("stop", claude("Stop", transcript_path=str(transcript), cwd=str(repo)))
    assert answered_by(out) == server.pid and out.stdout == ""
    assert time.monotonic() - started < 5
    p = Principal(user_id="alice", agent_id="claude-code", project_id="shop", actor="test:alice")
    with anyio.fail_after(60):
        while not (await module_service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories:  # noqa: ASYNC110
            await anyio.sleep(0.2)   # the server captures after answering: poll the database


def long_session(session: str, cwd: Path, pairs: int, last: str) -> str:
    """A Claude Code transcript of `pairs` exchanges about other things, then the user saying `last`."""
    lines = []
    for i in range(pairs):
        for role, text in (("user", f"Step {i}: rename the helper in module_{i}.py and rerun its tests."),
                           ("assistant", f"Renamed it in module_{i}.py; the {i} tests there pass.")):
            content = text if role == "user" else [{"type": "text", "text": text}]
            lines.append({"type": role, "sessionId": session, "cwd": str(cwd), "uuid": f"{role[0]}{i}",
                          "timestamp": f"2026-03-02T09:{i // 60:02d}:{i % 60:02d}.000Z",
                          "message": {"role": role, "content": content}})
    lines.append({"type": "user", "sessionId": session, "cwd": str(cwd), "uuid": "last",
                  "timestamp": "2026-03-02T11:00:00.000Z", "message": {"role": "user", "content": last}})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


async def test_a_new_session_recalls_what_another_session_just_handed_over(
        store: Store, server: subprocess.Popen[bytes], module_service: MemoryService, tmp_path: Path) -> None:
    """`claude -p` after `claude -p`: the first run's capture is acknowledged as it exits and stored
    in the background; the next run's start, arriving while it is, waits for it (within its budget),
    so its first prompt recalls what the first run was just told."""
    repo = tmp_path / "depot"
    (repo / ".git").mkdir(parents=True)
    transcript = tmp_path / "first.jsonl"
    transcript.write_text(long_session(str(uuid.uuid4()), repo, 150,
                                       "The staging Postgres for depot listens on port 6543 at kestrel-7.internal."))
    out = store.hook("stop", claude("Stop", transcript_path=str(transcript), cwd=str(repo)))
    assert answered_by(out) == server.pid and out.stdout == ""
    session = str(uuid.uuid4())
    began = store.hook("session-start", claude("SessionStart", source="startup", session_id=session, cwd=str(repo)))
    assert answered_by(began) == server.pid, began.stderr
    asked = store.hook("prompt-submit", claude("UserPromptSubmit", session_id=session, cwd=str(repo),
                                               prompt="Which host and port does the staging Postgres listen on?"))
    assert answered_by(asked) == server.pid, asked.stderr
    assert "kestrel-7.internal" in asked.stdout, asked.stdout[:2000]


async def test_a_resumed_sessions_start_takes_what_its_earlier_runs_said_before_it_answers(
        store: Store, server: subprocess.Popen[bytes], module_service: MemoryService, tmp_path: Path) -> None:
    """`claude -p --resume X`: the earlier run's Stop hook was killed, so its turns are not stored;
    the resumed run's start takes them before it answers, and its first search finds them."""
    from mcp_memory.capture import catchup

    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    folder = tmp_path / "claude" / "projects" / catchup.claude_project_key(str(repo))
    folder.mkdir(parents=True)
    session = str(uuid.uuid4())
    transcript = folder / f"{session}.jsonl"
    transcript.write_text((FIXTURES / "claude_code_session.jsonl").read_text().replace(
        "3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a", session))
    resumed = claude("SessionStart", source="resume", session_id=session, transcript_path=str(transcript),
                     cwd=str(repo))
    out = store.hook("session-start", resumed)
    assert answered_by(out) == server.pid, out.stderr
    p = Principal(user_id="alice", agent_id="claude-code", project_id="shop", actor="test:alice")
    found = await module_service.search(p, "Dana Whitfield")   # no waiting: stored before the answer
    assert any("Dana Whitfield" in h.snippet for h in found.hits)


async def test_openclaw_hooks_through_the_server(store: Store, server: subprocess.Popen[bytes],
                                                 module_service: MemoryService) -> None:
    """OpenClaw's plugin runs the same command: recall answered as prependContext, and an agent_end's
    messages (only this hook has them) captured by the server."""
    event = {"prompt": "Do I prefer black or autopep8 for formatting my Python code?", "sessionId": "oc-1",
             "sessionKey": "agent:main:main", "workspaceDir": "/tmp"}
    out = store.hook("prompt-submit", event, "--harness", "openclaw", "--project", "oc")
    assert answered_by(out) == server.pid
    assert list(json.loads(out.stdout)) == ["prependContext"] and "autopep8" in out.stdout
    lines = [json.loads(line) for line in (FIXTURES / "openclaw_session.jsonl").read_text().splitlines()]
    end = {"messages": [e["message"] for e in lines if e["type"] == "message"], "success": True,
           "sessionId": "oc-1", "sessionKey": "agent:main:main", "workspaceDir": "/tmp"}
    out = store.hook("stop", end, "--harness", "openclaw", "--project", "oc")
    assert answered_by(out) == server.pid and out.stdout == ""
    p = Principal(user_id="alice", agent_id="openclaw", project_id="oc", actor="test:alice")
    with anyio.fail_after(60):
        while len((await module_service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories) < 3:  # noqa: ASYNC110
            await anyio.sleep(0.2)   # captured after the answer: poll the database


def test_socket_and_directory_are_the_users_only(store: Store, server: subprocess.Popen[bytes]) -> None:
    path = store.socket
    assert len(path.encode()) <= hooksocket.SUN_PATH_MAX
    sock, folder = os.lstat(path), os.lstat(os.path.dirname(path))
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600
    assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == os.getuid()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another OS user")
def test_another_os_user_cannot_reach_the_socket(store: Store, server: subprocess.Popen[bytes]) -> None:
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code, store.socket], capture_output=True, text=True, timeout=30,
                         user=65534, group=65534)
    assert out.stdout.strip() == "refused", out.stderr


@pytest.mark.skipif(os.getuid() != 0 or not hasattr(socket, "SO_PEERCRED"),
                    reason="needs root to act as another OS user, and SO_PEERCRED")
async def test_the_server_checks_the_peers_uid(module_service: MemoryService, store: Store, tmp_path: Path) -> None:
    """Past the directory's permissions (a socket reachable by anyone), the server still answers
    only its own user."""
    open_dir = runtime_dir()
    path = str(open_dir / "s.sock")
    # The server's settings are compared by value: the hook's budget is the server's 60 s.
    own_env = {**{k: v for k, v in os.environ.items() if k.startswith("MCP_MEMORY_")},
               "MCP_MEMORY_SESSION_START_TIMEOUT_S": "60"}
    header = json.dumps({"v": 1, "event": "session-start", "harness": "claude-code", "user": "alice",
                         "env": own_env, "database_url": store.url, "cwd": "/tmp"})
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
            "try:\n    s.sendall(sys.argv[2].encode() + b'\\n{}')\n    s.shutdown(socket.SHUT_WR)\n"
            "    data = s.recv(65536)\nexcept OSError:\n    data = b''\nprint(repr(data))\n")
    settings = Settings(database_url=store.url, user="alice", session_start_timeout_s=60)
    async with anyio.create_task_group() as tg:
        channel = Channel(module_service, settings, tg)
        listener = await anyio.create_unix_listener(path, mode=0o666)
        tg.start_soon(listener.serve, channel.connection)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}

        def run(user: int | None) -> str:
            out = subprocess.run([sys.executable, "-c", code, path, header], capture_output=True, text=True,
                                 timeout=60, user=user, env=env, cwd="/")
            assert out.returncode == 0, out.stderr
            return out.stdout.strip()

        foreign = await anyio.to_thread.run_sync(run, 65534)
        own = await anyio.to_thread.run_sync(run, None)
        tg.cancel_scope.cancel()
    shutil.rmtree(open_dir, ignore_errors=True)
    assert foreign == "b''"
    assert "Tuesdays" in own


def test_a_server_that_is_gone_leaves_the_full_path(own_store: Store, module_service: MemoryService,
                                                    tmp_path: Path) -> None:
    store = own_store
    log = tmp_path / "serve.log"
    proc = store.serve(log, "--project", "none")
    listening(store, proc, log)
    try:
        assert answered_by(store.hook("prompt-submit", prompt())) == proc.pid
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert os.path.exists(store.socket)   # a killed server leaves its socket: refused, not found
        out = store.hook("prompt-submit", prompt())
        assert answered_by(out) is None and "full path: connect" in out.stderr
        assert "black over autopep8" in out.stdout
    finally:
        stop(proc)


def test_a_second_server_takes_over_when_the_listener_exits(own_store: Store, module_service: MemoryService,
                                                            tmp_path: Path) -> None:
    store = own_store
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = store.serve(first_log)
    listening(store, first, first_log)
    second = store.serve(second_log)
    try:
        time.sleep(3)
        assert second.poll() is None   # the other server runs on without the socket
        assert answered_by(store.hook("prompt-submit", prompt())) == first.pid
        first.send_signal(signal.SIGTERM)   # as a harness stops it
        first.wait(30)
        listening(store, second, second_log, within=30)
        assert answered_by(store.hook("prompt-submit", prompt())) == second.pid
    finally:
        stop(first)
        stop(second)


def test_an_http_server_answers_hooks_too(own_store: Store, module_service: MemoryService, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "http.log"
    proc = own_store.serve(log, "--transport", "http", "--port", str(port), "--no-auth")
    try:
        listening(own_store, proc, log)
        out = own_store.hook("prompt-submit", prompt())
        assert answered_by(out) == proc.pid and "black over autopep8" in out.stdout
    finally:
        proc.send_signal(signal.SIGINT)   # uvicorn's graceful shutdown
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not os.path.exists(own_store.socket)   # a server that stops takes its socket with it


def test_the_server_says_once_a_day_that_the_hooks_are_an_earlier_installs(
        own_store: Store, module_service: MemoryService, tmp_path: Path) -> None:
    """A session start the server answers carries the line the full path adds (capture/notices.py)
    when the user's capture hook commands are an earlier install's: once a day."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    stale = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"{CLI} hook stop"}]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(stale))
    log = tmp_path / "serve.log"
    proc = own_store.serve(log, env={"HOME": str(home)})
    try:
        listening(own_store, proc, log)
        first = own_store.hook("session-start", start(), env={"HOME": str(home)})
        assert answered_by(first) == proc.pid and "earlier install's" in first.stdout, first.stderr
        assert "Tuesdays" in first.stdout   # beside the memories, not instead of them
        again = own_store.hook("session-start", start(), env={"HOME": str(home)})
        assert answered_by(again) == proc.pid and "earlier install" not in again.stdout
    finally:
        stop(proc)


def test_the_channel_can_be_switched_off(own_store: Store, module_service: MemoryService, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    proc = own_store.serve(log, env={"MCP_MEMORY_HOOK_CHANNEL": "false"})
    try:
        end = time.monotonic() + 120
        while "database ready" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.1)
        time.sleep(1)
        assert not os.path.exists(own_store.socket) and "listening" not in log.read_text()
    finally:
        stop(proc)


def test_a_server_that_never_answers_costs_the_budget_only(own_store: Store) -> None:
    """Something holds the socket and accepts without answering: recall gives up within its
    budget, exit 0, one stderr line."""
    hanging = own_store
    os.mkdir(os.path.dirname(hanging.socket), 0o700)
    sink = socket.socket(socket.AF_UNIX)
    sink.bind(hanging.socket)
    sink.listen(16)
    try:
        env = {"MCP_MEMORY_RECALL_TIMEOUT_S": "1", "MCP_MEMORY_HOOK_TRACE": ""}
        started = time.monotonic()
        out = hanging.hook("prompt-submit", prompt(), env=env, timeout=30)
        took = time.monotonic() - started
        assert took < 1.9, took
        assert out.stdout == "" and len(out.stderr.splitlines()) == 1 and "longer than 1s" in out.stderr
        # A capture event not acknowledged in time must still be captured: the full path takes it.
        started = time.monotonic()
        out = hanging.hook("stop", claude("Stop", transcript_path="/nonexistent.jsonl"), env=env, timeout=60)
        assert "nothing captured" in out.stderr and "/nonexistent.jsonl" in out.stderr, out.stderr
        assert time.monotonic() - started < 30
    finally:
        sink.close()


def test_the_hook_loads_only_the_standard_library(store: Store, server: subprocess.Popen[bytes]) -> None:
    code = ("import sys, json\nbefore = set(sys.modules)\nfrom mcp_memory import hookline\n"
            "rc = hookline.main(sys.argv[1:])\n"
            "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names)\n"
            "print(json.dumps(new), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code, "hook", "prompt-submit", "--database-url", store.url,
                          "--user", "alice"], input=json.dumps(prompt()), capture_output=True, text=True,
                         timeout=60, env=store.env)
    assert answered_by(out) == server.pid, out.stderr
    assert json.loads(out.stderr.splitlines()[-1]) == LIGHT
    assert "black over autopep8" in out.stdout


def test_other_commands_still_reach_the_full_command_line(store: Store) -> None:
    out = subprocess.run([CLI, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("mcp-memory ")
    bad = subprocess.run([CLI, "hook", "nonsense"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.parametrize("xdg", [None, "", "/srv/data"])
def test_the_thin_default_data_dir_is_the_servers(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert hooksocket.default_data_dir() == str(default_data_dir())
    assert hooksocket.socket_path(None, None) == hooksocket.socket_path(None, default_data_dir())


def test_socket_paths_fit_and_keep_stores_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/" + "x" * 200)
    long_dir = "/home/someone/" + "deep/" * 60
    path = hooksocket.socket_path(None, long_dir)
    assert path is not None and len(path.encode()) <= hooksocket.SUN_PATH_MAX
    url = "postgresql://u:secret@db.example.com/memory"
    assert "secret" not in (hooksocket.socket_path(url, None) or "")
    assert len({hooksocket.socket_path(url, None), hooksocket.socket_path(url + "2", None), path}) == 3


async def test_a_request_for_another_store_is_left_to_the_full_path(module_service: MemoryService, store: Store,
                                                                   tmp_path: Path) -> None:
    """Socket names are hashes: whatever maps two stores to one name, the server answers only
    hooks of its own database and data dir."""
    settings = Settings(database_url=store.url, data_dir=tmp_path / "data", user="alice")
    own = {k: v for k, v in os.environ.items() if k.startswith("MCP_MEMORY_")}
    body = json.dumps(start()).encode()
    async with anyio.create_task_group() as tg:
        channel = Channel(module_service, settings, tg)

        async def ask(**fields: Any) -> dict[str, Any]:
            header = {"v": 1, "event": "session-start", "harness": "claude-code", "user": "alice", "env": own,
                      "database_url": store.url, "data_dir": str(tmp_path / "data"), **fields}
            return await channel.reply(json.dumps(header).encode(), body)

        assert "Tuesdays" in (await ask())["stdout"]
        assert "database is not the server's" in (await ask(database_url=store.url + "x"))["fallback"]
        assert "data dir is not the server's" in (await ask(data_dir=str(tmp_path / "other")))["fallback"]
        assert "request" in (await ask(v=2))["fallback"]
        tg.cancel_scope.cancel()


def test_only_settings_that_change_an_answer_are_compared() -> None:
    own = Settings(user="alice", log_level="DEBUG", recall_limit=3)
    assert differing_settings({"MCP_MEMORY_USER": "bob", "MCP_MEMORY_RECALL_LIMIT": "3"}, own) == []
    assert differing_settings({}, own) == ["MCP_MEMORY_RECALL_LIMIT"]
    assert differing_settings({"MCP_MEMORY_CAPTURE": "false", "MCP_MEMORY_RECALL_LIMIT": "3"}, own) == [
        "MCP_MEMORY_CAPTURE"]


def test_settings_are_compared_resolved_not_as_written() -> None:
    """The client's environment is resolved as its own process would resolve it: the same value
    written another way, a default spelled out, or a variable no setting reads is no difference;
    a value its own process would refuse is not answered here (the full path reports it)."""
    own = Settings(recall_limit=3, capture_exclude_projects=["scratch"])
    assert differing_settings({"MCP_MEMORY_RECALL_LIMIT": "03", "MCP_MEMORY_CAPTURE": "1",
                               "MCP_MEMORY_SNIPPET_CHARS": str(Settings.model_fields["snippet_chars"].default),
                               "MCP_MEMORY_CAPTURE_EXCLUDE_PROJECTS": '["scratch"]',
                               "MCP_MEMORY_NOT_A_SETTING": "x"}, own) == []
    assert differing_settings({"MCP_MEMORY_RECALL_LIMIT": "3", "MCP_MEMORY_CAPTURE_EXCLUDE_PROJECTS": '["other"]'},
                              own) == ["MCP_MEMORY_CAPTURE_EXCLUDE_PROJECTS"]
    with pytest.raises(Unresolvable, match="validation error"):
        differing_settings({"MCP_MEMORY_RECALL_LIMIT": "many"}, own)


async def test_what_session_start_gave_is_not_recalled_again_through_the_server(
        store: Store, server: subprocess.Popen[bytes], module_service: MemoryService, tmp_path: Path) -> None:
    folder = tmp_path / "ledger-proj"   # a project of its own: its recent memories are this one
    folder.mkdir()
    p = Principal(user_id="alice", agent_id="claude-code", project_id="ledger-proj", actor="test:alice")
    await module_service.write(p, "The nightly backup of the ledger service runs at 02:30 UTC.", kind="fact",
                               scope="project")
    first = {**start(), "cwd": str(folder)}
    asked = claude("UserPromptSubmit", prompt="When does the ledger service's nightly backup run?", cwd=str(folder))
    began = store.hook("session-start", first)
    assert answered_by(began) == server.pid and "02:30 UTC" in began.stdout, began.stderr
    again = store.hook("prompt-submit", {**asked, "session_id": first["session_id"]})
    assert answered_by(again) == server.pid, again.stderr
    assert "02:30 UTC" not in again.stdout, again.stdout
    fresh = store.hook("prompt-submit", asked)   # a session of its own
    assert "02:30 UTC" in fresh.stdout, fresh.stderr


async def test_claude_codes_launch_directory_names_the_project_through_the_server(
        store: Store, server: subprocess.Popen[bytes], module_service: MemoryService, tmp_path: Path) -> None:
    """A non-git launch folder is the project (as Claude Code's MCP server names it), also when the
    session's cwd has moved: the hook's CLAUDE_PROJECT_DIR counts, not the server's environment."""
    launch, moved = tmp_path / "notes-folder", tmp_path / "scratch"
    launch.mkdir()
    moved.mkdir()
    p = Principal(user_id="alice", agent_id="claude-code", project_id="notes-folder", actor="test:alice")
    await module_service.write(p, "The staging cluster is named heron and lives in eu-west-3.", kind="fact",
                               scope="project")
    env = {"CLAUDE_PROJECT_DIR": str(launch)}
    out = store.hook("prompt-submit", claude("UserPromptSubmit", prompt="Where does the staging cluster heron live?",
                                             cwd=str(moved)), env=env)
    assert answered_by(out) == server.pid and "eu-west-3" in out.stdout, out.stderr
    transcript = own_transcript(tmp_path)
    out = store.hook("stop", claude("Stop", transcript_path=str(transcript), cwd=str(moved)), env=env)
    assert answered_by(out) == server.pid, out.stderr
    with anyio.fail_after(60):
        while not (await module_service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories:  # noqa: ASYNC110
            await anyio.sleep(0.2)   # captured after the answer: poll the database


def thin(store: Store, event: str, payload: Any, env: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The hook entry point in a process of its own, with the non-stdlib modules it loaded."""
    code = ("import sys, json\nbefore = set(sys.modules)\nfrom mcp_memory import hookline\n"
            "rc = hookline.main(sys.argv[1:])\n"
            "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names)\n"
            "print(json.dumps(new), file=sys.stderr)\nsys.exit(rc)\n")
    out = subprocess.run([sys.executable, "-c", code, "hook", event, "--database-url", store.url, "--user", "alice"],
                         input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                         env={**store.env, **(env or {})})
    assert out.returncode == 0, out.stderr
    *said, modules = out.stderr.splitlines()
    return subprocess.CompletedProcess(out.args, 0, out.stdout, "\n".join(said)), json.loads(modules)


def own_transcript(folder: Path) -> Path:
    """The fixture session under a session id of its own (its cursor is not an earlier test's)."""
    path = folder / "session.jsonl"
    path.write_text((FIXTURES / "claude_code_session.jsonl").read_text()
                    .replace("3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a", str(uuid.uuid4())))
    return path


LIGHT = ["mcp_memory", "mcp_memory.hookline", "mcp_memory.hookprotocol", "mcp_memory.hooksocket"]
HANDOFF = ["mcp_memory", "mcp_memory.capture", "mcp_memory.capture.detach", "mcp_memory.hookline",
           "mcp_memory.hookprotocol", "mcp_memory.hooksocket"]


@pytest.mark.parametrize("asked", ["yes", "/compact", "  continue  ", "", None])
def test_trivial_prompts_are_skipped_by_the_entry_point_itself(own_store: Store, asked: str | None) -> None:
    """No server: a slash command or a one-word prompt costs no import of the full path."""
    payload = claude("UserPromptSubmit", prompt=asked) if asked is not None else claude("UserPromptSubmit")
    out, modules = thin(own_store, "prompt-submit", payload)
    assert out.stdout == "" and out.stderr == "" and modules == LIGHT


def test_the_entry_point_skips_as_the_full_path_does() -> None:
    """One test of a prompt worth recalling (hookprotocol), read by the entry point, the full hook
    path and recall alike."""
    from mcp_memory.capture import hooks, recall

    assert hookline.worth_recalling is hookprotocol.worth_recalling is hooks.worth_recalling
    assert recall.MIN_PROMPT_WORDS is hookprotocol.MIN_PROMPT_WORDS
    for text in ("yes", "/compact now please", "  continue  ", "", "two words", "which db do we use", "\u3042 \u3044"):
        assert hookline.worth_recalling(text) == recall.worth_recalling(text), text


def test_the_hook_protocol_is_written_once() -> None:
    """The events, the budgets' settings and their defaults: hookprotocol's, as config/capture.py,
    capture/hooks.py, capture/channel.py and the command line read them."""
    from mcp_memory.capture import channel, hooks
    from mcp_memory.capture.cli import register  # noqa: F401 (its `hook` choices are EVENTS)
    from mcp_memory.config import Settings

    assert hooksocket.EVENTS is hookprotocol.EVENTS and hooksocket.CAPTURE_EVENTS is hookprotocol.CAPTURE_EVENTS
    assert hooks.CLAUDE_EVENTS is hookprotocol.CLAUDE_EVENTS and hooks.MAX_STDIN is hookprotocol.MAX_STDIN
    for event, (field, default) in hookprotocol.BUDGETS.items():
        assert Settings.model_fields[field].default == default
        assert hooks.budget(event, Settings(**{field: 7.5})) == 7.5
        assert hookprotocol.budget_from_env(event, {hookprotocol.env_name(field): "7.5"}) == 7.5
        assert hookprotocol.budget_from_env(event, {hookprotocol.env_name(field): "soon"}) == default
        assert Settings.model_config["env_prefix"] + field.upper() == hookprotocol.env_name(field)
    for event in hookprotocol.EVENTS:
        assert channel.Request(v=1, event=event, harness="claude-code").event == event
    with pytest.raises(ValueError, match="not a hook event"):
        channel.Request(v=1, event="post-prompt", harness="claude-code")


async def test_without_a_server_capture_is_handed_to_the_worker_by_the_entry_point(
        own_store: Store, module_service: MemoryService, tmp_path: Path) -> None:
    """No server: the stdlib-only entry point starts the detached worker itself (no full command
    line, no pydantic), and the worker captures."""
    from .test_hooks import settle

    repo = tmp_path / "handed"
    (repo / ".git").mkdir(parents=True)
    transcript = own_transcript(tmp_path)
    out, modules = thin(own_store, "stop", claude("Stop", transcript_path=str(transcript), cwd=str(repo)))
    assert out.stdout == "" and modules == HANDOFF, out.stderr
    await settle(Path(own_store.env["MCP_MEMORY_DATA_DIR"]))
    p = Principal(user_id="alice", agent_id="claude-code", project_id="handed", actor="test:alice")
    assert (await module_service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories


@pytest.mark.parametrize("case", ["missing", "no-path", "capture-off", "messages-no-session"])
def test_the_entry_points_hand_off_says_what_the_full_path_says(own_store: Store, tmp_path: Path, case: str) -> None:
    """What the full path checked before handing off, the entry point checks the same way, with the
    same one stderr line (or none), and starts no worker."""
    env = {"MCP_MEMORY_CAPTURE": "off"} if case == "capture-off" else {}
    payload: dict[str, Any] = {
        "missing": claude("Stop", transcript_path=str(tmp_path / "gone.jsonl")),
        "no-path": {"session_id": "s-1", "cwd": "/tmp", "hook_event_name": "Stop"},
        "capture-off": claude("Stop", transcript_path=str(FIXTURES / "claude_code_session.jsonl")),
        "messages-no-session": {"messages": [{"role": "user", "content": "hi"}], "workspaceDir": "/tmp"},
    }[case]
    out, modules = thin(own_store, "stop", payload, env)
    full = own_store.full("stop", payload, env=env)
    assert modules == LIGHT and out.stdout == full.stdout == ""
    assert out.stderr.strip() == full.stderr.strip() and len(full.stderr.splitlines()) <= 1, (out.stderr, full.stderr)
    assert (out.stderr == "") == (case == "capture-off")
    assert not (Path(own_store.env["MCP_MEMORY_DATA_DIR"]) / "capture.log").exists()   # no worker started
