"""`mcp-memory install|uninstall claude-code|openclaw`: the MCP server and the memory hooks in a
harness's own settings, in one command, with the change shown, the file backed up first, and a
way back (uninstall restores the original bytes).

Claude Code (settings as documented for Claude Code 2.x): MCP servers live in ~/.claude.json
(user scope) or .mcp.json (project scope) under `mcpServers`; hooks in ~/.claude/settings.json or
.claude/settings.json under `hooks.<Event>[] = {matcher?, hooks: [{type: command, command,
timeout}]}`. OpenClaw: ~/.openclaw/openclaw.json (or $OPENCLAW_CONFIG_PATH) gets `mcp.servers`,
and the plugin that forwards its hook events (openclaw_plugin.py) under `plugins`."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import openclaw_plugin
from .settings_files import (
    Change,
    SettingsFileError,
    apply,
    backup_path,
    diff,
    finish_restore,
    plan,
    read_state,
    restore,
)

SERVER = "memory"
# (Claude Code event, our event, timeout in seconds, matcher, run in the background). Capture after
# each reply must not hold up the next prompt (`async`, Claude Code 2.1 command hooks); at session
# end it runs in the foreground, as the last chance before the process goes.
CLAUDE_HOOKS = [("SessionStart", "session-start", 10, "startup|resume|clear|compact", False),
                ("UserPromptSubmit", "prompt-submit", 5, None, False),
                ("Stop", "stop", 60, None, True),
                ("PreCompact", "pre-compact", 60, None, True),
                ("SessionEnd", "session-end", 60, None, False)]

Edit = Callable[[dict[str, Any]], None]


def executable() -> str:
    """This mcp-memory, by absolute path, so the harness runs the same one whatever its PATH."""
    me = Path(sys.argv[0])
    if me.name == "mcp-memory" and me.exists():
        return str(me.resolve())
    return shutil.which("mcp-memory") or "mcp-memory"


def _ours_command(command: Any) -> bool:
    return isinstance(command, str) and "mcp-memory" in command and " hook " in command


def _ours_server(server: Any) -> bool:
    return (isinstance(server, dict) and Path(str(server.get("command", ""))).name == "mcp-memory"
            and (server.get("args") or [None])[0] == "serve")


def _object(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise SettingsFileError(f"{where}.{key} is a {type(value).__name__}, not an object; not changed")
    return value


def _drop_empty(parent: dict[str, Any], key: str, original: dict[str, Any]) -> None:
    """Take out a container left empty, unless the original file had it."""
    if parent.get(key) in ({}, []) and key not in original:
        del parent[key]


# --- Claude Code ---------------------------------------------------------------------------------

def claude_files(scope: str, home: Path, project: Path) -> tuple[Path, Path]:
    if scope == "project":
        return project / ".mcp.json", project / ".claude" / "settings.json"
    return home / ".claude.json", home / ".claude" / "settings.json"


def claude_server(exe: str, flags: list[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": exe, "args": ["serve", *flags], "env": {}}


def add_claude_server(exe: str, flags: list[str], path: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        servers = _object(data, "mcpServers", str(path))
        existing = servers.get(SERVER)
        if existing is not None and not _ours_server(existing):
            raise SettingsFileError(f"{path} already has an MCP server named {SERVER!r} that is not mcp-memory; "
                                    "not changed (rename or remove it first)")
        servers.setdefault(SERVER, claude_server(exe, flags))
    return edit


def add_claude_hooks(exe: str, flags: list[str], path: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        hooks = _object(data, "hooks", str(path))
        for event, ours, timeout, matcher, background in CLAUDE_HOOKS:
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise SettingsFileError(f"{path}: hooks.{event} is not a list; not changed")
            if any(_ours_command(h.get("command")) for g in groups if isinstance(g, dict)
                   for h in g.get("hooks", []) if isinstance(h, dict)):
                continue
            group: dict[str, Any] = {"matcher": matcher} if matcher else {}
            command: dict[str, Any] = {"type": "command", "command": shlex.join([exe, "hook", ours, *flags]),
                                       "timeout": timeout}
            if background:
                command["async"] = True
            group["hooks"] = [command]
            groups.append(group)
    return edit


def strip_claude(original: dict[str, Any]) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        servers = data.get("mcpServers")
        if isinstance(servers, dict) and _ours_server(servers.get(SERVER)) \
                and not _ours_server((original.get("mcpServers") or {}).get(SERVER)):
            del servers[SERVER]
            _drop_empty(data, "mcpServers", original)
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            for event in list(hooks):
                groups = hooks[event]
                if not isinstance(groups, list):
                    continue
                hooks[event] = [g for g in groups if not (isinstance(g, dict) and any(
                    _ours_command(h.get("command")) for h in g.get("hooks", []) if isinstance(h, dict)))]
                _drop_empty(hooks, event, original.get("hooks") or {})
            _drop_empty(data, "hooks", original)
    return edit


# --- OpenClaw ------------------------------------------------------------------------------------

def openclaw_file(home: Path | None) -> Path:
    if home is None and os.environ.get("OPENCLAW_CONFIG_PATH"):
        return Path(os.environ["OPENCLAW_CONFIG_PATH"]).expanduser()
    if home is None and os.environ.get("OPENCLAW_STATE_DIR"):
        return Path(os.environ["OPENCLAW_STATE_DIR"]).expanduser() / "openclaw.json"
    return (home or Path.home()) / ".openclaw" / "openclaw.json"


def plugin_dir(config: Path) -> Path:
    return config.parent / "extensions" / openclaw_plugin.PLUGIN_ID


def add_openclaw(exe: str, flags: list[str], path: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        servers = _object(_object(data, "mcp", str(path)), "servers", f"{path}: mcp")
        existing = servers.get(SERVER)
        if existing is not None and not _ours_server(existing):
            raise SettingsFileError(f"{path} already has an MCP server named {SERVER!r} that is not mcp-memory; "
                                    "not changed (rename or remove it first)")
        servers.setdefault(SERVER, {"command": exe, "args": ["serve", *flags], "env": {"MCP_MEMORY_AGENT": "openclaw"}})
        plugins = _object(data, "plugins", str(path))
        load = _object(plugins, "load", f"{path}: plugins")
        paths = load.setdefault("paths", [])
        if not isinstance(paths, list):
            raise SettingsFileError(f"{path}: plugins.load.paths is not a list; not changed")
        folder = str(plugin_dir(path))
        if folder not in paths:
            paths.append(folder)
        entries = _object(plugins, "entries", f"{path}: plugins")
        entries.setdefault(openclaw_plugin.PLUGIN_ID, {
            "enabled": True,
            # agent_end carries the conversation only with conversation access; prependContext
            # from before_prompt_build needs prompt injection allowed.
            "hooks": {"allowConversationAccess": True, "allowPromptInjection": True},
            "config": {"command": exe, "args": flags}})
    return edit


def strip_openclaw(original: dict[str, Any], path: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        mcp, plugins = data.get("mcp"), data.get("plugins")
        o_mcp, o_plugins = original.get("mcp") or {}, original.get("plugins") or {}
        if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict):
            if _ours_server(mcp["servers"].get(SERVER)) and SERVER not in (o_mcp.get("servers") or {}):
                del mcp["servers"][SERVER]
            _drop_empty(mcp, "servers", o_mcp)
            _drop_empty(data, "mcp", original)
        if isinstance(plugins, dict):
            load = plugins.get("load")
            if isinstance(load, dict) and isinstance(load.get("paths"), list):
                load["paths"] = [x for x in load["paths"] if x != str(plugin_dir(path))
                                 or x in ((o_plugins.get("load") or {}).get("paths") or [])]
                _drop_empty(load, "paths", o_plugins.get("load") or {})
                _drop_empty(plugins, "load", o_plugins)
            entries = plugins.get("entries")
            if isinstance(entries, dict) and openclaw_plugin.PLUGIN_ID not in (o_plugins.get("entries") or {}):
                entries.pop(openclaw_plugin.PLUGIN_ID, None)
                _drop_empty(plugins, "entries", o_plugins)
            _drop_empty(data, "plugins", original)
    return edit


# --- commands ------------------------------------------------------------------------------------

def _targets(harness: str, scope: str, home: Path, project: Path) -> list[Path]:
    if harness == "claude-code":
        return list(claude_files(scope, home, project))
    return [openclaw_file(home if home != Path.home() else None)]


def install(harness: str, *, scope: str = "user", project_dir: Path, home: Path | None = None,
            dry_run: bool = False, passthrough: list[str] | None = None) -> int:
    home = home or Path.home()
    exe, flags = executable(), passthrough or []
    if harness == "openclaw" and scope != "user":
        print("error: OpenClaw has one configuration file; use --scope user", file=sys.stderr)
        return 2
    targets = _targets(harness, scope, home, project_dir)
    try:
        for path in targets:
            if read_state(path) is not None:
                print(f"already installed in {path} (run `mcp-memory uninstall {harness}` first)")
                return 0
        if harness == "claude-code":
            changes = [plan(targets[0], add_claude_server(exe, flags, targets[0])),
                       plan(targets[1], add_claude_hooks(exe, flags, targets[1]))]
        else:
            changes = [plan(targets[0], add_openclaw(exe, flags, targets[0]))]
    except SettingsFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for change in changes:
        print(diff(change.path, change.before, change.after) or f"{change.path}: no change needed")
    if dry_run:
        print("dry run: nothing written")
        return 0
    for change in changes:
        extra: dict[str, Any] = {}
        if harness == "openclaw":
            extra["plugin_files"] = _write_plugin(plugin_dir(change.path))
        apply(change, extra)
        backup = f", backup {change.path.name}.mcp-memory.bak" if change.before is not None else ""
        print(f"changed {change.path}{backup}")
    print(f"installed for {harness}; `mcp-memory uninstall {harness}"
          f"{' --scope project' if scope == 'project' else ''}` puts everything back")
    return 0


def _write_plugin(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in openclaw_plugin.files().items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(str(folder / name))
    print(f"wrote the OpenClaw plugin to {folder}")
    return written


def uninstall(harness: str, *, scope: str = "user", project_dir: Path, home: Path | None = None,
              dry_run: bool = False, passthrough: list[str] | None = None) -> int:
    home = home or Path.home()
    every = _targets(harness, scope, home, project_dir)
    targets = [p for p in every if read_state(p) is not None]
    if not targets:
        print(f"nothing to undo: no install record next to {', '.join(map(str, every))}")
        return 0
    try:
        plans: list[tuple[Change, str, dict[str, Any]]] = []
        for path in targets:
            state = read_state(path) or {}
            backup = backup_path(path)
            original = _parse_or_empty(backup) if backup.exists() else {}
            strip = strip_claude(original) if harness == "claude-code" else strip_openclaw(original, path)
            change, how = restore(path, strip)
            plans.append((change, how, state))
    except SettingsFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for change, how, _ in plans:
        print(diff(change.path, change.before, change.after) if how != "gone" else f"{change.path} is gone already")
    if dry_run:
        print("dry run: nothing written")
        return 0
    for change, how, state in plans:
        finish_restore(change, how)
        for name in state.get("plugin_files", []):
            Path(name).unlink(missing_ok=True)
        if state.get("plugin_files"):
            try:
                Path(state["plugin_files"][0]).parent.rmdir()
            except OSError:
                pass
        print({"restored": f"restored {change.path} exactly as it was",
               "removed": f"removed {change.path} (it did not exist before install)",
               "stripped": f"{change.path} changed since install: took out only mcp-memory's entries "
                           f"(the original is kept as {change.path.name}.mcp-memory.bak)",
               "gone": f"{change.path} no longer exists; install record removed"}[how])
    return 0


def _parse_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
