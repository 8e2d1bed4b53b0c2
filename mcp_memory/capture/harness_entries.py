"""What mcp-memory adds to each harness's settings, and how to find and take it out again: the MCP
server entry and the hook commands for Claude Code here, the server entry and the plugin for OpenClaw
in openclaw_entries.py, with what both read (`SERVER`, `ours_server`, the JSON helpers). Plain
data in, plain data out (settings_files.py reads and writes the files).

One namespace per harness session: the hooks and the MCP server must bind the same user, agent
and project, or the agent's memory_search cannot see what capture stored. Claude Code starts both
in the session's project directory. OpenClaw starts its MCP server wherever `openclaw` was
launched (with only HOME, LOGNAME, PATH, SHELL, TERM and USER of its environment) while its hooks
carry the agent's workspace, so install pins agent and project on both, and the plugin gives the
hooks the server's environment. Several OpenClaw agents get one entry each (openclaw_agents.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..hookprotocol import CAPTURE_EVENTS, EVENTS
from .settings_files import SettingsFileError

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
# What every lean hook command (install.hook_entry: the interpreter with -S, this code) holds.
LEAN_MARK = "from mcp_memory.hookline import main"
# A hook is a new process per prompt, and most of a warm hook is the interpreter starting: `-S` skips
# `site` (the scan of site-packages and its .pth files, the editable install's finder), -P keeps the
# working directory off sys.path (a project's own json.py is not imported). The package's folder,
# resolved at install, goes on sys.path directly; when it is gone (the package moved: another venv,
# editable to regular) `site` runs after all and finds wherever it is now: slower, never broken.
# Everything past the thin path calls site.main() itself (hookline.full). `stale_entry` reads the
# folder back (_LEAN_ROOT).
LEAN = ('import sys, os; p = {root}; sys.path.insert(0, p) if os.path.isdir(p + "/mcp_memory") '
        'else __import__("site").main(); ' + LEAN_MARK + '; sys.exit(main())')
_LEAN_ROOT = re.compile(r'p = ("(?:[^"\\]|\\.)*")')
# A capture hook ignores SIGTERM from the shell's first instruction, and the interpreter it execs
# inherits that: `claude -p` SIGTERMs its Stop hook milliseconds after starting it (the process is
# ending; SIGKILL follows ~1.5 s later), before an interpreter under load has reached its own
# signal.signal (hookline.main), and a session's turns were lost. The hook only hands off (ms).
TERM_IGNORED = "trap '' TERM; exec "


def _ours_command(command: Any) -> bool:
    """A hook command of ours: the console script's (`…/mcp-memory hook <event> …`), or the lean
    one install writes now (`python -S -P -c '…from mcp_memory.hookline import main…' hook <event> …`)."""
    return isinstance(command, str) and ("mcp-memory" in command or LEAN_MARK in command) and " hook " in command


def ours_server(server: Any) -> bool:
    return (isinstance(server, dict) and Path(str(server.get("command", ""))).name == "mcp-memory"
            and (server.get("args") or [None])[0] == "serve")


def object_at(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise SettingsFileError(f"{where}.{key} is a {type(value).__name__}, not an object; not changed")
    return value


def drop_empty(parent: dict[str, Any], key: str, original: dict[str, Any]) -> None:
    """Take out a container left empty, unless the original file had it."""
    if parent.get(key) in ({}, []) and key not in original:
        del parent[key]


def flag_value(flags: list[str], name: str) -> str | None:
    for i, item in enumerate(flags[:-1]):
        if item == name:
            return flags[i + 1]
    return None


# --- Claude Code ---------------------------------------------------------------------------------

def claude_files(scope: str, home: Path, project: Path) -> tuple[Path, Path]:
    if scope == "project":
        return project / ".mcp.json", project / ".claude" / "settings.json"
    return home / ".claude.json", home / ".claude" / "settings.json"


def claude_server(exe: str, flags: list[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": exe, "args": ["serve", *flags], "env": {}}


def add_claude_server(exe: str, flags: list[str], path: Path) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        servers = object_at(data, "mcpServers", str(path))
        existing = servers.get(SERVER)
        if existing is not None and not ours_server(existing):
            raise SettingsFileError(f"{path} already has an MCP server named {SERVER!r} that is not mcp-memory; "
                                    "not changed (rename or remove it first)")
        servers.setdefault(SERVER, claude_server(exe, flags))
    return edit


def add_claude_hooks(entry: list[str], flags: list[str], path: Path, posix: bool) -> Edit:
    """Our hook for each event: `entry` (the command that runs mcp-memory: install.hook_entry) and
    `hook <event>` with the flags, one shell command (Claude Code runs it through a shell); ours
    already there are brought to this form (`refresh_claude_hooks`)."""
    def edit(data: dict[str, Any]) -> None:
        hooks = object_at(data, "hooks", str(path))
        refresh_claude_hooks(entry, posix)(data)
        for event, ours, timeout, matcher, background in CLAUDE_HOOKS:
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise SettingsFileError(f"{path}: hooks.{event} is not a list; not changed")
            if _has_our_hook(groups):
                continue
            group: dict[str, Any] = {"matcher": matcher} if matcher else {}
            command: dict[str, Any] = {"type": "command", "command": hook_command(entry, ours, flags, posix),
                                       "timeout": timeout}
            if background:
                command["async"] = True
            group["hooks"] = [command]
            groups.append(group)
    return edit


def posix_shell(portable: bool) -> bool:
    """Whether the hook commands written go to a POSIX shell: this machine's, or, in a project's
    files (`portable`), those of every teammate, whom Claude Code runs hooks for on macOS and Linux."""
    return portable or os.name == "posix"


def hook_command(entry: Sequence[str], event: str, flags: Sequence[str], posix: bool) -> str:
    """One hook's shell command; a capture event's ignores SIGTERM (TERM_IGNORED) on a POSIX shell."""
    command = shlex.join([*entry, "hook", event, *flags])
    return TERM_IGNORED + command if event in CAPTURE_EVENTS and posix else command


@dataclass(frozen=True)
class HookCommand:
    """One of our hook commands read back: whether it ignores SIGTERM (`guarded`), its words before
    `hook` (`entry`), its event and flags; `exact` when joined again they are the command as
    written, so nothing a shell reads (`$VAR`, `~`, `2>/dev/null`, `|| true`) was added to it."""

    guarded: bool
    entry: tuple[str, ...]
    event: str
    flags: tuple[str, ...]
    exact: bool

    @property
    def install_wrote(self) -> bool:
        """As an install writes it (the console script, or an interpreter started lean), not a user's
        own wrapper (`nice …`, `env …`) or edit, which is theirs to change."""
        return self.exact and self.event in EVENTS and (
            (len(self.entry) == 1 and Path(self.entry[0]).name == "mcp-memory")
            or (len(self.entry) == 5 and list(self.entry[1:4]) == ["-S", "-P", "-c"] and LEAN_MARK in self.entry[4]))

    def unguarded_capture(self, posix: bool) -> bool:
        """A capture hook install would now write with TERM_IGNORED, written without it."""
        return self.install_wrote and self.event in CAPTURE_EVENTS and posix and not self.guarded


def read_hook(command: Any) -> HookCommand | None:
    """`command` read back, if it is ours and a shell's words."""
    if not _ours_command(command):
        return None
    body = command.removeprefix(TERM_IGNORED)
    try:
        words = shlex.split(body)
    except ValueError:
        return None
    at = words.index("hook") if "hook" in words else len(words)
    return HookCommand(guarded=command.startswith(TERM_IGNORED), entry=tuple(words[:at]),
                       event=words[at + 1] if at + 1 < len(words) else "", flags=tuple(words[at + 2:]),
                       exact=shlex.join(words) == body)


