"""`mcp-memory serve` as a real subprocess on the embedded database, driven over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters

from .test_server import call, call_error

SERVE = str(Path(sys.executable).with_name("mcp-memory"))


def server_params(data_dir: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=SERVE, args=["serve"],
        env={"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER": "alice", "MCP_MEMORY_PROJECT": "demo",
             **env},
    )


def postmaster_running(data_dir: Path) -> bool:
    pid_file = data_dir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return False
    return psutil.pid_exists(int(pid_file.read_text().split()[0]))


async def wait_until(predicate, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.1)
    return predicate()


async def test_write_restart_search(tmp_path: Path) -> None:
    async with Client(server_params(tmp_path), mode="legacy") as client:
        written = await call(client, "memory_write", {"content": "The office wifi password rotates on Mondays"})
        assert written["memory"]["scope"] == {"level": "project", "agent_id": None, "project_id": "demo"}
    # The last server out stops the embedded postmaster.
    assert await wait_until(lambda: not postmaster_running(tmp_path))

    async with Client(server_params(tmp_path), mode="legacy") as client:
        hits = (await call(client, "memory_search", {"query": "when does the wifi password change"}))["hits"]
        assert [h["id"] for h in hits] == [written["memory"]["id"]]


async def test_agent_defaults_to_client_name(tmp_path: Path) -> None:
    async with Client(server_params(tmp_path), mode="legacy") as client:
        mine = await call(client, "memory_write", {"content": "agent-only note", "scope": "agent"})
        # The SDK client introduces itself as "mcp"; that name becomes the agent namespace.
        assert mine["memory"]["scope"]["agent_id"] == "mcp"


async def test_two_servers_share_one_embedded_database(tmp_path: Path) -> None:
    async with Client(server_params(tmp_path), mode="legacy") as first, \
            Client(server_params(tmp_path), mode="legacy") as second:
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(call, first, "memory_write", {"content": f"from first {i}"})
                tg.start_soon(call, second, "memory_write", {"content": f"from second {i}"})
        listed = await call(second, "memory_list", {"limit": 100})
        assert len(listed["memories"]) == 20
        hits = (await call(first, "memory_search", {"query": "from second 7"}))["hits"]
        assert hits[0]["snippet"] == "from second 7"
    assert await wait_until(lambda: not postmaster_running(tmp_path))


def _rpc(proc: subprocess.Popen, message: dict) -> dict:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        assert line, f"server closed stdout; stderr: {proc.stderr.read()}"
        reply = json.loads(line)  # every stdout line must be a JSON-RPC message
        if reply.get("id") == message["id"]:
            return reply


def test_initialize_is_answered_while_the_database_never_answers(tmp_path: Path, silent_db: str) -> None:
    """The handshake never waits for the database (or the model): with a database that accepts and
    never says a word, `initialize` is answered all the same. (It was a 5 s bound on a first start,
    which a loaded machine crossed: 5.3 and 9.1 s in full suite runs.)"""
    env = {**os.environ, **server_params(tmp_path).env, "MCP_MEMORY_DATABASE_URL": silent_db}
    proc = subprocess.Popen([SERVE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    timer = threading.Timer(60, proc.kill)  # a handshake that waited would hang the test otherwise
    timer.start()
    try:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}}})
        assert init["result"]["serverInfo"]["name"] == "mcp-memory"
    finally:
        timer.cancel()
        proc.kill()
        proc.wait(timeout=20)


def test_stdout_carries_only_protocol(tmp_path: Path) -> None:
    env = {**os.environ, **server_params(tmp_path).env, "MCP_MEMORY_LOG_LEVEL": "DEBUG"}
    proc = subprocess.Popen([SERVE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    logs: list[str] = []
    reader = threading.Thread(target=lambda: logs.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}})
        assert init["result"]["serverInfo"]["name"] == "mcp-memory"
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        reply = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_write", "arguments": {"content": "raw protocol write", "scope": "agent"}}})
        assert reply["result"]["isError"] is False
        assert reply["result"]["structuredContent"]["memory"]["scope"]["agent_id"] == "raw-test"
        deadline = time.monotonic() + 20  # the start-up retention sweep runs in the background
        while not any("retention:" in line for line in logs) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
    reader.join(timeout=5)
    assert proc.returncode == 0
    assert proc.stdout.read() == ""
    text = "".join(logs)
    assert "database ready" in text  # logs went to stderr
    assert "retention: 0 stale forgotten, 0 tombstones purged" in text  # the sweep runs at start


def test_sigterm_stops_the_server_and_its_database(tmp_path: Path) -> None:
    """Harnesses stop servers with SIGTERM while stdin is still open."""
    env = {**os.environ, **server_params(tmp_path).env}
    proc = subprocess.Popen([SERVE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "memory_list", "arguments": {}}})
        assert postmaster_running(tmp_path)
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while postmaster_running(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not postmaster_running(tmp_path)


async def test_a_harness_can_be_made_read_only(tmp_path: Path) -> None:
    async with Client(server_params(tmp_path, MCP_MEMORY_LOCAL_PERMISSIONS="read,write"), mode="legacy") as client:
        written = await call(client, "memory_write", {"content": "written before going read-only"})
        message = await call_error(client, "memory_forget", {"ids": [written["memory"]["id"]]})
        assert "lacks the 'forget' permission" in message
    async with Client(server_params(tmp_path, MCP_MEMORY_LOCAL_PERMISSIONS="read"), mode="legacy") as client:
        assert (await call(client, "memory_search", {"query": "read-only"}))["hits"]
        message = await call_error(client, "memory_write", {"content": "not allowed"})
        assert "lacks the 'write' permission" in message
