"""`mcp-memory install|uninstall claude-code|openclaw`: the MCP server and the memory hooks in a
harness's own settings, in one command, with the change shown, the file backed up first, and a
way back (uninstall restores the original bytes, or says exactly what it could not restore).

Claude Code (settings as documented for Claude Code 2.x): MCP servers live in ~/.claude.json
(user scope) or .mcp.json (project scope) under `mcpServers`; hooks in ~/.claude/settings.json or
.claude/settings.json under `hooks.<Event>[] = {matcher?, hooks: [{type: command, command,
timeout}]}`. OpenClaw: ~/.openclaw/openclaw.json (JSON5; or $OPENCLAW_CONFIG_PATH) gets
`mcp.servers`, and the plugin that forwards its hook events (openclaw_plugin.py) under `plugins`.

What goes into each file, and how to find it again, is in harness_entries.py (Claude Code) and
openclaw_entries.py."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ..auth import git_project
from . import openclaw_agents, openclaw_plugin
from .harness_entries import (
    LEAN,
    add_claude_hooks,
    add_claude_server,
    claude_files,
    claude_ours,
    flag_value,
    posix_shell,
    refresh_claude_hooks,
    shareable_flags,
    strip_claude,
)
from .openclaw_entries import add_openclaw, openclaw_file, openclaw_flags, openclaw_ours, plugin_dir, strip_openclaw
from .settings_files import (
    Change,
    Flavor,
    SettingsFileError,
    Undo,
    apply,
    backup_path,
    backups,
    diff,
    finish_restore,
    load,
    parse,
    plan,
    read_state,
    restore,
    state_path,
    write_through,
)


def executable() -> str:
    """This mcp-memory, by absolute path, so the harness runs the same one whatever its PATH."""
    me = Path(sys.argv[0])
    if me.name == "mcp-memory" and me.exists():
        return str(me.resolve())
    return shutil.which("mcp-memory") or "mcp-memory"


def hook_entry(exe: str, portable: bool = False) -> list[str]:
    """The command a hook runs, before `hook <event> …`: this interpreter, lean (LEAN), where it
    can be (a POSIX system), else `exe`. `portable` (--scope project files, which name no path of
    this machine) keeps `exe`."""
    import mcp_memory

    if portable or os.name != "posix" or not sys.executable:
        return [exe]
    root = Path(mcp_memory.__file__).resolve().parent.parent
    return [sys.executable, "-S", "-P", "-c", LEAN.format(root=json.dumps(str(root)))]


# --- commands ------------------------------------------------------------------------------------

def _targets(harness: str, scope: str, home: Path, project: Path) -> list[Path]:
    if harness == "claude-code":
        return list(claude_files(scope, home, project))
    return [openclaw_file(home if home != Path.home() else None)]


def _flavor(harness: str) -> Flavor:
    return "json5" if harness == "openclaw" else "json"


def install(harness: str, *, scope: str = "user", project_dir: Path, home: Path | None = None,
            dry_run: bool = False, passthrough: list[str] | None = None) -> int:
    home = home or Path.home()
    exe, flags = executable(), list(passthrough or [])
    if harness == "openclaw" and scope != "user":
        print("error: OpenClaw has one configuration file; use --scope user", file=sys.stderr)
        return 2
    if scope == "project":
        # Files teams commit: no path of this machine, no secret. Each teammate's PATH finds
        # mcp-memory; the project is pinned by name so every clone and directory shares it.
        if why := shareable_flags(flags):
            print(f"error: {why}", file=sys.stderr)
            return 2
        exe = "mcp-memory"
        if flag_value(flags, "--project") is None:
            flags += ["--project", git_project(project_dir) or project_dir.name]
    targets = _targets(harness, scope, home, project_dir)
    agents: list[str] = []
    slots: list[openclaw_agents.Slot] = []
    allow_open = False
    try:
        for path in targets:
            if read_state(path) is not None:
                updated = _update_hooks(harness, scope, exe, targets, dry_run)
                if updated is None:
                    print(f"already installed in {path} (run `mcp-memory uninstall {harness}` first)")
                elif passthrough:
                    print(f"the flags given were not applied to the existing install (run `mcp-memory "
                          f"uninstall {harness}` first to change them)")
                return updated or 0
        if harness == "claude-code":
            changes = [plan(targets[0], add_claude_server(exe, flags, targets[0])),
                       plan(targets[1], add_claude_hooks(hook_entry(exe, scope == "project"), flags, targets[1],
                                                         posix_shell(scope == "project")))]
        else:
            data = load(targets[0], "json5")[0]
            allow_open = _allow_list_open(data)
            agents, slots = openclaw_agents.listed(data), openclaw_agents.slots(targets[0], data, flags)
            sole = None if flag_value(flags, "--project") else openclaw_agents.sole_project(targets[0], data)
            flags = list(slots[0].flags) if slots else openclaw_flags(targets[0], data, flags)
            if sole and not slots:   # a lone listed agent's own workspace, not the defaults'
                flags[flags.index("--project") + 1] = sole
            changes = [plan(targets[0], _openclaw_edit(exe, flags, targets[0], slots), "json5")]
    except SettingsFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not any(c.changed for c in changes) and (harness != "openclaw" or plugin_dir(targets[0]).is_dir()):
        print(f"already installed: {', '.join(str(c.path) for c in changes)} hold mcp-memory's entries, but "
              f"there is no install record ({state_path(targets[0]).name}); nothing written. "
              f"`mcp-memory uninstall {harness}` takes the entries out")
        return 0
    for change in changes:
        print(diff(change.path, change.before, change.after) or f"{change.path}: no change needed")
    if dry_run:
        print("dry run: nothing written")
        return 0
    for change in changes:
        extra: dict[str, Any] = {}
        try:
            if harness == "openclaw":
                extra["plugin_files"] = _write_plugin(plugin_dir(change.path))
            if not change.changed:
                continue
            backup = apply(change, extra)
        except (OSError, SettingsFileError) as exc:
            print(f"error: could not write {change.path}: {exc}; files already changed are listed above, "
                  f"and `mcp-memory uninstall {harness}` puts them back", file=sys.stderr)
            return 1
        link = f" (a link: wrote {Path(os.path.realpath(change.path))})" if change.path.is_symlink() else ""
        print(f"changed {change.path}{link}" + (f", backup {backup.name}" if backup else ""))
    _explain(harness, scope, exe, flags, agents, slots)
    if allow_open:
        # An allow list is exclusive: one naming only us would shut out the user's other plugins,
        # bundled ones too. So it stays theirs to write, and they are told how.
        pid = openclaw_plugin.PLUGIN_ID
        print(f"note: OpenClaw has no plugins.allow list, so at each start it warns that plugins it did not "
              f"install ({pid!r} among them) may load unverified. Install leaves the list unset: OpenClaw then "
              f"loads only the plugins it names, bundled ones too. To trust the plugins you use and silence "
              f"the warning: openclaw config set plugins.allow '[\"{pid}\", ...every other plugin you use]'")
    print(f"installed for {harness}; `mcp-memory uninstall {harness}"
          f"{' --scope project' if scope == 'project' else ''}` puts everything back")
    return 0


def _update_hooks(harness: str, scope: str, exe: str, targets: list[Path], dry_run: bool) -> int | None:
    """On an existing install, the Claude Code hook commands an install wrote brought to this
    version's form (`refresh_claude_hooks`), each keeping its own flags; the install record and its
    backup stay as they were, so uninstall still puts the file back. None when they are current
    already; else the exit status."""
    if harness != "claude-code" or not targets[1].exists():
        return None
    portable = scope == "project"
    try:
        change = plan(targets[1], refresh_claude_hooks(hook_entry(exe, portable), posix_shell(portable)))
        if not change.changed:
            return None
        print(diff(change.path, change.before, change.after))
        if dry_run:
            print("dry run: nothing written")
            return 0
        write_through(change.path, change.after)
    except (OSError, SettingsFileError) as exc:
        print(f"error: could not update the hook commands in {targets[1]}: {exc}; nothing was changed",
              file=sys.stderr)
        return 1
    print(f"updated mcp-memory's hook commands in {change.path} to this version's (each keeps its flags)")
    return 0


def _openclaw_edit(exe: str, flags: list[str], path: Path, slots: list[openclaw_agents.Slot]) -> Any:
    shared = add_openclaw(exe, flags, path, openclaw_agents.plugin_agents(slots), hook_entry(exe))
    own = openclaw_agents.add(slots, exe, path)

    def edit(data: dict[str, Any]) -> None:
        shared(data)
        own(data)
    return edit


def _openclaw_strip(original: dict[str, Any], path: Path) -> Any:
    own, shared = openclaw_agents.strip(original), strip_openclaw(original, path)

    def edit(data: dict[str, Any]) -> None:
        own(data)   # first: it finds our denies by the servers strip_openclaw takes out
        shared(data)
    return edit


def _openclaw_ours(path: Path) -> Any:
    shared = openclaw_ours(path)
    return lambda data: [*shared(data), *openclaw_agents.ours(data)]


def _allow_list_open(data: dict[str, Any]) -> bool:
    """Whether an OpenClaw config has no `plugins.allow` list (every discovered plugin loads)."""
    plugins = data.get("plugins")
    return not (isinstance(plugins, dict) and isinstance(plugins.get("allow"), list))


def _explain(harness: str, scope: str, exe: str, flags: list[str], agents: list[str],
             slots: list[openclaw_agents.Slot]) -> None:
    if harness == "openclaw" and slots:
        for slot in slots:
            print(f"OpenClaw agent {slot.agent!r}: its hooks and its server {slot.server!r} "
                  f"({slot.server}__memory_search, …) use agent {slot.agent!r} and project "
                  f"{flag_value(list(slot.flags), '--project')!r} (workspace {slot.workspace}); "
                  "the other agents' memory servers are denied to it (its tools.deny)")
    elif harness == "openclaw":
        print(f"OpenClaw's MCP server and its hooks both use agent {flag_value(flags, '--agent')!r} and project "
              f"{flag_value(flags, '--project')!r}, whatever directory openclaw starts in (--agent / --project "
              "to choose others)")
        if len(agents) > 1:
            # --agent pins one agent for all: one entry, one namespace, which every agent loads.
            print(f"note: OpenClaw lists {len(agents)} agents ({', '.join(agents)}); with --agent they share this "
                  "one namespace, tools and hooks alike (each sees what the others stored); install without "
                  "--agent gives each agent a server entry and namespace of its own")
    elif scope == "project":
        found = shutil.which("mcp-memory")
        print(f"project files name `mcp-memory` without a path (no path of this machine in files a team "
              f"commits), so it must be on each teammate's PATH; the project is pinned as "
              f"{flag_value(flags, '--project')!r}")
        if found is None or Path(found).resolve() != Path(executable()).resolve():
            print(f"warning: `mcp-memory` on this PATH is {found or 'missing'}, not {executable()}", file=sys.stderr)


def _write_plugin(folder: Path) -> list[str]:
    """The plugin's files; the folders made for them are listed first (uninstall removes them if empty)."""
    made = [str(f) for f in reversed([folder, *folder.parents]) if not f.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    written = [f + "/" for f in made]
    for name, text in openclaw_plugin.files().items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(str(folder / name))
    print(f"wrote the OpenClaw plugin to {folder}")
    return written


def _remove_plugin(names: list[str]) -> None:
    for name in names:
        if not name.endswith("/"):
            Path(name).unlink(missing_ok=True)
    folders = [n.rstrip("/") for n in names if n.endswith("/")] or [str(Path(n).parent) for n in names[:1]]
    for folder in reversed(folders):
        try:
            Path(folder).rmdir()   # only if empty: nothing of the user's goes
        except OSError:
            break


def uninstall(harness: str, *, scope: str = "user", project_dir: Path, home: Path | None = None,
              dry_run: bool = False, passthrough: list[str] | None = None) -> int:
    home = home or Path.home()
    flavor = _flavor(harness)
    every = _targets(harness, scope, home, project_dir)
    undos: list[tuple[Undo, dict[str, Any]]] = []
    unrecorded: list[tuple[Change, list[str]]] = []
    try:
        for path in every:
            ours = _openclaw_ours(path) if harness == "openclaw" else claude_ours
            state = read_state(path)
            if state is None:
                # No record (deleted?): the bytes before install cannot be known; what we can do is
                # take our entries out, and say so.
                data, _ = load(path, flavor)
                taken = ours(data)
                if taken:
                    strip = _openclaw_strip({}, path) if harness == "openclaw" else strip_claude({})
                    unrecorded.append((plan(path, strip, flavor), taken))
                continue
            backup = _original(path, state, flavor)
            strip = _openclaw_strip(backup, path) if harness == "openclaw" else strip_claude(backup)
            undos.append((restore(path, strip, ours, flavor), state))
    except SettingsFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not undos and not unrecorded:
        print(f"nothing to undo: no install record and no mcp-memory entries in {', '.join(map(str, every))}")
        return 0
    for undo, _ in undos:
        c = undo.change
        print(diff(c.path, c.before, c.after) if undo.how != "gone" else f"{c.path} is gone already")
    for change, _ in unrecorded:
        print(diff(change.path, change.before, change.after))
    if dry_run:
        print("dry run: nothing written")
        return 0
    for undo, state in undos:
        finish_restore(undo)
        _remove_plugin(state.get("plugin_files", []))
        print(_said(undo))
    for change, taken in unrecorded:
        write_through(change.path, change.after)
        if harness == "openclaw":   # our files, then their folders if that leaves them empty
            folder = plugin_dir(change.path)
            _remove_plugin([f"{folder.parent}/", f"{folder}/", *(str(folder / n) for n in openclaw_plugin.NAMES)])
        left = backups(change.path)
        print(f"no install record for {change.path} ({state_path(change.path).name} is gone): could not restore "
              f"it as it was before install; took out only mcp-memory's entries ({', '.join(taken)})"
              + (f"; backups from an earlier install are left for you to compare: "
                 f"{', '.join(p.name for p in left)}" if left else ""))
    return 0


def _original(path: Path, state: dict[str, Any], flavor: Flavor) -> dict[str, Any]:
    backup = backup_path(path, state)
    try:
        raw = backup.read_bytes()
        return parse(raw, backup, flavor) if raw.strip() else {}
    except (OSError, SettingsFileError):
        return {}


def _said(undo: Undo) -> str:
    path, bak = undo.change.path, undo.backup.name if undo.backup else None
    taken = ", ".join(undo.taken_out)
    return {
        "restored": f"restored {path} exactly as it was",
        "removed": f"removed {path} (it did not exist before install)",
        "stripped": f"{path} changed since install: took out only mcp-memory's entries ({taken}); "
                    + (f"the original is kept as {bak}" if bak else
                       "it did not exist before install, so what was added to it since stays"),
        "restored-without-ours": f"restored {path} as it was before install, except mcp-memory's entries its "
                                 f"backup already held from an earlier install ({taken}), which were taken out; "
                                 f"that backup is kept as {bak}",
        "no-backup": f"could not restore {path} exactly: its backup {bak} is gone; took out only "
                     f"mcp-memory's entries ({taken})",
        "gone": f"{path} no longer exists; install record removed",
    }[undo.how]
