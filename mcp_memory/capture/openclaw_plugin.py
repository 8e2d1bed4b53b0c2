"""The OpenClaw plugin `mcp-memory install openclaw` writes: OpenClaw's hooks run inside its
gateway (plugin hooks registered with api.on), so this small plugin hands each event to
`mcp-memory hook <event> --harness openclaw` and returns what it prints. Its files are package
data in openclaw-plugin/ (the one copy: install writes them out verbatim); it has no dependencies.

Events used (OpenClaw plugin hooks): session_start (asks for the session-start block, handed over
with the session's first prompt), before_prompt_build (prompt-submit, one hook per prompt; returns
prependContext), agent_end (capture, needs hooks.allowConversationAccess), before_compaction and
session_end (capture). Hooks run with the environment OpenClaw gives its MCP servers (HOME, PATH,
…, and the server entry's env) and the server entry's flags: one namespace for capture and tools.
With several agents (openclaw_agents.py) each event's hook takes the flags and env of its agent's
own server entry (`config.agents`, by the event's agentId or its session key)."""

from __future__ import annotations

from importlib import resources

PLUGIN_ID = "mcp-memory"
# A folder of data files, not a Python package: pyproject.toml ships it as package data.
FOLDER = "openclaw-plugin"
NAMES = ("openclaw.plugin.json", "package.json", "index.js")


def files() -> dict[str, str]:
    folder = resources.files(__package__).joinpath(FOLDER)
    return {name: folder.joinpath(name).read_text(encoding="utf-8") for name in NAMES}
