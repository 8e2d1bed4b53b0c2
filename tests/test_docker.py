"""The container's entrypoint and compose file, without a Docker engine: docker/entrypoint.sh runs
here as a subprocess against the real (embedded) PostgreSQL, exactly as the image runs it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import yaml

from mcp_memory.config import Settings

from .http_server import free_port, http_client
from .test_server import call

ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
COMPOSE = ROOT / "docker-compose.yml"
MARKER = ".bootstrap-key-created"
KEY = re.compile(r"\bmcpm_[A-Za-z0-9_.\-]+")
BANNER = "MCP-MEMORY BOOTSTRAP API KEY"


def entrypoint_env(db_url: str, data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """The environment the image gives the entrypoint, with this venv's `mcp-memory` on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_MEMORY_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
               MCP_MEMORY_DATABASE_URL=db_url, MCP_MEMORY_DATA_DIR=str(data_dir), MCP_MEMORY_HOST="127.0.0.1",
               MCP_MEMORY_PORT=str(port), MCP_MEMORY_LOG_LEVEL="WARNING", **extra)
    return env


class Running:
    """The entrypoint process, with its stdout and stderr collected as they come."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.port = port
        # Its own process group, so that cleanup reaches anything it left behind.
        self.proc = subprocess.Popen([str(ENTRYPOINT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [threading.Thread(target=self._drain, args=(stream, sink), daemon=True)
                         for stream, sink in ((self.proc.stdout, self._out), (self.proc.stderr, self._err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    def wait_healthy(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self.finish()
                raise AssertionError(f"entrypoint exited ({self.proc.returncode}):\n{self.stdout}\n{self.stderr}")
            try:
                if httpx2.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return self.base
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no healthy server within {timeout}s:\n{self.stdout}\n{self.stderr}")
            time.sleep(0.1)

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM, as `docker stop` sends it; the server must exit by itself, promptly."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the server did not exit within 10 s of SIGTERM") from None
        self.finish()
        return code

    def cmdline(self) -> list[str]:
        return Path(f"/proc/{self.proc.pid}/cmdline").read_text().rstrip("\0").split("\0")

    def finish(self) -> None:
        for reader in self._readers:
            reader.join(timeout=5)


@contextmanager
def entrypoint(env: dict[str, str], port: int) -> Iterator[Running]:
    running = Running(env, port)
    try:
        yield running
    finally:
        try:
            os.killpg(running.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        running.proc.wait()
        running.finish()


def compose_healthcheck(port: int) -> subprocess.CompletedProcess[str]:
    """The memory service's healthcheck from docker-compose.yml, run here against `port`."""
    test = yaml.safe_load(COMPOSE.read_text())["services"]["memory"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"]
    return subprocess.run([sys.executable, *(a.replace(":8765/", f":{port}/") for a in test[2:])],
                          capture_output=True, text=True, timeout=15)


def data_dir_files(data_dir: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in data_dir.iterdir()}


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


async def test_first_start_prints_one_key_and_a_restart_keeps_it(db_url: str, tmp_path: Path) -> None:
    port = free_port()
    with entrypoint(entrypoint_env(db_url, tmp_path, port), port) as first:
        base = first.wait_healthy()
        # `exec`: the entrypoint's own process is now the server, so signals reach it directly.
        cmdline = first.cmdline()
        assert "serve" in cmdline and not cmdline[0].endswith("sh"), cmdline
        keys = KEY.findall(first.stdout)
        assert len(keys) == 1, first.stdout
        key = keys[0]
        assert BANNER in first.stdout and "Shown ONCE" in first.stdout
        assert key not in first.stderr  # the key is on stdout, in the banner only
        async with http_client(base, key) as client:
            written = await call(client, "memory_write", {"content": "Deploys ship as the mcp-memory docker image"})
            assert written["status"] == "created"
            hits = (await call(client, "memory_search", {"query": "docker image deploys"}))["hits"]
            assert [h["id"] for h in hits] == [written["memory"]["id"]]
        first.stop()
        assert not listening(port), "the server outlived SIGTERM"

    assert data_dir_files(tmp_path) == {MARKER: data_dir_files(tmp_path)[MARKER]}  # no leftover temporary file
    assert not KEY.search(data_dir_files(tmp_path)[MARKER])  # the marker never holds the key

    port = free_port()
    with entrypoint(entrypoint_env(db_url, tmp_path, port), port) as second:
        base = second.wait_healthy()
        assert not KEY.search(second.stdout) and BANNER not in second.stdout, second.stdout
        assert "created on the first start" in second.stderr
        async with http_client(base, key) as client:
            hits = (await call(client, "memory_search", {"query": "docker image deploys"}))["hits"]
            assert [h["id"] for h in hits] == [written["memory"]["id"]]
        second.stop()


async def test_bootstrap_key_can_be_turned_off(db_url: str, tmp_path: Path) -> None:
    port = free_port()
    with entrypoint(entrypoint_env(db_url, tmp_path, port, MCP_MEMORY_BOOTSTRAP_KEY="0"), port) as running:
        base = running.wait_healthy()
        assert httpx2.post(f"{base}/mcp", json={}, timeout=5).status_code == 401  # still authenticated
        assert compose_healthcheck(port).returncode == 0
        running.stop()
    assert compose_healthcheck(port).returncode != 0
    assert not KEY.search(running.stdout) and BANNER not in running.stdout, running.stdout
    assert "not creating a bootstrap key" in running.stderr
    assert data_dir_files(tmp_path) == {}


def test_unreachable_database_fails_within_the_wait(tmp_path: Path) -> None:
    url = f"postgresql://nobody:s3cret-pw@127.0.0.1:{free_port()}/nowhere"
    env = entrypoint_env(url, tmp_path, free_port(), MCP_MEMORY_DB_WAIT_S="2")
    started = time.monotonic()
    done = subprocess.run([str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert 1 <= elapsed < 15  # whole seconds: the wait ends 1 to 2 s after the start
    assert "was not ready within 2s" in done.stderr
    assert "Connect call failed" in done.stderr  # the cause, from the last attempt
    assert "s3cret-pw" not in done.stderr
    assert done.stdout == "" and data_dir_files(tmp_path) == {}


def test_bad_wait_setting_is_refused(tmp_path: Path) -> None:
    env = entrypoint_env("postgresql://x@127.0.0.1:1/x", tmp_path, free_port(), MCP_MEMORY_DB_WAIT_S="soon")
    done = subprocess.run([str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and "MCP_MEMORY_DB_WAIT_S must be a whole number" in done.stderr


def entrypoint_documented_variables() -> set[str]:
    """The MCP_MEMORY_* variables the entrypoint's header comment documents."""
    header = []
    for line in ENTRYPOINT.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line)
    return set(re.findall(r"\bMCP_MEMORY_[A-Z0-9_]+", "\n".join(header)))


def test_compose_file_matches_the_settings_and_the_entrypoint() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    db, memory = services["db"], services["memory"]

    assert db["image"].startswith("pgvector/pgvector:")
    assert "pg_isready" in str(db["healthcheck"]["test"])
    assert memory["depends_on"]["db"]["condition"] == "service_healthy"

    env = memory["environment"]
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    settings = {f"MCP_MEMORY_{name.upper()}" for name in Settings.model_fields}
    documented = entrypoint_documented_variables()
    assert {"MCP_MEMORY_DB_WAIT_S", "MCP_MEMORY_BOOTSTRAP_KEY", "MCP_MEMORY_BOOTSTRAP_USER"} <= documented
    passed = {name for name in env if name.startswith("MCP_MEMORY_")}
    assert passed >= {"MCP_MEMORY_DATABASE_URL", "MCP_MEMORY_PUBLIC_URL", "MCP_MEMORY_DATA_DIR"}
    unknown = passed - settings - documented
    assert not unknown, f"not read by the server or the entrypoint: {sorted(unknown)}"
    assert re.fullmatch(r"postgresql://[^@]+@db:5432/\w+", env["MCP_MEMORY_DATABASE_URL"])

    # The data volume is where the entrypoint keeps its marker.
    data_dir = env["MCP_MEMORY_DATA_DIR"]
    assert "${MCP_MEMORY_DATA_DIR:-/data}" in ENTRYPOINT.read_text() and data_dir == "/data"
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in memory["volumes"]]
    assert any(m.split(":")[1] == data_dir for m in mounts), mounts
    named = {m.split(":")[0] for m in mounts} | {v.split(":")[0] for v in db["volumes"]}
    assert named <= set(compose["volumes"]), "every mount is a named volume"

    # The healthcheck and the published port are the ones the entrypoint serves by default.
    port = re.search(r'MCP_MEMORY_PORT:-(\d+)', ENTRYPOINT.read_text()).group(1)
    assert f"{port}:{port}" in [str(p) for p in memory["ports"]]
    check = memory["healthcheck"]["test"]
    assert check[0] == "CMD" and check[1] == "python", "the slim image has python, not curl"
    assert f"http://127.0.0.1:{port}/health" in " ".join(check)
    assert f"EXPOSE {port}" in (ROOT / "Dockerfile").read_text()