def refresh_claude_hooks(entry: list[str], posix: bool) -> Edit:
    """Each hook command an install wrote (`HookCommand.install_wrote`), as install writes it now: a
    capture event's with TERM_IGNORED, and `entry` in place of its own only where that is stale (an
    interpreter gone, a package moved: `stale_entry`; a working one stays, beside the server entry
    that names it). Its event and flags are kept; nothing is added or taken out, and commands a
    user wrote or changed are left as they are."""
    def edit(data: dict[str, Any]) -> None:
        hooks = data.get("hooks")
        for groups in hooks.values() if isinstance(hooks, dict) else []:
            for hook in _hook_entries(groups):
                found = read_hook(hook.get("command"))
                if found is not None and found.install_wrote:
                    kept = entry if stale_entry(found.entry) else found.entry
                    hook["command"] = hook_command(kept, found.event, found.flags, posix)
    return edit


def _hook_entries(groups: Any) -> Iterator[dict[str, Any]]:
    """Each hook (an object) in one event's groups, however the file shapes them."""
    for g in groups if isinstance(groups, list) else []:
        for h in (g.get("hooks") if isinstance(g, dict) and isinstance(g.get("hooks"), list) else []):
            if isinstance(h, dict):
                yield h


def _commands(groups: Any) -> Iterator[Any]:
    """The command of each hook in one event's groups."""
    return (h.get("command") for h in _hook_entries(groups))


