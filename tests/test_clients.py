"""The documented client setups, run the way users run them: the MCP Inspector CLI (a real
external client) and the SDK against the configs in clients/, and the Python remote example
against a live server. The config files are read here, so what the README shows is what ran."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import platformdirs
import pytest
from mcp import Client, StdioServerParameters

from mcp_memory.db import Database

from .http_server import http_client, http_server
from .test_http import make_key

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
BIN = Path(sys.executable).parent
INSPECTOR_VERSION = "2.12.0"


def config(path: str) -> dict[str, Any]:
    return json.loads((CLIENTS / path).read_text())


def expand(value: str, env: dict[str, str]) -> str:
    """${VAR} (Claude Code, OpenClaw) and ${env:VAR} (Cursor), as the hosts expand them."""
    return re.sub(r"\$\{(?:env:)?(\w+)\}", lambda m: env[m.group(1)], value)


def on_port(url: str, base: str) -> str:
    """The documented URL, pointed at the test server's port."""
    return re.sub(r"^http://127\.0\.0\.1:\d+", base, url)


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The MCP Inspector CLI, installed once into the user's cache directory (npm registry only)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("Node.js/npm is not installed: the Inspector CLI tests need it")
    root = Path(platformdirs.user_cache_dir("mcp-memory")) / f"inspector-{INSPECTOR_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    binary = root / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        try:
            subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(root),
                            f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"], check=True, timeout=300,
                           capture_output=True)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            # No registry (offline machine): these tests need the real Inspector, not a stand-in.
            detail = getattr(exc, "stderr", b"") or b""
            pytest.skip(f"the MCP Inspector could not be installed from the npm registry: "
                        f"{detail.decode(errors='replace').strip()[-300:] or exc}")
    return binary


