"""`mcp-memory install|uninstall` through the real CLI: the change shown and backed up, unparseable
files refused, uninstall byte-identical; Claude Code itself accepting the result (`claude mcp
list` connects) when it is installed; the OpenClaw plugin run by Node against the real CLI."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from mcp_memory.capture import install, openclaw_plugin
from mcp_memory.capture.harness_check import harness_checks
from mcp_memory.capture.harness_entries import (
    CLAUDE_HOOKS,
    TERM_IGNORED,
    _commands,
    claude_ours,
    claude_stale_hooks,
    hook_command,
    refresh_claude_hooks,
)
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
    # The lean entry: this interpreter without `site`, the package's folder put on sys.path.
    words = shlex.split(prompt["command"])
    assert prompt["type"] == "command" and words[:4] == [sys.executable, "-S", "-P", "-c"]
    assert words[5:] == ["hook", "prompt-submit", "--database-url", "postgresql://db.example/mem"]
    assert hooks["Stop"][1]["hooks"][0]["async"] is True               # capture never holds up the next prompt
    for event, ours in (("Stop", "stop"), ("PreCompact", "pre-compact"), ("SessionEnd", "session-end")):
        # A capture hook ignores the SIGTERM `claude -p` sends as it exits, from the shell's first word.
        command = hooks[event][-1]["hooks"][0]["command"]
        assert command.startswith("trap '' TERM; exec "), command
        assert shlex.split(command.removeprefix("trap '' TERM; exec ")) == [
            *words[:5], "hook", ours, "--database-url", "postgresql://db.example/mem"]
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


def test_uninstall_of_a_file_made_by_install_and_changed_since_keeps_the_rest_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()                                                       # no ~/.claude.json before install
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    data = json.loads((home / ".claude.json").read_text())
    data["numStartups"] = 1                                            # Claude Code's first start wrote to it
    (home / ".claude.json").write_text(json.dumps(data))
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0 and "None" not in out.stdout, out.stdout
    assert "did not exist before install, so what was added to it since stays" in out.stdout
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 1}


def test_openclaw_round_trip_and_plugin_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    config.write_text('{"agents": {"defaults": {"model": "anthropic/claude-sonnet-4-5"}}}\n')
    before = snapshot(home)
    out = cli("install", "openclaw", "--home", str(home))
    assert out.returncode == 0, out.stderr
    data = json.loads(config.read_text())
    # No allow list: none written (it would shut out the user's other plugins), and told how to trust ours.
    assert "allow" not in data["plugins"]
    assert "no plugins.allow list" in out.stdout and "openclaw config set plugins.allow" in out.stdout
    # No workspace repository: memories across projects, for agent openclaw, on both sides.
    assert data["mcp"]["servers"]["memory"]["args"] == ["serve", "--agent", "openclaw", "--project", "none"]
    folder = home / ".openclaw" / "extensions" / "mcp-memory"
    assert data["plugins"]["load"]["paths"] == [str(folder)]
    entry = data["plugins"]["entries"]["mcp-memory"]
    assert entry["hooks"] == {"allowConversationAccess": True, "allowPromptInjection": True}
    assert entry["config"]["args"] == ["--agent", "openclaw", "--project", "none"]
    assert sorted(p.name for p in folder.iterdir()) == ["index.js", "openclaw.plugin.json", "package.json"]
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert snapshot(home) == before and not folder.exists() and not folder.parent.exists()   # no empty folder left


def test_clients_folder_holds_the_installed_configs(tmp_path: Path) -> None:
    """clients/ shows exactly what install writes (with `mcp-memory` for the absolute path, and for
    the lean command the hooks run: the same program, started faster)."""
    home = tmp_path / "home"
    home.mkdir()
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    exe = str(Path(CLI).resolve())
    lean = install.hook_entry(exe)

    def generic(path: Path) -> object:
        text = path.read_text().replace(json.dumps(shlex.join(lean))[1:-1], "mcp-memory")
        return json.loads(text.replace(exe, "mcp-memory").replace(str(home), "~"))

    assert generic(home / ".claude" / "settings.json") == json.loads(
        (CLIENTS / "claude-code" / "settings.json").read_text())
    assert generic(home / ".claude.json") == json.loads((CLIENTS / "claude-code" / "claude.json").read_text())
    openclaw = generic(home / ".openclaw" / "openclaw.json")
    assert openclaw["plugins"]["entries"]["mcp-memory"]["config"].pop("hookCommand") == lean   # type: ignore[index]
    assert openclaw == json.loads((CLIENTS / "openclaw" / "openclaw-hooks.json").read_text())
    # The plugin has one copy, the package's (capture/openclaw-plugin/): install writes it verbatim.
    for name, text in openclaw_plugin.files().items():
        assert (home / ".openclaw" / "extensions" / "mcp-memory" / name).read_text() == text


def plugin_folder(tmp_path: Path) -> Path:
    """The package's OpenClaw plugin (capture/openclaw-plugin/) written out under `tmp_path`, as
    install writes it, for a test to load it under Node."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    for name, text in openclaw_plugin.files().items():
        (plugin / name).write_text(text)
    return plugin


