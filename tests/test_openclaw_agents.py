"""Several OpenClaw agents (`agents.entries`, or the older `agents.list`), each with its own
workspace: install gives each a server entry of its own, pinned to its agent id and its workspace's
project, denies the others' entries to it (the only per-agent choice of MCP servers OpenClaw 2026.9
has: the agent's tools.deny), and the plugin's hooks take each event's agent's flags. So two agents'
captures land in two namespaces and each agent's memory_search sees its own (issue 49 item 12)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import anyio

from mcp_memory.capture.harness_check import harness_checks
from mcp_memory.db import Database

from .test_install import cli, drive_plugin, openclaw_cli, plugin_folder, snapshot

TWO_AGENTS = textwrap.dedent("""\
    // two agents, each in its own repository
    {
      agents: {
        ownership: "explicit",
        entries: {
          main: { workspace: "GARDEN" },  // the gardener
          work: { workspace: "ORCHARD", tools: { deny: ["exec"] } },
        },
      },
      gateway: { port: 18789, mode: "local" },
    }
""")
LISTED = textwrap.dedent("""\
    {
      agents: {
        list: [{ id: "main", workspace: "GARDEN" }, { id: "Work", workspace: "ORCHARD" }],
      },
      gateway: { port: 18789 },
    }
""")


def setup(tmp_path: Path, text: str = TWO_AGENTS) -> tuple[Path, Path, Path, Path]:
    home, garden, orchard = tmp_path / "home", tmp_path / "garden", tmp_path / "orchard"
    for folder in (home / ".openclaw", garden / ".git", orchard / ".git"):
        folder.mkdir(parents=True)
    config = home / ".openclaw" / "openclaw.json"
    config.write_text(text.replace("GARDEN", str(garden)).replace("ORCHARD", str(orchard)))
    return home, garden, orchard, config


def read_text(text: str) -> dict:
    import json5  # json-five

    return json5.loads(text)


def read(config: Path) -> dict:
    return read_text(config.read_text())


def test_each_agent_gets_its_own_entry_and_uninstall_restores(tmp_path: Path) -> None:
    home, _, _, config = setup(tmp_path)
    before = snapshot(home)
    out = cli("install", "openclaw", "--home", str(home), "--user", "sam")
    assert out.returncode == 0, out.stderr
    assert "OpenClaw agent 'work': its hooks and its server 'memory-work'" in out.stdout, out.stdout
    assert "share" not in out.stdout
    data = read(config)
    servers, entries = data["mcp"]["servers"], data["agents"]["entries"]
    assert servers["memory"]["args"] == ["serve", "--user", "sam", "--agent", "main", "--project", "garden"]
    assert servers["memory-work"]["args"] == ["serve", "--user", "sam", "--agent", "work", "--project", "orchard"]
    # OpenClaw leaves a server out of an agent's sessions when the agent's tool policy denies its tools.
    assert entries["main"]["tools"] == {"deny": ["memory-work__*"]}
    assert entries["work"]["tools"] == {"deny": ["exec", "memory__*"]}
    hooked = data["plugins"]["entries"]["mcp-memory"]["config"]
    assert hooked["agents"] == {"main": {"server": "memory", "args": servers["memory"]["args"][1:]},
                                "work": {"server": "memory-work", "args": servers["memory-work"]["args"][1:]}}
    assert "// the gardener" in config.read_text()
    [check] = harness_checks(home, tmp_path)
    assert check.ok and "note" not in check.detail, check.detail
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert snapshot(home) == before

    # Changed by OpenClaw since install: only ours goes (servers, denies), the user's deny stays.
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    config.write_text(config.read_text().replace("port: 18789", "port: 18790"))
    out = cli("uninstall", "openclaw", "--home", str(home))
    assert out.returncode == 0 and "only mcp-memory's entries" in out.stdout, out.stdout
    after = read(config)
    assert "mcp" not in after and "plugins" not in after and after["gateway"]["port"] == 18790
    assert after["agents"]["entries"] == {"main": {"workspace": str(tmp_path / "garden")},
                                          "work": {"workspace": str(tmp_path / "orchard"), "tools": {"deny": ["exec"]}}}


def test_the_older_agents_list_and_agents_without_a_workspace(tmp_path: Path) -> None:
    home, _, _, config = setup(tmp_path, LISTED)
    original = config.read_text()
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    data = read(config)
    main, work = data["agents"]["list"]
    assert main["tools"] == {"deny": ["memory-work__*"]} and work["tools"] == {"deny": ["memory__*"]}
    assert data["mcp"]["servers"]["memory-work"]["args"][-4:] == ["--agent", "work", "--project", "orchard"]
    config.write_text(config.read_text().replace("port: 18789", "port: 18790"))
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0
    assert read(config) == read_text(original.replace("port: 18789", "port: 18790"))

    # No workspace of their own: the first agent's is the default one, the other's workspace-<id>.
    config.write_text('{ agents: { list: [{ id: "main" }, { id: "ops" }] } }\n')
    state = home / ".openclaw"
    (state / "workspace-ops" / ".git").mkdir(parents=True)
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    servers = read(config)["mcp"]["servers"]
    assert servers["memory"]["args"][-4:] == ["--agent", "main", "--project", "none"]
    assert servers["memory-ops"]["args"][-4:] == ["--agent", "ops", "--project", "workspace-ops"]


def test_one_agent_pinned_for_all_says_they_share_and_doctor_names_what_broke(tmp_path: Path) -> None:
    home, _, _, config = setup(tmp_path)
    out = cli("install", "openclaw", "--home", str(home), "--agent", "bot")
    assert out.returncode == 0, out.stderr
    assert ("note: OpenClaw lists 2 agents (main, work); with --agent they share this one namespace"
            in out.stdout), out.stdout
    assert "memory-work" not in read(config)["mcp"]["servers"]
    [check] = harness_checks(home, tmp_path)
    assert check.ok and "2 agents (main, work) and they share one namespace" in check.detail, check.detail
    assert cli("uninstall", "openclaw", "--home", str(home)).returncode == 0

    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    data = read(config)
    data["agents"]["entries"]["main"]["tools"]["deny"] = []                      # edited away
    data["agents"]["entries"]["ops"] = {"workspace": str(tmp_path / "ops")}    # an agent added later
    config.write_text(json.dumps(data))
    [check] = harness_checks(home, tmp_path)
    assert not check.ok
    assert "agent 'main' loads agent 'work''s memory server" in check.detail, check.detail
    assert "agent(s) ops listed since install have no memory server of their own" in check.detail
    assert "mcp-memory uninstall openclaw` then `mcp-memory install openclaw`" in (check.fix or "")


def test_a_lone_agent_s_own_workspace_and_agents_listed_after_install(tmp_path: Path) -> None:
    home, _, orchard, config = setup(tmp_path, '{ agents: { entries: { main: { workspace: "GARDEN" } } } }\n')
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    data = read(config)
    assert data["mcp"]["servers"]["memory"]["args"][-4:] == ["--agent", "openclaw", "--project", "garden"]
    data["agents"]["entries"]["work"] = {"workspace": str(orchard)}
    config.write_text(json.dumps(data))
    [check] = harness_checks(home, tmp_path)
    assert not check.ok and "they share one namespace, tools and hooks alike: they were listed after install" \
        in check.detail, check.detail


async def test_each_event_runs_its_agents_flags_and_server_environment(tmp_path: Path) -> None:
    """Session events carry the agent's id, or only a session key naming it; an agent not in the
    map (listed after install) takes the shared flags."""
    log, wrapper = tmp_path / "calls.log", tmp_path / "logged-mcp-memory"
    wrapper.write_text(f'#!/bin/sh\necho "$2 $* ${{MARK:-unset}}" >> {log}\n')
    wrapper.chmod(0o755)
    plugin = plugin_folder(tmp_path)
    config = {"command": str(wrapper), "args": ["--agent", "main"], "server": "memory",
              "agents": {"main": {"server": "memory", "args": ["--agent", "main"]},
                         "work": {"server": "memory-work", "args": ["--agent", "work"]}}}
    servers = {"memory": {"env": {"MARK": "main-env"}}, "memory-work": {"env": {"MARK": "work-env"}}}
    await drive_plugin(tmp_path, plugin / "index.js", config, """\
        const messages = [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }];
        await handlers["agent_end"]({ messages }, { agentId: "work", sessionId: "a" });
        await handlers["session_end"]({ sessionId: "b", messages }, { sessionId: "b", sessionKey: "agent:work:x" });
        await handlers["agent_end"]({ messages }, { agentId: "main", sessionId: "c" });
        await handlers["agent_end"]({ messages }, { agentId: "ops", sessionId: "d" });
        console.log("{}");
    """, openclaw_config={"mcp": {"servers": servers}})
    calls = sorted(line.split(" ", 1)[0] + " " + line.split("--harness openclaw ", 1)[1]
                   for line in log.read_text().splitlines())
    assert calls == ["session-end --agent work work-env", "stop --agent main main-env",
                     "stop --agent main main-env", "stop --agent work work-env"], calls


async def test_two_agents_captures_land_in_two_namespaces_and_each_one_s_tools_see_its_own(
        database: Database, db_url: str, tmp_path: Path) -> None:
    """The plugin's own code under Node gets one turn from each agent; each agent's server entry,
    started as OpenClaw starts it, finds its agent's turn and not the other's."""
    from mcp import Client, StdioServerParameters

    home, garden, orchard, config = setup(tmp_path)
    out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url, "--user", "sam")
    assert out.returncode == 0, out.stderr
    data = read(config)
    hooked = data["plugins"]["entries"]["mcp-memory"]["config"]
    turns = {"main": (garden, "Remember that the greenhouse key is under the blue pot."),
             "work": (orchard, "Remember that the cider press is kept in the red barn.")}
    body = ""
    for agent, (workspace, said) in turns.items():
        # The agent's context as OpenClaw's agent hooks give it; session_end only names the key.
        body += textwrap.dedent(f"""\
            await handlers["agent_end"]({{ success: true, messages: [
                {{ role: "user", content: [{{ type: "text", text: {json.dumps(said)} }}] }},
                {{ role: "assistant", content: [{{ type: "text", text: "Noted." }}] }}] }},
              {{ agentId: "{agent}", sessionId: "s-{agent}", sessionKey: "agent:{agent}:main",
                 workspaceDir: {json.dumps(str(workspace))} }});
        """)
    await drive_plugin(tmp_path, home / ".openclaw" / "extensions" / "mcp-memory" / "index.js", hooked,
                       body + "console.log('{}');\n", openclaw_config=data)
    env = {k: os.environ[k] for k in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "MCP_MEMORY_RESIDENT")
           if k in os.environ}
    found: dict[str, list[str]] = {}
    for name, query in (("memory", "greenhouse key"), ("memory-work", "cider press")):
        server = data["mcp"]["servers"][name]
        params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd=str(tmp_path))
        async with Client(params) as client:
            with anyio.fail_after(120):
                while not found.get(name):   # the capture runs detached from the hook
                    result = await client.call_tool("memory_search", {"query": query})
                    found[name] = [str(h["snippet"]) for h in result.structured_content["hits"]]
                    if not found[name]:
                        await anyio.sleep(0.5)
            other = await client.call_tool("memory_search", {"query": "greenhouse key cider press barn pot"})
            found[name] += [str(h["snippet"]) for h in other.structured_content["hits"]]
    assert any("blue pot" in s for s in found["memory"]) and not any("red barn" in s for s in found["memory"])
    assert any("red barn" in s for s in found["memory-work"]) and not any("blue pot" in s for s in found["memory-work"])


async def test_openclaw_itself_accepts_two_agents_entries(tmp_path: Path) -> None:
    """OpenClaw 2026.9's own validation of what install wrote (skipped without OpenClaw)."""
    openclaw = openclaw_cli()
    home, _, _, config = setup(tmp_path)
    assert cli("install", "openclaw", "--home", str(home)).returncode == 0
    env = {**os.environ, "HOME": str(home)}
    env.pop("OPENCLAW_CONFIG_PATH", None)
    env.pop("OPENCLAW_STATE_DIR", None)
    with anyio.fail_after(300):
        valid = await anyio.run_process([openclaw, "config", "validate"], cwd=tmp_path, env=env, check=False)
    assert valid.returncode == 0 and b"Config valid" in valid.stdout, valid.stdout + valid.stderr


