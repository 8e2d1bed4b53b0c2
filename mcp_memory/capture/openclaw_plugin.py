"""The OpenClaw plugin `mcp-memory install openclaw` writes: OpenClaw's hooks run inside its
gateway (plugin hooks registered with api.on), so this small plugin hands each event to
`mcp-memory hook <event> --harness openclaw` and returns what it prints. Its files are package
data in openclaw-plugin/ (the one copy: install writes them out verbatim); it has no dependencies.

Events used (OpenClaw plugin hooks): before_prompt_build (returns prependContext: session-start
context on a session's first prompt, auto-recall on every prompt), agent_end (capture, needs
hooks.allowConversationAccess), before_compaction and session_end (capture)."""

from __future__ import annotations

from importlib import resources

PLUGIN_ID = "mcp-memory"
# A folder of data files, not a Python package: pyproject.toml ships it as package data.
FOLDER = "openclaw-plugin"
NAMES = ("openclaw.plugin.json", "package.json", "index.js")


def files() -> dict[str, str]:
    folder = resources.files(__package__).joinpath(FOLDER)
    return {name: folder.joinpath(name).read_text(encoding="utf-8") for name in NAMES}
