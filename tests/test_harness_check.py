"""`mcp-memory doctor` says when what install wrote is no longer in effect: a harness with our
server or hooks disabled, left off an allow list, unpinned or shadowed by another `memory` server."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from mcp_memory.capture.harness_check import harness_checks

from .test_install import CLI, OPENCLAW_JSON5, cli


def test_claude_code_installed_is_ok_and_each_way_it_is_undone_is_named(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    assert harness_checks(home, project) == []   # nothing of ours: not mentioned
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    [check] = harness_checks(home, project)
    assert check.name == "claude-code" and check.ok, check.detail
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({**data, "disableAllHooks": True, "disabledMcpjsonServers": ["memory"]}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"memory": {"command": "npx", "args": ["x"]}}}))
    [check] = harness_checks(home, project)
    assert not check.ok
    for said in ("disableAllHooks: no hook runs", "'memory' in disabledMcpjsonServers",
                 "has another server named 'memory', which shadows mcp-memory"):
        assert said in check.detail, check.detail
    assert check.fix and "remove disableAllHooks" in check.fix


def test_hooks_whose_interpreter_or_package_folder_is_gone_are_named(tmp_path: Path) -> None:
    """Install writes this interpreter and the package's folder into the hook command (the lean
    start); a venv removed since makes every hook fail, a package moved makes every hook slow."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    settings = home / ".claude" / "settings.json"
    written = settings.read_text()
    entry = shlex.split(json.loads(written)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"])
    if "-S" not in entry:
        pytest.skip("install wrote the console script here (no lean hook command on this platform)")
    root = json.loads(re.search(r'p = ("(?:[^"\\]|\\.)*")', entry[entry.index("-c") + 1]).group(1))
    settings.write_text(written.replace(json.dumps(root)[1:-1], str(tmp_path / "moved")))
    [check] = harness_checks(home, project)
    assert not check.ok and "no longer holds mcp_memory: the hooks start slowly" in check.detail, check.detail
    assert "install claude-code` again" in (check.fix or "")
    settings.write_text(written.replace(entry[0], str(tmp_path / "gone" / "python3")))
    [check] = harness_checks(home, project)
    assert not check.ok and "is gone: the hooks cannot start" in check.detail, check.detail
    settings.write_text(written)
    [check] = harness_checks(home, project)
    assert check.ok, check.detail


def test_openclaw_left_off_the_allow_list_or_unpinned_is_named(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "garden"
    (home / ".openclaw").mkdir(parents=True)
    (workspace / ".git").mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    config.write_text(OPENCLAW_JSON5.replace("WORKSPACE", str(workspace)))
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    [check] = harness_checks(home, tmp_path)
    assert check.name == "openclaw" and check.ok, check.detail
    # What the issue saw: an allow list added later, and a server entry that is not pinned.
    import json5  # json-five

    data = json5.loads(config.read_text())
    data["plugins"]["allow"] = ["voice-call"]
    data["mcp"]["servers"]["memory"]["args"] = ["serve"]
    config.write_text(json.dumps(data))
    [check] = harness_checks(home, tmp_path)
    assert not check.ok
    assert "plugins.allow does not name 'mcp-memory': its hooks never run" in check.detail
    assert "the MCP server's --agent (unset) is not the hooks' (openclaw)" in check.detail
    assert "add 'mcp-memory' to plugins.allow" in (check.fix or "")
    # The plugin's hook command, from an interpreter since removed.
    command = data["plugins"]["entries"]["mcp-memory"]["config"]["hookCommand"]   # the lean start (POSIX)
    data["plugins"]["entries"]["mcp-memory"]["config"]["hookCommand"] = [str(tmp_path / "gone"), *command[1:]]
    config.write_text(json.dumps(data))
    [check] = harness_checks(home, tmp_path)
    assert "the hook command's " + str(tmp_path / "gone") + " is gone: the hooks cannot start" in check.detail


def test_doctor_shows_the_harness_checks(tmp_path: Path, db_url: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    (home / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    env = {**os.environ, "HOME": str(home), "MCP_MEMORY_DATABASE_URL": db_url}
    env.pop("OPENCLAW_CONFIG_PATH", None)
    out = subprocess.run([CLI, "doctor"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    line = next(x for x in out.stdout.splitlines() if "claude-code:" in x)
    assert line.startswith("[FAIL]") and "the MCP server is installed but not the hooks" in line, out.stdout
