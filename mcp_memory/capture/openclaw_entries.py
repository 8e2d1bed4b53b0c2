"""What mcp-memory adds to OpenClaw's settings (openclaw.json), and how to find and take it out
again: the `memory` server entry and the plugin that runs the hooks, with the agent and project
pinned on both (harness_entries.py says why). Plain data in, plain data out."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..auth import NO_PROJECT, git_project
from . import openclaw_plugin
from .harness_entries import SERVER, Edit, drop_empty, flag_value, object_at, ours_server
from .settings_files import SettingsFileError

OPENCLAW_AGENT = "openclaw"


def openclaw_file(home: Path | None) -> Path:
    if home is None and os.environ.get("OPENCLAW_CONFIG_PATH"):
        return Path(os.environ["OPENCLAW_CONFIG_PATH"]).expanduser()
    if home is None and os.environ.get("OPENCLAW_STATE_DIR"):
        return Path(os.environ["OPENCLAW_STATE_DIR"]).expanduser() / "openclaw.json"
    return (home or Path.home()) / ".openclaw" / "openclaw.json"


def plugin_dir(config: Path) -> Path:
    return config.parent / "extensions" / openclaw_plugin.PLUGIN_ID


def openclaw_workspace(config: Path, data: dict[str, Any]) -> Path:
    """The default agent's workspace as OpenClaw resolves it (agents.defaults.workspace, else the
    `workspace` folder beside the config)."""
    agents = data.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    where = defaults.get("workspace") if isinstance(defaults, dict) else None
    return Path(where).expanduser() if isinstance(where, str) and where.strip() else config.parent / "workspace"


def openclaw_flags(config: Path, data: dict[str, Any], flags: list[str]) -> list[str]:
    """The flags given, with the agent and project pinned: the same for the MCP server and every
    hook. The project is the one the hooks would take from the workspace (its git repository), so
    what was captured before stays in view; `none` (memories across projects) when it has none."""
    out = list(flags)
    if flag_value(out, "--agent") is None:
        out += ["--agent", OPENCLAW_AGENT]
    if flag_value(out, "--project") is None:
        out += ["--project", git_project(openclaw_workspace(config, data)) or NO_PROJECT]
    return out


def openclaw_server(exe: str, flags: list[str]) -> dict[str, Any]:
    return {"command": exe, "args": ["serve", *flags]}


def add_openclaw(exe: str, flags: list[str], path: Path, agents: dict[str, Any] | None = None,
                 entry: list[str] | None = None) -> Edit:
    """The `memory` server entry, the plugin and its entry; with several agents, `agents` maps each
    agent id to the server entry and flags of its own (openclaw_agents.py) for the hooks. `entry`:
    the command the plugin runs hooks with (install.hook_entry), when it is not `exe`."""
    def edit(data: dict[str, Any]) -> None:
        servers = object_at(object_at(data, "mcp", str(path)), "servers", f"{path}: mcp")
        existing = servers.get(SERVER)
        if existing is not None and not ours_server(existing):
            raise SettingsFileError(f"{path} already has an MCP server named {SERVER!r} that is not mcp-memory; "
                                    "not changed (rename or remove it first)")
        if existing is None:
            servers[SERVER] = openclaw_server(exe, flags)
        else:
            # The user's own entry for mcp-memory (`openclaw mcp add memory -- mcp-memory serve`): pinned
            # as the hooks are, so tools and hooks share one namespace; uninstall puts it back as it was.
            existing["args"] = ["serve", *flags]
        plugins = object_at(data, "plugins", str(path))
        allow = plugins.get("allow")
        # With an allow list, OpenClaw loads only the plugins it names: ours must be on it.
        if isinstance(allow, list) and openclaw_plugin.PLUGIN_ID not in allow:
            allow.append(openclaw_plugin.PLUGIN_ID)
        load_ = object_at(plugins, "load", f"{path}: plugins")
        paths = load_.setdefault("paths", [])
        if not isinstance(paths, list):
            raise SettingsFileError(f"{path}: plugins.load.paths is not a list; not changed")
        folder = str(plugin_dir(path))
        if folder not in paths:
            paths.append(folder)
        entries = object_at(plugins, "entries", f"{path}: plugins")
        entries.setdefault(openclaw_plugin.PLUGIN_ID, {
            "enabled": True,
            # agent_end carries the conversation only with conversation access; prependContext
            # from before_prompt_build needs prompt injection allowed.
            "hooks": {"allowConversationAccess": True, "allowPromptInjection": True},
            # The same command and flags as the server entry: hooks and tools share one namespace.
            "config": {"command": exe, "args": flags, "server": SERVER, **({"agents": agents} if agents else {}),
                       **({"hookCommand": entry} if entry and entry != [exe] else {})}})
    return edit


def openclaw_ours(path: Path) -> Callable[[dict[str, Any]], list[str]]:
    def ours(data: dict[str, Any]) -> list[str]:
        found = []
        mcp, plugins = data.get("mcp"), data.get("plugins")
        if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict) and ours_server(mcp["servers"].get(SERVER)):
            found.append(f"mcp.servers.{SERVER}")
        if isinstance(plugins, dict):
            load_ = plugins.get("load")
            if isinstance(load_, dict) and isinstance(load_.get("paths"), list) \
                    and str(plugin_dir(path)) in load_["paths"]:
                found.append("plugins.load.paths")
            if isinstance(plugins.get("entries"), dict) and openclaw_plugin.PLUGIN_ID in plugins["entries"]:
                found.append(f"plugins.entries.{openclaw_plugin.PLUGIN_ID}")
            if isinstance(plugins.get("allow"), list) and openclaw_plugin.PLUGIN_ID in plugins["allow"]:
                found.append("plugins.allow")
        return found
    return ours


def strip_openclaw(original: dict[str, Any], path: Path) -> Edit:
    """Take out every mcp-memory entry; containers emptied go unless `original` had them."""
    def edit(data: dict[str, Any]) -> None:
        mcp, plugins = data.get("mcp"), data.get("plugins")
        o_mcp, o_plugins = original.get("mcp") or {}, original.get("plugins") or {}
        if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):
            theirs = (o_mcp.get("servers") or {}).get(SERVER) if isinstance(o_mcp.get("servers"), dict) else None
            if ours_server(mcp["servers"].get(SERVER)):
                if ours_server(theirs):  # the user made it before install: as it was
                    mcp["servers"][SERVER] = theirs
                else:
                    del mcp["servers"][SERVER]
            drop_empty(mcp, "servers", o_mcp)
            drop_empty(data, "mcp", original)
        if isinstance(plugins, dict):
            load_ = plugins.get("load")
            if isinstance(load_, dict) and isinstance(load_.get("paths"), list):
                load_["paths"] = [x for x in load_["paths"] if x != str(plugin_dir(path))]
                drop_empty(load_, "paths", o_plugins.get("load") or {})
                drop_empty(plugins, "load", o_plugins)
            entries = plugins.get("entries")
            if isinstance(entries, dict):
                entries.pop(openclaw_plugin.PLUGIN_ID, None)
                drop_empty(plugins, "entries", o_plugins)
            allow, o_allow = plugins.get("allow"), o_plugins.get("allow")
            if isinstance(allow, list) and not (isinstance(o_allow, list) and openclaw_plugin.PLUGIN_ID in o_allow):
                plugins["allow"] = [x for x in allow if x != openclaw_plugin.PLUGIN_ID]
            drop_empty(data, "plugins", original)
    return edit
