"""`mcp-memory install|uninstall` through the real CLI: the change shown and backed up, unparseable
files refused, uninstall byte-identical; Claude Code itself accepting the result (`claude mcp
list` connects) when it is installed; the OpenClaw plugin run by Node against the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from mcp_memory.capture import openclaw_plugin
from mcp_memory.db import Database

from .test_clients import BIN, CLIENTS, claude_cli

CLI = str(Path(sys.executable).with_name("mcp-memory"))

CLAUDE_JSON = '{"numStartups": 7, "mcpServers": {"other": {"command": "other-server"}},\n "projects": {}}'
SETTINGS = textwrap.dedent("""\
    {
        "model": "opus",
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
        },
        "permissions": {"allow": ["Bash(ls:*)"]}
    }
""")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_claude_code_user_scope_round_trip_is_byte_identical(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(CLAUDE_JSON)
    (home / ".claude" / "settings.json").write_text(SETTINGS)
    before = snapshot(home)

    out = cli("install", "claude-code", "--home", str(home), "--database-url", "postgresql://db.example/mem")
    assert out.returncode == 0, out.stderr
    assert "+++ " in out.stdout and '"memory"' in out.stdout    # the change is shown
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert server["other"] == {"command": "other-server"}
    assert server["memory"]["args"] == ["serve", "--database-url", "postgresql://db.example/mem"]
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["permissions"] == {"allow": ["Bash(ls:*)"]}
    hooks = settings["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    assert hooks["Stop"][0]["hooks"][0]["command"] == "notify-send done"   # the user's own hook stays
    prompt = hooks["UserPromptSubmit"][0]["hooks"][0]
    assert prompt["type"] == "command" and prompt["command"].endswith(
        "mcp-memory hook prompt-submit --database-url postgresql://db.example/mem")
    assert hooks["Stop"][1]["hooks"][0]["async"] is True               # capture never holds up the next prompt
    assert "async" not in hooks["SessionEnd"][0]["hooks"][0]
    assert (home / ".claude" / "settings.json.mcp-memory.bak").read_text() == SETTINGS   # backed up first

    again = cli("install", "claude-code", "--home", str(home))
    assert again.returncode == 0 and "already installed" in again.stdout

    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert snapshot(home) == before                                    # byte for byte, no leftovers


def test_install_into_nothing_and_uninstall_leaves_nothing(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    assert cli("install", "claude-code", "--scope", "project", "--project-dir", str(project)).returncode == 0
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memory"]["command"].endswith("mcp-memory")
    assert "SessionStart" in json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert cli("uninstall", "claude-code", "--scope", "project", "--project-dir", str(project)).returncode == 0
    assert list(project.iterdir()) == []                               # the .claude folder it made is gone too


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(SETTINGS)
    before = snapshot(home)
    out = cli("install", "claude-code", "--home", str(home), "--dry-run")
    assert out.returncode == 0 and "UserPromptSubmit" in out.stdout and "dry run" in out.stdout
    assert snapshot(home) == before


@pytest.mark.parametrize("text", ['{\n  // JSON5 comment\n  "model": "opus"\n}', "[1, 2]", '{"hooks": [1]}'])
def test_refuses_files_it_cannot_parse_or_understand(tmp_path: Path, text: str) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(text)
    before = snapshot(home)
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 1 and "not changed" in out.stderr and "settings.json" in out.stderr
    assert snapshot(home) == before                                    # neither file touched, no backups


def test_refuses_a_foreign_memory_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text('{"mcpServers": {"memory": {"command": "npx", "args": ["other-memory"]}}}')
    before = snapshot(home)
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 1 and "not mcp-memory" in out.stderr
    assert snapshot(home) == before


def test_uninstall_after_the_harness_changed_the_file_takes_out_only_ours(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(CLAUDE_JSON)
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    data = json.loads((home / ".claude.json").read_text())
    data["numStartups"] = 8                                            # Claude Code rewrote it meanwhile
    data["mcpServers"]["added-later"] = {"command": "x"}
    (home / ".claude.json").write_text(json.dumps(data))
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0 and "only mcp-memory's entries" in out.stdout
    after = json.loads((home / ".claude.json").read_text())
    assert after["numStartups"] == 8 and set(after["mcpServers"]) == {"other", "added-later"}
    assert not (home / ".claude" / "settings.json").exists()          # untouched since: removed as it was absent


def test_openclaw_round_trip_and_plugin_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    config.write_text('{"agents": {"defaults": {"model": "anthropic/claude-sonnet-4-5"}}}\n')
    before = snapshot(home)
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    data = json.loads(config.read_text())
    assert data["mcp"]["servers"]["memory"]["env"] == {"MCP_MEMORY_AGENT": "openclaw"}
    folder = home / ".openclaw" / "extensions" / "mcp-memory"
    assert data["plugins"]["load"]["paths"] == [str(folder)]
    entry = data["plugins"]["entries"]["mcp-memory"]
    assert entry["hooks"] == {"allowConversationAccess": True, "allowPromptInjection": True}
    assert sorted(p.name for p in folder.iterdir()) == ["index.js", "openclaw.plugin.json", "package.json"]
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert snapshot(home) == before and not folder.exists()


def test_clients_folder_holds_the_installed_configs(tmp_path: Path) -> None:
    """clients/ shows exactly what install writes (with `mcp-memory` for the absolute path)."""
    home = tmp_path / "home"
    home.mkdir()
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    exe = str(Path(CLI).resolve())

    def generic(path: Path) -> object:
        text = path.read_text().replace(exe, "mcp-memory").replace(str(home), "~")
        return json.loads(text)

    assert generic(home / ".claude" / "settings.json") == json.loads(
        (CLIENTS / "claude-code" / "settings.json").read_text())
    assert generic(home / ".claude.json") == json.loads((CLIENTS / "claude-code" / "claude.json").read_text())
    assert generic(home / ".openclaw" / "openclaw.json") == json.loads(
        (CLIENTS / "openclaw" / "openclaw-hooks.json").read_text())
    # The plugin has one copy, the package's (capture/openclaw-plugin/): install writes it verbatim.
    for name, text in openclaw_plugin.files().items():
        assert (home / ".openclaw" / "extensions" / "mcp-memory" / name).read_text() == text


async def test_openclaw_plugin_runs_the_hooks(database: Database, db_url: str, tmp_path: Path) -> None:
    """The plugin's own code under Node, handed its events as OpenClaw's hook runner would, calling
    the real CLI: prependContext back from before_prompt_build, the conversation stored at agent_end."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    home = tmp_path / "home"
    home.mkdir()
    out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url, "--user", "sam",
              "--project", "garden")
    assert out.returncode == 0, out.stderr
    plugin = home / ".openclaw" / "extensions" / "mcp-memory" / "index.js"
    args = json.loads((home / ".openclaw" / "openclaw.json").read_text())["plugins"]["entries"]["mcp-memory"]["config"]
    script = tmp_path / "drive.mjs"
    script.write_text(textwrap.dedent(f"""\
        const plugin = (await import({json.dumps(plugin.as_uri())})).default;
        const handlers = {{}};
        plugin.register({{ pluginConfig: {{ ...{json.dumps(args)}, recallTimeoutMs: 60000 }},
                          on: (name, fn) => {{ handlers[name] = fn; }} }});
        const ctx = {{ sessionId: "s-1", sessionKey: "agent:main:main", workspaceDir: "/tmp", agentId: "main" }};
        const messages = [
          {{ role: "user",
             content: [{{ type: "text", text: "Remember that the greenhouse key is under the blue pot." }}] }},
          {{ role: "assistant", content: [{{ type: "text", text: "Noted." }}] }}];
        await handlers["agent_end"]({{ messages, success: true }}, ctx);
        const other = {{ ...ctx, sessionId: "s-2", sessionKey: "agent:main:other" }};
        const event = {{ prompt: "where is the greenhouse key?", messages: [] }};
        const result = await handlers["before_prompt_build"](event, other);
        console.log(JSON.stringify({{ handlers: Object.keys(handlers).sort(), result }}));
    """))
    env = {**os.environ, "MCP_MEMORY_RECALL_TIMEOUT_S": "60", "MCP_MEMORY_SESSION_START_TIMEOUT_S": "60"}
    with anyio.fail_after(180):
        run = await anyio.run_process([node, str(script)], env=env, check=False)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    answer = json.loads(run.stdout.decode().strip().splitlines()[-1])
    assert answer["handlers"] == ["agent_end", "before_compaction", "before_prompt_build", "session_end"]
    context = answer["result"]["prependContext"]
    assert "greenhouse key is under the blue pot" in context and "<memory " in context


async def test_claude_mcp_list_accepts_the_installed_settings(db_url: str, tmp_path: Path) -> None:
    claude = claude_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    out = cli("install", "claude-code", "--home", str(home), "--database-url", db_url)
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with anyio.fail_after(120):
        listed = await anyio.run_process([claude, "mcp", "list"], cwd=project, env=env, check=False)
    assert listed.returncode == 0, listed.stderr.decode()[-2000:]
    status = {line.split(":", 1)[0]: line for line in listed.stdout.decode().splitlines() if ":" in line}
    assert "Connected" in status["memory"], listed.stdout.decode()