async def inspect(inspector: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    home = tmp_path / "inspector-home"  # it keeps a catalog and secrets under ~/.mcp-inspector
    home.mkdir(exist_ok=True)
    with anyio.fail_after(120):
        return await anyio.run_process(
            [str(inspector), "--cli", "-q", "--format", "json", *args], cwd=tmp_path, check=False,
            env={**os.environ, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})


async def run_inspector(inspector: Path, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = await inspect(inspector, tmp_path, *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout[-2000:], out.stderr[-2000:])
    return json.loads(out.stdout)["result"]


def structured(result: dict[str, Any]) -> dict[str, Any]:
    assert not result.get("isError"), result
    return result["structuredContent"]


EXPECTED_TOOLS = {"memory_search", "memory_get", "memory_list", "memory_write", "memory_write_many", "memory_update",
                  "memory_forget", "memory_restore", "memory_undo_decision", "memory_accept_suggestion",
                  "memory_history"}
EXPECTED_TEMPLATES = {"memory://memories{?cursor}", "memory://memories/{id}", "memory://tags/{tag}{?cursor}",
                      "memory://kinds/{kind}{?cursor}", "memory://core{?model}", "memory://stats{?top}",
                      "memory://jobs{?limit}", "memory://entities{?limit}", "memory://entities/{ref}"}


async def test_inspector_over_stdio_from_the_claude_code_config(inspector: Path, db_url: str, tmp_path: Path) -> None:
    target = ["--config", str(CLIENTS / "claude-code" / ".mcp.json"), "--server", "memory",
              "-e", f"MCP_MEMORY_DATABASE_URL={db_url}", "-e", "MCP_MEMORY_USER=inspector-user",
              "-e", "MCP_MEMORY_LOG_LEVEL=WARNING"]
    tools = (await run_inspector(inspector, tmp_path, *target, "--method", "tools/list"))["tools"]
    assert {t["name"] for t in tools} == EXPECTED_TOOLS
    assert all(t.get("outputSchema") for t in tools)
    templates = await run_inspector(inspector, tmp_path, *target, "--method", "resources/templates/list")
    assert {t["uriTemplate"] for t in templates["resourceTemplates"]} == EXPECTED_TEMPLATES
    prompts = (await run_inspector(inspector, tmp_path, *target, "--method", "prompts/list"))["prompts"]
    assert {p["name"] for p in prompts} == {"core_memories", "recall"}

    written = structured(await run_inspector(
        inspector, tmp_path, *target, "--method", "tools/call", "--tool-name", "memory_write",
        "--tool-args-json", json.dumps({"content": "The user's cat is called Miso", "pinned": True,
                                        "priority": 10, "kind": "fact"})))
    assert written["status"] == "created"
    # A new server process each call: what the last one wrote is in the database.
    hits = structured(await run_inspector(
        inspector, tmp_path, *target, "--method", "tools/call", "--tool-name", "memory_search",
        "--tool-args-json", json.dumps({"query": "what is the cat's name"})))["hits"]
    assert hits[0]["id"] == written["memory"]["id"]
    listed = (await run_inspector(inspector, tmp_path, *target, "--method", "resources/list"))["resources"]
    assert f"memory://memories/{written['memory']['id']}" in {r["uri"] for r in listed}
    core = await run_inspector(inspector, tmp_path, *target, "--method", "resources/read", "--uri", "memory://core")
    assert "Miso" in core["contents"][0]["text"]
    recall = await run_inspector(inspector, tmp_path, *target, "--method", "prompts/get", "--prompt-name", "recall",
                           "--prompt-args", "query=cat name")
    assert "Miso" in recall["messages"][0]["content"]["text"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_inspector_over_http_with_a_key_from_the_openclaw_config(
        inspector: Path, database: Database, db_url: str, tmp_path: Path, era: str) -> None:
    entry = config("openclaw/openclaw.json")["mcp"]["servers"]["memory-remote"]
    assert entry["transport"] == "streamable-http"
    key = await make_key(database, "ana")
    headers = {name: expand(value, {"MCP_MEMORY_KEY": key}) for name, value in entry["headers"].items()}
    with http_server(db_url) as base:
        url = on_port(entry["url"], base)
        target = ["--protocol-era", era, url, *[f"--header={n}: {v}" for n, v in headers.items()]]
        tools = (await run_inspector(inspector, tmp_path, *target, "--method", "tools/list"))["tools"]
        assert {t["name"] for t in tools} == EXPECTED_TOOLS
        templates = await run_inspector(inspector, tmp_path, *target, "--method", "resources/templates/list")
        assert {t["uriTemplate"] for t in templates["resourceTemplates"]} == EXPECTED_TEMPLATES
        written = structured(await run_inspector(
            inspector, tmp_path, *target, "--method", "tools/call", "--tool-name", "memory_write",
            "--tool-args-json", json.dumps({"content": f"Ana prefers window seats ({era})", "scope": "agent"})))
        assert written["memory"]["scope"]["agent_id"] == "openclaw"   # the header the config sets
        hits = structured(await run_inspector(
            inspector, tmp_path, *target, "--method", "tools/call", "--tool-name", "memory_search",
            "--tool-args-json", json.dumps({"query": "seat preference"})))["hits"]
        assert hits[0]["id"] == written["memory"]["id"]

        # Without the key the server answers 401 with its protected-resource metadata, and the
        # Inspector (non-interactive) reports that it would need to sign in.
        unauthenticated = await inspect(inspector, tmp_path, url, "--stored-auth-only", "--method", "tools/list")
        assert unauthenticated.returncode != 0 and b"auth_required" in unauthenticated.stderr


async def test_sdk_client_from_the_openclaw_stdio_and_claude_code_http_configs(
        database: Database, db_url: str, tmp_path: Path) -> None:
    stdio = config("openclaw/openclaw.json")["mcp"]["servers"]["memory"]
    params = StdioServerParameters(
        command=shutil.which(stdio["command"], path=str(BIN)) or stdio["command"], args=stdio["args"],
        env={**stdio["env"], "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "ana", "MCP_MEMORY_PROJECT": "none"})
    async with Client(params) as client:
        result = await client.call_tool("memory_write", {"content": "Ana's favourite editor is Helix"})
        assert not result.is_error, result.content[0].text
        assert result.structured_content["memory"]["scope"]["level"] == "user"   # shared by all her agents
        result = await client.call_tool("memory_write", {"content": "OpenClaw runs nightly", "scope": "agent"})
        assert result.structured_content["memory"]["scope"]["agent_id"] == "openclaw"   # the config's env

    remote = config("claude-code/.mcp.json")["mcpServers"]["memory-remote"]
    assert remote["type"] == "http"
    key = await make_key(database, "ana")
    auth = expand(remote["headers"]["Authorization"], {"MCP_MEMORY_KEY": key})
    with http_server(db_url) as base:
        assert on_port(remote["url"], base) == f"{base}/mcp"
        async with http_client(base, auth.removeprefix("Bearer ")) as client:
            hits = (await client.call_tool("memory_search", {"query": "which editor"})).structured_content["hits"]
    assert "Helix" in hits[0]["snippet"]   # same user, another transport, another agent: user-level memory


def test_every_config_starts_mcp_memory() -> None:
    """The snippets for each host name the same command and endpoint, in each host's own shape."""
    stdio = [config("claude-code/.mcp.json")["mcpServers"]["memory"],
             config("openclaw/openclaw.json")["mcp"]["servers"]["memory"],
             config("cursor/mcp.json")["mcpServers"]["memory"]]
    assert all(Path(e["command"]).name == "mcp-memory" and e["args"] == ["serve"] for e in stdio)
    desktop = config("claude-desktop/claude_desktop_config.json")["mcpServers"]["memory"]
    assert desktop["command"].endswith("/mcp-memory") and desktop["args"] == ["serve"]
    remote = [config("claude-code/.mcp.json")["mcpServers"]["memory-remote"],
              config("openclaw/openclaw.json")["mcp"]["servers"]["memory-remote"],
              config("cursor/mcp.json")["mcpServers"]["memory-remote"]]
    assert all(e["url"].endswith("/mcp") and "MCP_MEMORY_KEY" in e["headers"]["Authorization"] for e in remote)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_python_remote_example(database: Database, db_url: str, transport: str) -> None:
    key = await make_key(database, "remote-user")
    with http_server(db_url) as base:
        with anyio.fail_after(120):
            out = await anyio.run_process([sys.executable, str(CLIENTS / "python" / "remote_example.py"), "--url",
                                           base, "--transport", transport], check=False,
                                          env={**os.environ, "MCP_MEMORY_KEY": key})
        assert out.returncode == 0, out.stderr[-3000:]
        lines = dict(line.split(None, 1) for line in out.stdout.decode().splitlines())
        assert lines["search"].startswith("'The example deploy window is Tuesday")
        assert lines["preview"].startswith("1 candidate(s)")
        forgotten = re.findall(r"[0-9a-f-]{36}", lines["forgot"])
        assert forgotten == [lines["wrote"].strip()]
        async with http_client(base, key, **{"X-MCP-Memory-Agent": "remote-example"}) as client:
            listed = (await client.call_tool("memory_list", {})).structured_content["memories"]
            history = (await client.call_tool("memory_history", {"id": forgotten[0]})).structured_content
    assert listed == []   # forgotten, softly: its history shows the forget with the example's reason
    assert history["entries"][-1]["event"] == "DELETE"
    assert history["entries"][-1]["reason"] == "remote example cleanup"


def claude_cli() -> str:
    found = os.environ.get("MCP_MEMORY_TEST_CLAUDE") or shutil.which("claude")
    if not found:
        pytest.skip("Claude Code is not installed (npm i -g @anthropic-ai/claude-code, or set MCP_MEMORY_TEST_CLAUDE)")
    return found


async def test_claude_code_add_lines_connect(database: Database, db_url: str, tmp_path: Path) -> None:
    """The README's `claude mcp add` lines, then `claude mcp list`, which health-checks each server."""
    claude = claude_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    key = await make_key(database, "cc-user")

    async def claude_run(*args: str) -> str:
        with anyio.fail_after(120):
            out = await anyio.run_process([claude, *args], cwd=project, env=env, check=False)
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        return out.stdout.decode()

    with http_server(db_url) as base:
        await claude_run("mcp", "add", "memory", "-e", f"MCP_MEMORY_DATABASE_URL={db_url}", "--",
                         "mcp-memory", "serve")
        await claude_run("mcp", "add", "--transport", "http", "memory-remote", f"{base}/mcp",
                         "--header", f"Authorization: Bearer {key}")
        await claude_run("mcp", "add", "--transport", "http", "memory-nokey", f"{base}/mcp")
        listed = await claude_run("mcp", "list")
    status = {line.split(":", 1)[0]: line for line in listed.splitlines() if ":" in line}
    assert "Connected" in status["memory"] and "Connected" in status["memory-remote"], listed
    assert "Connected" not in status["memory-nokey"], listed