async def test_real_openclaw_turns_of_two_agents_each_see_only_their_own_memory(
        database: Database, db_url: str, tmp_path: Path) -> None:
    """`openclaw agent --local` turns (a loopback stand-in for the model): each agent's captured
    turn is found by that agent's own memory_search, through OpenClaw's tool_search / tool_call,
    and the other agent's memory server is not in its catalog at all (skipped without OpenClaw)."""
    import re

    from mcp import Client, StdioServerParameters

    from .openclaw_standin import StandIn

    openclaw = openclaw_cli()
    home, garden, orchard, config = setup(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("OPENCLAW_CONFIG_PATH", None)
    env.pop("OPENCLAW_STATE_DIR", None)
    with StandIn() as model:
        data = read(config)
        data["agents"]["defaults"] = {"model": {"primary": "stand/m1"}}
        data["models"] = {"providers": {"stand": model.provider()}}
        config.write_text(json.dumps(data))
        out = cli("install", "openclaw", "--home", str(home), "--database-url", db_url, "--user", "sam")
        assert out.returncode == 0, out.stderr
        # OpenClaw gives its MCP servers only a few of its own variables (not the suite's
        # MCP_MEMORY_RESIDENT=false), so each would relay to a resident server it starts and leaves
        # running: the entries serve in-process, as a user keeps them (docs/operations.md).
        data = read(config)
        for server in data["mcp"]["servers"].values():
            server.setdefault("env", {})["MCP_MEMORY_RESIDENT"] = "false"
        config.write_text(json.dumps(data))

        async def turn(agent: str, session: str, said: str) -> str:
            with anyio.fail_after(400):
                run = await anyio.run_process([openclaw, "agent", "--local", "--agent", agent, "--session-id",
                                               session, "-m", said], cwd=elsewhere, env=env, check=False)
            assert run.returncode == 0, run.stderr.decode()[-3000:]
            return model.seen()

        await turn("main", "m-1", "Remember that the greenhouse key is under the blue pot.")
        await turn("work", "w-1", "Remember that the cider press is kept in the red barn.")
        servers = read(config)["mcp"]["servers"]
        for name, said in (("memory", "blue pot"), ("memory-work", "red barn")):   # captures are detached
            params = StdioServerParameters(command=servers[name]["command"], args=servers[name]["args"])
            async with Client(params) as client:
                hits = ""
                with anyio.fail_after(120):
                    while said not in hits:
                        hits = str((await client.call_tool("memory_search", {"query": said})).structured_content)
                        if said not in hits:
                            await anyio.sleep(0.5)
        for agent, mine, theirs, own in (("main", "blue pot", "red barn", "memory"),
                                         ("work", "red barn", "blue pot", "memory-work")):
            seen = await turn(agent, f"{agent}-2", "SEARCH: greenhouse key cider press barn pot")
            catalog = set(re.findall(r"mcp:([-\w]+):", seen))
            assert catalog == {own}, (agent, catalog)          # the other agent's server is not loaded
            assert mine in seen and theirs not in seen, (agent, seen[-3000:])