async def drive_plugin(tmp_path: Path, plugin: Path, plugin_config: dict[str, object], body: str,
                       openclaw_config: dict[str, object] | None = None,
                       env: dict[str, str] | None = None) -> dict[str, object]:
    """The plugin's own code under Node, registered and handed events as OpenClaw's hook runner
    would; `body` runs with `handlers` and prints one JSON line."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    script = tmp_path / "drive.mjs"
    script.write_text(textwrap.dedent(f"""\
        const plugin = (await import({json.dumps(plugin.as_uri())})).default;
        const handlers = {{}};
        plugin.register({{ pluginConfig: {json.dumps(plugin_config)}, config: {json.dumps(openclaw_config or {})},
                          on: (name, fn) => {{ handlers[name] = fn; }} }});
    """) + textwrap.dedent(body))
    with anyio.fail_after(180):
        run = await anyio.run_process([node, str(script)], env={**os.environ, **(env or {})}, check=False)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    return json.loads(run.stdout.decode().strip().splitlines()[-1])


TURN = """\
    const ctx = { sessionId: "s-1", sessionKey: "agent:main:main", workspaceDir: WORKSPACE, agentId: "main" };
    const messages = [
      { role: "user", content: [{ type: "text", text: "Remember that the greenhouse key is under the blue pot." }] },
      { role: "assistant", content: [{ type: "text", text: "Noted." }] }];
    await handlers["agent_end"]({ messages, success: true }, ctx);