def _has_our_hook(groups: Any) -> bool:
    return any(_ours_command(c) for c in _commands(groups))


def stale_entry(entry: Sequence[str]) -> str | None:
    """What is wrong with a hook command's entry (its words before `hook`) that no longer fits this
    machine: the interpreter gone (every hook fails), or, for the lean command, the package folder
    it was installed from (every hook pays for the site-packages scan the lean start skips); None
    when it fits."""
    if not entry:
        return None
    if os.path.isabs(entry[0]) and not os.access(entry[0], os.X_OK):
        return f"{entry[0]} is gone: the hooks cannot start"
    code = next((w for w in entry if LEAN_MARK in w), None)
    root = _LEAN_ROOT.search(code) if code else None
    if root is not None and not os.path.isdir(os.path.join(json.loads(root.group(1)), "mcp_memory")):
        return f"{json.loads(root.group(1))} no longer holds mcp_memory: the hooks start slowly"
    return None


def claude_stale_hooks(data: dict[str, Any], posix: bool) -> list[str]:
    """What no longer fits in our hook commands of a Claude Code settings file, each once:
    `stale_entry`, or a capture hook an install wrote without TERM_IGNORED (what
    `refresh_claude_hooks` rewrites)."""
    found = []
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    for hook in (read_hook(c) for groups in hooks.values() for c in _commands(groups)):
        if hook is None:
            continue
        why = stale_entry(hook.entry)
        if why is None and hook.unguarded_capture(posix):
            why = ("form is an earlier install's: `claude -p` can kill a capture hook (SIGTERM as it "
                   "exits) before it hands the turns off")
        if why and why not in found:
            found.append(why)
    return found


def claude_ours(data: dict[str, Any]) -> list[str]:
    """mcp-memory's entries in a Claude Code settings file, by where they are."""
    found = []
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and ours_server(servers.get(SERVER)):
        found.append(f"mcpServers.{SERVER}")
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        found += [f"hooks.{event}" for event, groups in hooks.items() if _has_our_hook(groups)]
    return found


def strip_claude(original: dict[str, Any]) -> Edit:
    """Take out every mcp-memory entry; containers emptied go unless `original` had them with
    something of the user's in them, or empty (an earlier install's hooks in the original are
    not the user's)."""
    hooks_before = original.get("hooks")
    if isinstance(hooks_before, dict):
        users = {e: g for e, g in hooks_before.items()
                 if not isinstance(g, list) or not g or not all(_has_our_hook([x]) for x in g)}
        original = {**original, "hooks": users} if users or not hooks_before else \
            {k: v for k, v in original.items() if k != "hooks"}

    def edit(data: dict[str, Any]) -> None:
        servers = data.get("mcpServers")
        if isinstance(servers, dict) and ours_server(servers.get(SERVER)):
            del servers[SERVER]
            drop_empty(data, "mcpServers", original)
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            for event in list(hooks):
                groups = hooks[event]
                if not isinstance(groups, list):
                    continue
                hooks[event] = [g for g in groups if not _has_our_hook([g])]
                drop_empty(hooks, event, original.get("hooks") or {})
            drop_empty(data, "hooks", original)
    return edit


def shareable_flags(flags: list[str]) -> str | None:
    """Why these flags cannot go into project files a team commits (None: they can)."""
    if flag_value(flags, "--data-dir") is not None:
        return ("--data-dir is a path on this machine and --scope project files are shared with the team; "
                "set MCP_MEMORY_DATA_DIR in your environment instead, or use --scope user")
    url = flag_value(flags, "--database-url")
    if url is not None and urlsplit(url).password:
        return ("--database-url holds a password and --scope project files are shared with the team; "
                "set MCP_MEMORY_DATABASE_URL in your environment instead, or use --scope user")
    return None
