"""`mcp-memory doctor`'s look at the harnesses: is what `mcp-memory install` wrote still in effect?
An install can be undone without uninstall: the server entry disabled, the plugin left off an allow
list, hooks switched off, another `memory` server in a project that takes precedence, an entry the
user made that is not pinned to the hooks' namespace, one of several OpenClaw agents without its
own entry or loading another's. Each shows as a failed check with its fix;
a harness with nothing of ours is not mentioned. Reads files only: no database, no harness run."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ..checks import Check
from .harness_entries import (
    SERVER,
    claude_files,
    claude_ours,
    claude_stale_hooks,
    flag_value,
    ours_server,
    posix_shell,
    stale_entry,
)
from .openclaw_agents import check as check_agents
from .openclaw_entries import openclaw_file, openclaw_ours
from .openclaw_plugin import PLUGIN_ID
from .settings_files import SettingsFileError, load


def harness_checks(home: Path | None = None, project: Path | None = None) -> list[Check]:
    """One check per harness that has mcp-memory installed (user scope under `home`, Claude Code's
    project scope in `project`)."""
    return [c for c in (_claude_code(home or Path.home(), project or Path.cwd()), _openclaw(home)) if c]


def stale_claude_hooks(home: Path, project: Path) -> list[tuple[str, str]]:
    """What no longer fits in our hook commands of the user's and the project's Claude Code
    settings (`claude_stale_hooks`), each once: (why, the install command that rewrites them)."""
    found: dict[tuple[str, str], None] = {}
    for scope in ("user", "project"):
        portable = scope == "project"
        fix = "mcp-memory install claude-code" + (
            f" --scope project --project-dir {shlex.quote(str(project))}" if portable else "")
        for why in claude_stale_hooks(_read(claude_files(scope, home, project)[1]), posix_shell(portable)):
            found.setdefault((why, fix), None)
    return list(found)


def _read(path: Path, flavor: str = "json") -> dict[str, Any]:
    try:
        return load(path, flavor)[0]  # type: ignore[arg-type]
    except SettingsFileError:
        return {}


def _claude_code(home: Path, project: Path) -> Check | None:
    user_servers, user_settings = (_read(p) for p in claude_files("user", home, project))
    project_servers, project_settings = (_read(p) for p in claude_files("project", home, project))
    local_settings = _read(project / ".claude" / "settings.local.json")
    ours = [*claude_ours(user_servers), *claude_ours(user_settings), *claude_ours(project_servers),
            *claude_ours(project_settings)]
    if not ours:
        return None
    problems, fixes = [], []
    has_server = any(x.startswith("mcpServers") for x in ours)
    has_hooks = any(x.startswith("hooks") for x in ours)
    if not has_server:
        problems.append("the hooks are installed but not the MCP server: the agent has no memory tools")
    if not has_hooks:
        problems.append("the MCP server is installed but not the hooks: nothing is captured or recalled")
    for name, settings in (("~/.claude/settings.json", user_settings), (".claude/settings.json", project_settings),
                           (".claude/settings.local.json", local_settings)):
        if settings.get("disableAllHooks") is True:
            problems.append(f"{name} sets disableAllHooks: no hook runs")
            fixes.append(f"remove disableAllHooks from {name}")
        disabled = settings.get("disabledMcpjsonServers")
        if isinstance(disabled, list) and SERVER in disabled:
            problems.append(f"{name} lists {SERVER!r} in disabledMcpjsonServers")
            fixes.append(f"take {SERVER!r} out of disabledMcpjsonServers in {name}")
    for why, fix in stale_claude_hooks(home, project):
        problems.append(f"a hook command's {why}")
        fixes.append(f"run `{fix}` again (it rewrites the hook commands an install wrote as this version writes "
                     "them)")
    # A project's .mcp.json takes precedence over the user's ~/.claude.json for a server of one name.
    theirs = (project_servers.get("mcpServers") or {}).get(SERVER) if isinstance(
        project_servers.get("mcpServers"), dict) else None
    if theirs is not None and not ours_server(theirs) and any(x.startswith("mcpServers") for x in
                                                               claude_ours(user_servers)):
        problems.append(f"{project / '.mcp.json'} has another server named {SERVER!r}, which shadows mcp-memory "
                        "in this project")
        fixes.append(f"rename or remove the {SERVER!r} server in {project / '.mcp.json'}")
    if problems:
        return Check("claude-code", False, "; ".join(problems),
                     "; ".join(fixes) or "run `mcp-memory install claude-code` again")
    return Check("claude-code", True, f"server and hooks installed ({', '.join(sorted(set(ours)))})")


def _openclaw(home: Path | None) -> Check | None:
    path = openclaw_file(home)
    data = _read(path, "json5")
    ours = openclaw_ours(path)(data)
    if not ours:
        return None
    problems, fixes = [], []
    plugins = data.get("plugins") if isinstance(data.get("plugins"), dict) else {}
    entry = (plugins.get("entries") or {}).get(PLUGIN_ID) if isinstance(plugins.get("entries"), dict) else None
    if plugins.get("enabled") is False:
        problems.append("plugins.enabled is false: no plugin runs")
        fixes.append("set plugins.enabled to true")
    allow, deny = plugins.get("allow"), plugins.get("deny")
    if isinstance(allow, list) and PLUGIN_ID not in allow:
        problems.append(f"plugins.allow does not name {PLUGIN_ID!r}: its hooks never run")
        fixes.append(f"add {PLUGIN_ID!r} to plugins.allow")
    if isinstance(deny, list) and PLUGIN_ID in deny:
        problems.append(f"plugins.deny names {PLUGIN_ID!r}")
        fixes.append(f"take {PLUGIN_ID!r} out of plugins.deny")
    if not isinstance(entry, dict):
        problems.append("the plugin's entry is missing: nothing is captured or recalled")
    else:
        if entry.get("enabled") is False:
            problems.append(f"plugins.entries.{PLUGIN_ID}.enabled is false")
            fixes.append(f"set plugins.entries.{PLUGIN_ID}.enabled to true")
        hooks = entry.get("hooks") if isinstance(entry.get("hooks"), dict) else {}
        for flag, what in (("allowConversationAccess", "capture"), ("allowPromptInjection", "recall")):
            if hooks.get(flag) is False:
                problems.append(f"hooks.{flag} is false: no {what}")
                fixes.append(f"set plugins.entries.{PLUGIN_ID}.hooks.{flag} to true")
        config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
        command = config.get("hookCommand")
        if isinstance(command, list) and (why := stale_entry([str(w) for w in command])):
            problems.append(f"the hook command's {why}")
            fixes.append("run `mcp-memory uninstall openclaw`, then `mcp-memory install openclaw` again "
                         "(it writes this interpreter's command)")
    servers = (data.get("mcp") or {}).get("servers") if isinstance(data.get("mcp"), dict) else None
    server = servers.get(SERVER) if isinstance(servers, dict) else None
    if not ours_server(server):
        problems.append("the MCP server entry is missing: the agent has no memory tools")
    elif isinstance(entry, dict) and isinstance(entry.get("config"), dict):
        pinned = [str(a) for a in (server.get("args") or [])[1:]]
        hooked = [str(a) for a in entry["config"].get("args") or []]
        for flag in ("--agent", "--project"):
            if flag_value(pinned, flag) != flag_value(hooked, flag):
                problems.append(f"the MCP server's {flag} ({flag_value(pinned, flag) or 'unset'}) is not the "
                                f"hooks' ({flag_value(hooked, flag) or 'unset'}): the agent's tools do not see "
                                "what capture stores")
                fixes.append("run `mcp-memory install openclaw` again (it pins the server to the hooks' namespace)")
                break
    hooked = entry.get("config") if isinstance(entry, dict) and isinstance(entry.get("config"), dict) else {}
    agent_problems, agent_fixes, note = check_agents(data, hooked)
    problems, fixes = problems + agent_problems, fixes + agent_fixes
    if problems:
        return Check("openclaw", False, "; ".join(problems), "; ".join(dict.fromkeys(fixes)) or
                     "run `mcp-memory install openclaw` again")
    said = f"server and plugin installed and enabled in {path}"
    return Check("openclaw", True, said + (f"; note: {note}" if note else ""))