"""
# Hooks see only what OpenClaw gives its MCP servers (HOME, PATH, …) plus the server entry's env.
SLOW_OK = {"MCP_MEMORY_RECALL_TIMEOUT_S": "60", "MCP_MEMORY_SESSION_START_TIMEOUT_S": "60"}


async def test_openclaw_plugin_runs_the_hooks(database: Database, db_url: str, tmp_path: Path) -> None:
    """Calling the real CLI: prependContext back from before_prompt_build, the conversation stored
    at agent_end."""
    home = tmp_path / "home"
    home.mkdir()
    out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url, "--user", "sam",
              "--project", "garden")
    assert out.returncode == 0, out.stderr
    plugin = home / ".openclaw" / "extensions" / "mcp-memory" / "index.js"
    args = json.loads((home / ".openclaw" / "openclaw.json").read_text())["plugins"]["entries"]["mcp-memory"]["config"]
    assert args["hookCommand"][:4] == [sys.executable, "-S", "-P", "-c"]   # the hooks run lean
    answer = await drive_plugin(tmp_path, plugin, {**args, "recallTimeoutMs": 60000, "env": SLOW_OK},
                                TURN.replace("WORKSPACE", '"/tmp"') + """\
        const other = { ...ctx, sessionId: "s-2", sessionKey: "agent:main:other" };
        const event = { prompt: "where is the greenhouse key?", messages: [] };
        let result;
        for (let i = 0; i < 100 && !result?.prependContext?.includes("blue pot"); i++) {   // capture is detached
          result = await handlers["before_prompt_build"](event, other);
          if (!result?.prependContext?.includes("blue pot")) await new Promise((r) => setTimeout(r, 300));
        }
        console.log(JSON.stringify({ handlers: Object.keys(handlers).sort(), result }));
    """)
    assert answer["handlers"] == ["agent_end", "before_compaction", "before_prompt_build", "session_end",
                                  "session_start"]
    context = answer["result"]["prependContext"]
    assert "greenhouse key is under the blue pot" in context and "<memory " in context


async def test_openclaw_plugin_runs_one_hook_per_prompt_with_the_servers_environment(
        database: Database, db_url: str, tmp_path: Path) -> None:
    """The session-start block is asked for at session_start, of a running server only: with none
    (here) the first prompt asks for it itself; each later prompt runs prompt-submit alone. The
    hooks get the MCP server entry's env, not the gateway's own MCP_MEMORY_* (which OpenClaw does
    not give the server either). (tests/test_openclaw_gateway.py: the block handed over.)"""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "logged-mcp-memory"
    wrapper.write_text(f'#!/bin/sh\necho "$2 ${{MCP_MEMORY_MARK:-unset}} ${{MCP_MEMORY_LEAK:-unset}}'
                       f'${{MCP_MEMORY_HOOK_SERVER_ONLY:+ server-only}}" >> {log}\nexec {CLI} "$@"\n')
    wrapper.chmod(0o755)
    plugin = plugin_folder(tmp_path)
    config = {"command": str(wrapper), "args": ["--database-url", db_url, "--user", "sam", "--agent", "openclaw",
                                               "--project", "none"], "server": "memory", "recallTimeoutMs": 60000}
    answer = await drive_plugin(tmp_path, plugin / "index.js", config, """\
        const ctx = { sessionId: "s-9", sessionKey: "agent:main:s9", agentId: "main" };
        // A gateway's session_start may name the session by its id alone, the turn by its key too.
        await handlers["session_start"]({ sessionId: "s-9" }, { sessionId: "s-9", agentId: "main" });
        const first = await handlers["before_prompt_build"]({ prompt: "what grows in the garden?", messages: [] }, ctx);
        const second = await handlers["before_prompt_build"]({ prompt: "and in the greenhouse?", messages: [] }, ctx);
        // No session_start (`openclaw agent --local`): a first turn asks for the block itself ...
        const local = { sessionId: "s-10", sessionKey: "agent:main:s10", agentId: "main" };
        await handlers["before_prompt_build"]({ prompt: "what grows in the garden?", messages: [] }, local);
        // ... a later turn of a session begun elsewhere (messages before it) does not.
        const later = { sessionId: "s-11", sessionKey: "agent:main:s11", agentId: "main" };
        const history = [{ role: "user", content: "hi there" }, { role: "assistant", content: "hello" }];
        await handlers["before_prompt_build"]({ prompt: "and in the greenhouse?", messages: history }, later);
        console.log(JSON.stringify({ first: first ?? null, second: second ?? null }));
    """, openclaw_config={"mcp": {"servers": {"memory": {"env": {"MCP_MEMORY_MARK": "server-env", **SLOW_OK}}}}},
        env={"MCP_MEMORY_LEAK": "gateway-only"})
    calls = log.read_text().splitlines()
    assert calls == ["session-start server-env unset server-only",
                     "session-start server-env unset", "prompt-submit server-env unset",
                     "prompt-submit server-env unset",
                     "session-start server-env unset", "prompt-submit server-env unset",
                     "prompt-submit server-env unset"], calls
    assert answer is not None


async def test_openclaw_hooks_and_tools_share_one_namespace(database: Database, db_url: str, tmp_path: Path) -> None:
    """What the plugin's capture stores, the agent's memory_search finds, though OpenClaw starts its
    MCP server in whatever directory `openclaw` was launched from (here another repository)."""
    from mcp import Client, StdioServerParameters

    home, workspace, elsewhere = tmp_path / "home", tmp_path / "garden", tmp_path / "elsewhere"
    for folder in (home / ".openclaw", workspace / ".git", elsewhere / ".git"):
        folder.mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    config.write_text(f'{{ agents: {{ defaults: {{ workspace: "{workspace}" }} }} }}\n')
    out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url, "--user", "sam")
    assert out.returncode == 0, out.stderr
    import json5  # json-five

    data = json5.loads(config.read_text())
    entry, server = data["plugins"]["entries"]["mcp-memory"]["config"], data["mcp"]["servers"]["memory"]
    await drive_plugin(tmp_path, home / ".openclaw" / "extensions" / "mcp-memory" / "index.js", entry,
                       TURN.replace("WORKSPACE", json.dumps(str(workspace))) + "console.log('{}');\n",
                       openclaw_config=data)
    # As OpenClaw starts it: the entry's command and args, only the MCP SDK's default environment.
    env = {k: os.environ[k] for k in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "MCP_MEMORY_RESIDENT")
           if k in os.environ}
    params = StdioServerParameters(command=server["command"], args=server["args"], env={**env, **server.get("env", {})},
                                   cwd=str(elsewhere))
    hits: list[dict[str, object]] = []
    async with Client(params) as client:
        with anyio.fail_after(120):
            while not hits:   # the capture runs detached from the hook
                result = await client.call_tool("memory_search", {"query": "greenhouse key"})
                hits = result.structured_content["hits"]
                if not hits:
                    await anyio.sleep(0.5)
    assert "blue pot" in str(hits[0]["snippet"])


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


# --- symlinks, backups, lost records, project files, JSON5 (issue #26, item 7) -------------------

def test_symlinked_settings_stay_links_and_are_restored_into_their_target(tmp_path: Path) -> None:
    """stow / chezmoi / home-manager keep ~/.claude/settings.json as a link into a dotfiles folder."""
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    (home / ".claude").mkdir(parents=True)
    dotfiles.mkdir()
    (dotfiles / "claude-settings.json").write_text(SETTINGS)
    link = home / ".claude" / "settings.json"
    link.symlink_to(dotfiles / "claude-settings.json")
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and link.resolve() == dotfiles / "claude-settings.json"   # still a link
    assert "UserPromptSubmit" in json.loads((dotfiles / "claude-settings.json").read_text())["hooks"]
    assert (home / ".claude" / "settings.json.mcp-memory.bak").read_text() == SETTINGS
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and link.resolve() == dotfiles / "claude-settings.json"
    assert (dotfiles / "claude-settings.json").read_text() == SETTINGS               # restored into the target
    assert sorted(p.name for p in (home / ".claude").iterdir()) == ["settings.json"]


def test_a_link_to_a_file_not_there_yet_and_a_link_loop(tmp_path: Path) -> None:
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    (home / ".claude").mkdir(parents=True)
    dotfiles.mkdir()
    link = home / ".claude" / "settings.json"
    link.symlink_to(dotfiles / "claude-settings.json")                # the dotfiles repo has no file yet
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    assert link.is_symlink() and "hooks" in json.loads((dotfiles / "claude-settings.json").read_text())
    assert cli("uninstall", "claude-code", "--home", str(home)).returncode == 0
    assert link.is_symlink() and not (dotfiles / "claude-settings.json").exists()   # as before: a link, no file

    loop = tmp_path / "loop"
    (loop / ".claude").mkdir(parents=True)
    (loop / ".claude" / "a").symlink_to("b")
    (loop / ".claude" / "b").symlink_to("a")
    (loop / ".claude" / "settings.json").symlink_to("a")
    out = cli("install", "claude-code", "--home", str(loop))
    assert out.returncode == 1 and "settings.json" in out.stderr and "not changed" in out.stderr
    assert all(p.is_symlink() for p in (loop / ".claude").iterdir()) and not (loop / ".claude.json").exists()


def test_a_lost_install_record_never_costs_the_backup_and_uninstall_says_what_it_could_not_restore(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(CLAUDE_JSON)
    (home / ".claude" / "settings.json").write_text(SETTINGS)
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    for record in home.rglob("*.mcp-memory.json"):
        record.unlink()                                                # the install record is deleted
    again = cli("install", "claude-code", "--home", str(home))
    assert again.returncode == 0 and "no install record" in again.stdout, again.stdout
    assert (home / ".claude.json.mcp-memory.bak").read_text() == CLAUDE_JSON      # the backup is untouched
    assert (home / ".claude" / "settings.json.mcp-memory.bak").read_text() == SETTINGS

    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert "restored" not in out.stdout and "could not restore" in out.stdout
    assert "mcpServers.memory" in out.stdout and "hooks.UserPromptSubmit" in out.stdout   # what it did instead
    assert "memory" not in json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert json.loads((home / ".claude" / "settings.json").read_text()) == json.loads(SETTINGS)
    assert (home / ".claude.json.mcp-memory.bak").read_text() == CLAUDE_JSON      # left for the user


def test_a_second_backup_gets_its_own_name(tmp_path: Path) -> None:
    """A backup from an earlier install (record gone, entries removed by hand) is never overwritten;
    an uninstall whose backup still holds mcp-memory's entries does not claim an exact restore."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(CLAUDE_JSON)
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    (home / ".claude.json.mcp-memory.json").unlink()
    installed = (home / ".claude.json").read_text()
    (home / ".claude.json.mcp-memory.bak").write_text(installed)      # an old backup holding our entry
    data = json.loads(installed)
    data["numStartups"] = 9
    (home / ".claude.json").write_text(json.dumps(data))
    (home / ".claude" / "settings.json.mcp-memory.json").unlink()
    (home / ".claude" / "settings.json").unlink()
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert (home / ".claude.json.mcp-memory.bak").read_text() == installed        # not overwritten
    assert json.loads((home / ".claude.json.mcp-memory.bak.1").read_text())["numStartups"] == 9
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert "memory" not in json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert json.loads((home / ".claude.json").read_text())["numStartups"] == 9


def test_project_scope_files_hold_no_path_of_this_machine(tmp_path: Path) -> None:
    project = tmp_path / "checkouts" / "garden"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    out = cli("install", "claude-code", "--scope", "project", "--project-dir", str(project / "src"),
              "--database-url", "postgresql://db.internal/memory")
    assert out.returncode == 0, out.stderr
    texts = [(project / "src" / ".mcp.json").read_text(), (project / "src" / ".claude" / "settings.json").read_text()]
    for text in texts:
        assert str(tmp_path) not in text and sys.prefix not in text and '"/' not in text and " /" not in text
    server = json.loads(texts[0])["mcpServers"]["memory"]
    # Found on each teammate's PATH; the project pinned by the repository's name for every clone.
    assert server["command"] == "mcp-memory"
    assert server["args"] == ["serve", "--database-url", "postgresql://db.internal/memory", "--project", "garden"]
    hook = json.loads(texts[1])["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert hook == "mcp-memory hook prompt-submit --database-url postgresql://db.internal/memory --project garden"
    assert "PATH" in out.stdout                                        # the choice is explained


def test_the_installed_hook_command_runs_without_site(tmp_path: Path) -> None:
    """The command Claude Code runs through its shell: no `site` imported (no site-packages scan),
    mcp_memory from the folder install resolved, a trivial prompt answered with nothing."""
    home = tmp_path / "home"
    home.mkdir()
    assert cli("install", "claude-code", "--home", str(home)).returncode == 0
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    run = subprocess.run(["sh", "-c", command], input='{"prompt": "yes"}', capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env={**os.environ, "PYTHONVERBOSE": "1"})
    assert run.returncode == 0 and run.stdout == ""
    assert "import 'mcp_memory.hookline'" in run.stderr and "import 'site'" not in run.stderr
    # Run by the console script, the same prompt imports `site`: what the lean entry saves.
    old = subprocess.run(["sh", "-c", f"{shlex.quote(CLI)} hook prompt-submit"], input='{"prompt": "yes"}',
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONVERBOSE": "1"})
    assert old.returncode == 0 and "import 'site'" in old.stderr


def test_a_lean_entry_whose_package_moved_still_runs(tmp_path: Path) -> None:
    """The folder install resolved is gone (another venv, editable to regular): `site` runs after
    all and the package is found where it is now; no failed hook, never exit code 2 (which Claude Code
    reads as blocking the prompt)."""
    code = install.LEAN.format(root=json.dumps(str(tmp_path / "gone")))
    run = subprocess.run([sys.executable, "-S", "-P", "-c", code, "--version"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("mcp-memory "), run.stderr
    trivial = subprocess.run([sys.executable, "-S", "-P", "-c", code, "hook", "prompt-submit"],
                             input='{"prompt": "ok"}', capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert trivial.returncode == 0 and trivial.stdout == "" and trivial.stderr == ""


def test_a_project_folder_cannot_shadow_the_lean_entrys_modules(tmp_path: Path) -> None:
    """-P: a hook runs in the user's project; a json.py (or mcp_memory/) there is not imported."""
    (tmp_path / "json.py").write_text("raise SystemExit('the project json.py was imported')\n")
    (tmp_path / "mcp_memory").mkdir()
    (tmp_path / "mcp_memory" / "__init__.py").write_text("raise SystemExit('the project mcp_memory was imported')\n")
    entry = install.hook_entry(CLI)
    run = subprocess.run([*entry, "hook", "prompt-submit"], input='{"prompt": "yes"}', capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout == run.stderr == ""


OLD_HOOKS = {"hooks": {event: [{"hooks": [{"type": "command", "command": f"{shlex.quote(CLI)} hook {ours}",
                                           "timeout": 10}]}] for event, ours, *_ in CLAUDE_HOOKS}}


def test_doctor_and_uninstall_know_the_console_script_hooks_of_an_earlier_install(tmp_path: Path) -> None:
    """Hooks an earlier version installed (the console script) and the lean ones are both ours: doctor
    sees them installed, and stale; install brings them to this version's commands (each keeping its
    flags) without adding a second set; uninstall takes them out and nothing else."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    settings = {**OLD_HOOKS, "model": "opus"}
    settings["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "notify-send done"}]})
    (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"memory": {
        "command": "/usr/local/bin/mcp-memory", "args": ["serve"]}}}, indent=2) + "\n")
    [check] = harness_checks(home, project)
    # Ours, and named as an earlier install's: their capture hooks die to `claude -p`'s SIGTERM.
    assert check.name == "claude-code" and not check.ok
    assert "earlier install's: `claude -p` can kill a capture hook" in check.detail, check.detail
    assert "run `mcp-memory install claude-code` again" in (check.fix or "")
    lean = json.loads((home / ".claude" / "settings.json").read_text())
    lean["hooks"] = {e: [{"hooks": [{"type": "command", "command": shlex.join(
        [*install.hook_entry(CLI), "hook", ours])}]}] for e, ours, *_ in CLAUDE_HOOKS}
    assert claude_ours(lean) == [f"hooks.{e}" for e, *_ in CLAUDE_HOOKS]
    assert claude_ours(settings) == [f"hooks.{e}" for e, *_ in CLAUDE_HOOKS]
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 0 and "installed for claude-code" in out.stdout, out.stdout + out.stderr
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    for event, ours, *_ in CLAUDE_HOOKS:   # one set, each as this version writes it
        [command] = [c for c in _commands(hooks[event]) if c != "notify-send done"]
        # A working entry stays (beside the server entry naming it); the capture hooks get the guard.
        assert command == hook_command([CLI], ours, [], posix=True), command
    assert harness_checks(home, project)[0].ok
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0, out.stderr
    after = json.loads((home / ".claude" / "settings.json").read_text())
    assert after == {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                      "command": "notify-send done"}]}]}}


def test_install_again_brings_an_earlier_installs_hooks_up_to_date(tmp_path: Path) -> None:
    """An install whose capture hooks lack the SIGTERM guard (as installs before it wrote them):
    doctor names it, `install` again rewrites only our commands (their flags kept), doctor is
    content, a third install changes nothing, and uninstall still restores the files byte for byte."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    (home / ".claude.json").write_text(CLAUDE_JSON)
    (home / ".claude" / "settings.json").write_text(SETTINGS)
    before = snapshot(home)
    url = "postgresql://db.example/mem"
    assert cli("install", "claude-code", "--home", str(home), "--database-url", url).returncode == 0
    settings = home / ".claude" / "settings.json"
    current = settings.read_text()
    settings.write_text(current.replace(TERM_IGNORED, ""))   # an earlier install's commands
    [check] = harness_checks(home, project)
    assert not check.ok and "can kill a capture hook" in check.detail, check.detail
    dry = cli("install", "claude-code", "--home", str(home), "--dry-run")
    assert dry.returncode == 0 and "dry run" in dry.stdout and TERM_IGNORED not in settings.read_text()
    out = cli("install", "claude-code", "--home", str(home))
    assert out.returncode == 0 and "updated mcp-memory's hook commands" in out.stdout, out.stdout + out.stderr
    assert settings.read_text() == current                       # this version's commands, the flags kept
    assert harness_checks(home, project)[0].ok
    again = cli("install", "claude-code", "--home", str(home))
    assert again.returncode == 0 and "already installed" in again.stdout and settings.read_text() == current
    assert cli("uninstall", "claude-code", "--home", str(home)).returncode == 0
    assert snapshot(home) == before


def test_a_projects_stale_hooks_are_named_with_the_project_install_that_updates_them(tmp_path: Path) -> None:
    """A project's committed hooks written before the guard: doctor's fix is the project-scope
    install (a user-scope one would add a second set), which rewrites them; flags given to an
    existing install are said not to be applied."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    assert cli("install", "claude-code", "--scope", "project", "--project-dir", str(project)).returncode == 0
    settings = project / ".claude" / "settings.json"
    current = settings.read_text()
    assert current.count(TERM_IGNORED) == 3
    settings.write_text(current.replace(TERM_IGNORED, ""))
    [check] = harness_checks(home, project)
    assert f"mcp-memory install claude-code --scope project --project-dir {project}` again" in (check.fix or "")
    out = cli("install", "claude-code", "--scope", "project", "--project-dir", str(project), "--user", "bob")
    assert out.returncode == 0 and "updated mcp-memory's hook commands" in out.stdout, out.stdout + out.stderr
    assert "the flags given were not applied" in out.stdout and settings.read_text() == current


def test_install_again_leaves_a_users_own_wrapper_of_our_hook_alone() -> None:
    """Only what an install wrote is rewritten: a command of ours the user wrapped (`nice`) or
    added shell words to (`$VAR`, `2>/dev/null`) keeps its words, and doctor does not ask for an
    install that would not change it; the console script an earlier install wrote gets the guard,
    and this version's entry only where its own is gone."""
    wrapped = "nice -n 5 /usr/local/bin/mcp-memory hook stop --user alice"
    shell_words = f"{shlex.quote(CLI)} hook pre-compact --database-url $DB_URL 2>/dev/null"
    earlier = f"{shlex.quote(CLI)} hook session-end --user alice"
    gone = "/gone/venv/bin/mcp-memory hook stop --user bob"
    data = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": wrapped},
                                          {"type": "command", "command": gone}]}],
                      "PreCompact": [{"hooks": [{"type": "command", "command": shell_words}]}],
                      "SessionEnd": [{"hooks": [{"type": "command", "command": earlier}]}]}}
    assert claude_stale_hooks(data, posix=True) == [
        "/gone/venv/bin/mcp-memory is gone: the hooks cannot start",
        "form is an earlier install's: `claude -p` can kill a capture hook (SIGTERM as it exits) before it "
        "hands the turns off"]
    refresh_claude_hooks([CLI], posix=True)(data)   # this version's entry
    stop = [h["command"] for h in data["hooks"]["Stop"][0]["hooks"]]
    assert stop == [wrapped, hook_command([CLI], "stop", ["--user", "bob"], posix=True)]
    assert data["hooks"]["PreCompact"][0]["hooks"][0]["command"] == shell_words
    assert data["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == hook_command(
        [CLI], "session-end", ["--user", "alice"], posix=True)
    assert claude_stale_hooks(data, posix=True) == []


@pytest.mark.parametrize("flags", [["--data-dir", "/home/me/.local/share/mcp-memory"],
                                   ["--database-url", "postgresql://me:s3cret@db.internal/memory"]])
def test_project_scope_refuses_machine_paths_and_secrets(tmp_path: Path, flags: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = cli("install", "claude-code", "--scope", "project", "--project-dir", str(project), *flags)
    assert out.returncode == 2 and flags[0] in out.stderr and "environment" in out.stderr
    assert "s3cret" not in out.stdout + out.stderr
    assert list(project.iterdir()) == []                               # nothing written


def test_the_diff_shown_hides_a_database_password(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    url = "postgresql://me:s3cret-pw@db.internal/memory"
    out = cli("install", "claude-code", "--home", str(home), "--database-url", url)
    assert out.returncode == 0, out.stderr
    assert "s3cret-pw" not in out.stdout + out.stderr and "postgresql://me:***@db.internal/memory" in out.stdout
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["memory"]["args"][-1] == url   # as given
    out = cli("uninstall", "claude-code", "--home", str(home))
    assert out.returncode == 0 and "s3cret-pw" not in out.stdout + out.stderr


OPENCLAW_JSON5 = textwrap.dedent("""\
    // OpenClaw configuration (JSON5), as the docs show it
    {
      agents: {
        defaults: {
          workspace: "WORKSPACE", // where the agent works
          model: { primary: 'anthropic/claude-sonnet-4-5', },
        },
      },
      /* the gateway */
      gateway: { port: 18789, mode: "local" },
      mcp: {
        servers: {
          // another server of mine
          other: { command: "other-server", args: [], },
        },
      },
    }
""")


def test_openclaw_json5_config_keeps_its_comments_and_pins_one_namespace(tmp_path: Path) -> None:
    import json5  # json-five

    home, workspace = tmp_path / "home", tmp_path / "garden"
    (home / ".openclaw").mkdir(parents=True)
    (workspace / ".git").mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    original = OPENCLAW_JSON5.replace("WORKSPACE", str(workspace))
    config.write_text(original)
    out = cli("install", "openclaw", "--home", str(home))
    assert out.returncode == 0, out.stderr
    text = config.read_text()
    for comment in ("// OpenClaw configuration (JSON5)", "// where the agent works", "/* the gateway */",
                    "// another server of mine"):
        assert comment in text
    data = json5.loads(text)
    assert data["mcp"]["servers"]["other"] == {"command": "other-server", "args": []}
    server, hooks = data["mcp"]["servers"]["memory"], data["plugins"]["entries"]["mcp-memory"]["config"]
    # The agent's tools and the hooks: one namespace, the workspace's repository, pinned on both.
    assert hooks["args"] == ["--agent", "openclaw", "--project", "garden"]
    assert server["args"] == ["serve", *hooks["args"]]
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert config.read_text() == original

    # Changed by OpenClaw since install: only ours goes, the comments and the change stay.
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    config.write_text(config.read_text().replace("port: 18789", "port: 18790"))
    out = cli("uninstall", "openclaw", "--home", str(home))
    assert out.returncode == 0 and "only mcp-memory's entries" in out.stdout, out.stdout
    assert config.read_text() == original.replace("port: 18789", "port: 18790")


def test_openclaw_a_users_own_memory_entry_is_pinned_and_an_allow_list_names_the_plugin(tmp_path: Path) -> None:
    import json5  # json-five

    home, workspace = tmp_path / "home", tmp_path / "garden"
    (home / ".openclaw").mkdir(parents=True)
    (workspace / ".git").mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    # What `openclaw mcp add memory -- mcp-memory serve` (the README's line) and a hardened install leave.
    original = OPENCLAW_JSON5.replace("WORKSPACE", str(workspace)).replace(
        'other: { command: "other-server", args: [], },',
        'other: { command: "other-server", args: [], },\n      memory: { command: "mcp-memory", args: ["serve"] },'
    ).replace("  gateway:", '  plugins: { allow: ["voice-call"] },\n  gateway:')
    assert 'memory: { command: "mcp-memory"' in original and "allow:" in original
    config.write_text(original)
    out = cli("install", "openclaw", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert "no plugins.allow list" not in out.stdout  # theirs names the plugin now
    data = json5.loads(config.read_text())
    hooks = data["plugins"]["entries"]["mcp-memory"]["config"]
    # Their command kept, pinned to the hooks' namespace.
    assert data["mcp"]["servers"]["memory"] == {"command": "mcp-memory", "args": ["serve", *hooks["args"]]}
    assert data["plugins"]["allow"] == ["voice-call", "mcp-memory"]  # else OpenClaw loads no hook of ours
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert config.read_text() == original

    # Changed by OpenClaw since install: the user's own entry and allow list go back as they were.
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    config.write_text(config.read_text().replace("port: 18789", "port: 18790"))
    out = cli("uninstall", "openclaw", "--home", str(home))
    assert out.returncode == 0, out.stderr
    data = json5.loads(config.read_text())
    assert data["mcp"]["servers"]["memory"] == {"command": "mcp-memory", "args": ["serve"]}
    assert data["plugins"]["allow"] == ["voice-call"] and data["gateway"]["port"] == 18790


def test_openclaw_config_that_is_not_json5_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    (home / ".openclaw" / "openclaw.json").write_text("{ agents: { defaults: { ")
    before = snapshot(home)
    out = cli("install", "openclaw", "--home", str(home))
    assert out.returncode == 1 and "not valid JSON5" in out.stderr and "not changed" in out.stderr
    assert snapshot(home) == before


async def test_claude_code_runs_a_project_scope_install_from_path(db_url: str, tmp_path: Path) -> None:
    """The files a team commits name plain `mcp-memory`; Claude Code finds it on PATH and connects,
    launched from a subfolder of the project."""
    claude = claude_cli()
    home, project = tmp_path / "home", tmp_path / "garden"
    (home / ".claude").mkdir(parents=True)
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    out = cli("install", "claude-code", "--scope", "project", "--project-dir", str(project))
    assert out.returncode == 0, out.stderr
    # Project servers wait for the user's approval; a user setting gives it, as `claude` would ask.
    (home / ".claude" / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "MCP_MEMORY_DATABASE_URL": db_url}
    with anyio.fail_after(120):
        listed = await anyio.run_process([claude, "mcp", "list"], cwd=project / "src", env=env, check=False)
    status = {line.split(":", 1)[0]: line for line in listed.stdout.decode().splitlines() if ":" in line}
    assert "Connected" in status.get("memory", ""), listed.stdout.decode() + listed.stderr.decode()[-2000:]
    assert "mcp-memory serve --project garden" in status["memory"]


def openclaw_cli() -> str:
    """OpenClaw's own CLI (`MCP_MEMORY_TEST_OPENCLAW` or on PATH; it needs Node >= 24.16), else skip."""
    found = os.environ.get("MCP_MEMORY_TEST_OPENCLAW") or shutil.which("openclaw")
    if not found:
        pytest.skip("OpenClaw is not installed (npm install openclaw on Node >= 24.16; MCP_MEMORY_TEST_OPENCLAW)")
    try:
        version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"OpenClaw does not start here: {exc}")
    if version.returncode != 0 or "OpenClaw" not in version.stdout:
        pytest.skip(f"OpenClaw does not start here (Node too old?): {version.stderr.strip()[:200]}")
    return found


async def test_openclaw_itself_accepts_the_installed_json5_config(database: Database, db_url: str,
                                                                  tmp_path: Path) -> None:
    openclaw = openclaw_cli()
    home, launched = tmp_path / "home", tmp_path / "somewhere"
    (home / ".openclaw").mkdir(parents=True)
    launched.mkdir()
    (home / ".openclaw" / "openclaw.json").write_text(OPENCLAW_JSON5.replace("WORKSPACE", str(tmp_path / "ws")))
    out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url)
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "HOME": str(home)}
    env.pop("OPENCLAW_CONFIG_PATH", None)
    env.pop("OPENCLAW_STATE_DIR", None)
    with anyio.fail_after(300):
        valid = await anyio.run_process([openclaw, "config", "validate"], cwd=launched, env=env, check=False)
        assert valid.returncode == 0 and b"Config valid" in valid.stdout, valid.stdout + valid.stderr
        probe = await anyio.run_process([openclaw, "mcp", "probe", "memory", "--json"], cwd=launched, env=env,
                                        check=False)
    text = probe.stdout.decode()
    assert probe.returncode == 0, text + probe.stderr.decode()
    tools = json.loads(text[text.index("{"):])["tools"]
    assert "memory__memory_search" in tools and "memory__memory_write" in tools   # OpenClaw's prefix
