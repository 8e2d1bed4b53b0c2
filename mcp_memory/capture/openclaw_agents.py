"""Several OpenClaw agents, each with its own namespace in hooks and tools alike.

OpenClaw (2026.9) starts a stdio MCP server with the entry's command, args and env only: no agent
id, workspace or roots reach it, so one `memory` entry cannot tell which agent calls. What OpenClaw
does let us do is choose which entries an agent's sessions load: an agent's own tool policy
(`agents.entries.<id>.tools.deny`, or the older `agents.list[]`) takes a server out of its sessions
when it denies the server's tools by glob (`memory-work__*`), before the server is even started.
So install gives each listed agent an entry of its own, pinned to `--agent <its id>` and
`--project <its workspace's repository>`, and denies every other agent's entry to it; the plugin's
hooks take the same flags by the event's agentId. The first (default) agent keeps the name
`memory`, so its tools stay `memory__memory_search`; the others' are `memory-<id>__…`.

Agents and workspaces are resolved as OpenClaw resolves them (agent-scope-config): an entry's own
`workspace`; else the default agent's is `agents.defaults.workspace` or `<state dir>/workspace`,
any other agent's `<agents.defaults.workspace>/<id>` or `<state dir>/workspace-<id>`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..auth import NO_PROJECT, git_project
from .harness_entries import SERVER, drop_empty, flag_value, object_at, ours_server
from .openclaw_entries import OPENCLAW_AGENT, openclaw_server
from .settings_files import SettingsFileError

# OpenClaw caps a server's tool prefix at 30 characters (agent-bundle-mcp-names): a longer name
# would be cut, and the deny glob written for it would no longer match.
MAX_SERVER_NAME = 30
_UNSAFE = re.compile(r"[^a-z0-9_-]+")

Edit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Slot:
    """One agent's place: its server entry and the flags its server and hooks both run with."""

    agent: str
    workspace: Path
    server: str
    flags: tuple[str, ...]

    @property
    def glob(self) -> str:
        return deny_glob(self.server)


def deny_glob(server: str) -> str:
    """The tool-policy glob that takes this server out of an agent's sessions."""
    return f"{server.lower()}__*"


def _entries(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The listed agents in order, by OpenClaw's (lower-case) id, with their entry objects as they
    are in `data` (edits to them are edits to the file): keyed `agents.entries`, or the older
    `agents.list` array."""
    agents = data.get("agents")
    if not isinstance(agents, dict):
        return []
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(agents.get("entries"), dict):
        found = [(str(k), v) for k, v in agents["entries"].items() if isinstance(v, dict)]
    elif isinstance(agents.get("list"), list):
        found = [(str(a["id"]), a) for a in agents["list"] if isinstance(a, dict) and a.get("id")]
    seen: set[str] = set()
    out = []
    for key, entry in found:
        agent = key.strip().lower()
        if agent and agent not in seen:
            seen.add(agent)
            out.append((agent, entry))
    return out


def listed(data: dict[str, Any]) -> list[str]:
    return [agent for agent, _ in _entries(data)]


def _owner(data: dict[str, Any], entries: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The agent that inherits the default workspace: the one marked default, the first of an
    older `agents.list` (OpenClaw's migration keeps it there), or the only one."""
    agents = data.get("agents") if isinstance(data.get("agents"), dict) else {}
    if agents.get("ownership") != "explicit":
        marked = [agent for agent, entry in entries if entry.get("default") is True]
        if len(marked) == 1:
            return marked[0]
    if entries and isinstance(agents.get("list"), list) and not isinstance(agents.get("entries"), dict):
        return entries[0][0]
    return entries[0][0] if len(entries) == 1 else None


def workspace(config: Path, data: dict[str, Any], agent: str, entry: dict[str, Any], owner: str | None) -> Path:
    where = entry.get("workspace")
    if isinstance(where, str) and where.strip():
        return Path(where.strip()).expanduser()
    agents = data.get("agents") if isinstance(data.get("agents"), dict) else {}
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), dict) else {}
    fallback = defaults.get("workspace")
    fallback = fallback.strip() if isinstance(fallback, str) else ""
    if agent == owner:
        return Path(fallback).expanduser() if fallback else config.parent / "workspace"
    return Path(fallback).expanduser() / agent if fallback else config.parent / f"workspace-{agent}"


def sole_project(config: Path, data: dict[str, Any]) -> str | None:
    """The project of a lone listed agent's workspace (None unless exactly one agent is listed)."""
    entries = _entries(data)
    if len(entries) != 1:
        return None
    agent, entry = entries[0]
    return git_project(workspace(config, data, agent, entry, agent)) or NO_PROJECT


def _server_name(agent: str, taken: set[str]) -> str:
    base = f"{SERVER}-{_UNSAFE.sub('-', agent)}"[:MAX_SERVER_NAME]
    name, n = base, 2
    while name in taken:
        suffix = f"-{n}"
        name, n = base[:MAX_SERVER_NAME - len(suffix)] + suffix, n + 1
    return name


def slots(config: Path, data: dict[str, Any], flags: list[str], first: str = SERVER) -> list[Slot]:
    """Each listed agent's slot, the default agent's first (it keeps the `memory` entry); none
    with fewer than two agents, or when `--agent` pins one agent for all. `flags` are the
    user's (store, user, …); a `--project` among them pins that project for every agent."""
    entries = _entries(data)
    if len(entries) < 2 or flag_value(flags, "--agent") is not None:
        return []
    owner = _owner(data, entries)   # None (explicit ownership): every agent's implicit workspace is its own
    first_agent = owner or entries[0][0]
    entries.sort(key=lambda item: item[0] != first_agent)
    servers = (data.get("mcp") or {}).get("servers") if isinstance(data.get("mcp"), dict) else None
    # Names OpenClaw would see as the same prefix (it compares them in lower case) are not reused.
    taken = {str(name).lower() for name, s in (servers or {}).items() if not ours_server(s)} | {first.lower()}
    out = []
    for i, (agent, entry) in enumerate(entries):
        where = workspace(config, data, agent, entry, owner)
        project = flag_value(flags, "--project") or git_project(where) or NO_PROJECT
        pinned = [f for f in _without(flags, "--project")] + ["--agent", agent, "--project", project]
        name = first if i == 0 else _server_name(agent, taken)
        taken.add(name.lower())
        out.append(Slot(agent, where, name, tuple(pinned)))
    return out


def _without(flags: list[str], name: str) -> list[str]:
    out, skip = [], False
    for item in flags:
        if skip:
            skip = False
        elif item == name:
            skip = True
        else:
            out.append(item)
    return out


def _ours_name(name: str) -> bool:
    return name == SERVER or name.startswith(f"{SERVER}-")


def plugin_agents(found: list[Slot]) -> dict[str, dict[str, Any]]:
    """The plugin's map from OpenClaw agent id to the server entry and flags its hooks use."""
    return {s.agent: {"server": s.server, "args": list(s.flags)} for s in found}


def _deny(entry: dict[str, Any], where: str) -> list[Any]:
    tools = object_at(entry, "tools", where)
    deny = tools.setdefault("deny", [])
    if not isinstance(deny, list):
        raise SettingsFileError(f"{where}.tools.deny is not a list; not changed")
    return deny


def add(found: list[Slot], exe: str, path: Path) -> Edit:
    """Every agent's own server entry (the first one's, `memory`, is add_openclaw's) and, in each
    agent's tool policy, a deny of every other agent's entry."""
    def edit(data: dict[str, Any]) -> None:
        servers = object_at(object_at(data, "mcp", str(path)), "servers", f"{path}: mcp")
        for slot in found[1:]:
            existing = servers.get(slot.server)
            if existing is not None and not ours_server(existing):
                raise SettingsFileError(f"{path} already has an MCP server named {slot.server!r} that is not "
                                        "mcp-memory; not changed (rename or remove it first)")
            servers[slot.server] = openclaw_server(exe, list(slot.flags))
        entries = dict(_entries(data))
        for slot in found:
            deny = _deny(entries[slot.agent], f"{path}: agent {slot.agent!r}")
            deny += [o.glob for o in found if o is not slot and o.glob not in deny]
    return edit


def ours(data: dict[str, Any]) -> list[str]:
    """Our per-agent entries: the servers beyond `memory` and the denies naming our servers."""
    servers = (data.get("mcp") or {}).get("servers") if isinstance(data.get("mcp"), dict) else None
    names = [str(n) for n, s in (servers or {}).items() if _ours_name(str(n)) and ours_server(s)]
    found = [f"mcp.servers.{n}" for n in names if n != SERVER]
    globs = {deny_glob(n) for n in names}
    for agent, entry in _entries(data):
        tools = entry.get("tools")
        deny = tools.get("deny") if isinstance(tools, dict) else None
        if isinstance(deny, list) and globs.intersection(x for x in deny if isinstance(x, str)):
            found.append(f"agents.{agent}.tools.deny")
    return found


def strip(original: dict[str, Any]) -> Edit:
    """Take out our servers beyond `memory` and the denies of our servers; a server or deny the
    original had stays, and so do containers it had."""
    def edit(data: dict[str, Any]) -> None:
        mcp = data.get("mcp")
        servers = mcp.get("servers") if isinstance(mcp, dict) else None
        o_mcp = original.get("mcp") if isinstance(original.get("mcp"), dict) else {}
        o_servers = o_mcp.get("servers") if isinstance(o_mcp.get("servers"), dict) else {}
        names = [str(n) for n, s in (servers or {}).items() if _ours_name(str(n)) and ours_server(s)]
        globs = {deny_glob(n) for n in names}
        for name in names:
            if name == SERVER:
                continue   # openclaw_entries.strip_openclaw's
            if ours_server(o_servers.get(name)):
                servers[name] = o_servers[name]   # type: ignore[index]
            else:
                del servers[name]   # type: ignore[union-attr]
        o_entries = dict(_entries(original))
        for agent, entry in _entries(data):
            tools = entry.get("tools")
            if not isinstance(tools, dict) or not isinstance(tools.get("deny"), list):
                continue
            o_entry = o_entries.get(agent, {})
            o_tools = o_entry.get("tools") if isinstance(o_entry.get("tools"), dict) else {}
            kept = o_tools.get("deny") if isinstance(o_tools.get("deny"), list) else []
            tools["deny"] = [x for x in tools["deny"] if x not in globs or x in kept]
            drop_empty(tools, "deny", o_tools)
            drop_empty(entry, "tools", o_entry)
    return edit


def check(data: dict[str, Any], hooked: dict[str, Any]) -> tuple[list[str], list[str], str | None]:
    """Doctor's look at the agents: (problems, fixes, a note for a passing check). `hooked` is the
    plugin's config as install wrote it."""
    mapped = hooked.get("agents") if isinstance(hooked.get("agents"), dict) else {}
    now = listed(data)
    again = "run `mcp-memory uninstall openclaw` then `mcp-memory install openclaw` (each agent gets its own entry)"
    if not mapped:
        if len(now) < 2:
            return [], [], None
        shared = (f"OpenClaw lists {len(now)} agents ({', '.join(now)}) and they share one namespace, tools and "
                  "hooks alike")
        if flag_value([str(a) for a in hooked.get("args") or []], "--agent") == OPENCLAW_AGENT:
            return [f"{shared}: they were listed after install"], [again], None
        return [], [], f"{shared} (installed with --agent): {again} without --agent to separate them"
    problems: list[str] = []
    servers = (data.get("mcp") or {}).get("servers") if isinstance(data.get("mcp"), dict) else None
    entries = dict(_entries(data))
    for agent, slot in mapped.items():
        if not isinstance(slot, dict):
            continue
        name, flags = str(slot.get("server") or SERVER), [str(a) for a in slot.get("args") or []]
        server = (servers or {}).get(name)
        if not ours_server(server):
            problems.append(f"agent {agent!r}'s MCP server entry {name!r} is missing: it has no memory tools")
        elif any(flag_value(server["args"][1:], f) != flag_value(flags, f) for f in ("--agent", "--project")):
            problems.append(f"agent {agent!r}'s MCP server {name!r} is not pinned to its hooks' namespace "
                            f"(agent {flag_value(flags, '--agent')!r}, project {flag_value(flags, '--project')!r})")
        tools = entries.get(agent, {}).get("tools")
        deny = tools.get("deny") if isinstance(tools, dict) else None
        for other, theirs in mapped.items():
            glob = deny_glob(str(theirs.get("server") or SERVER)) if isinstance(theirs, dict) else None
            if other != agent and glob and (not isinstance(deny, list) or glob not in deny):
                problems.append(f"agent {agent!r} loads agent {other!r}'s memory server: its tools search "
                                f"{other!r}'s memories (its tools.deny lacks {glob!r})")
    added = [agent for agent in now if agent not in mapped]
    if added:
        problems.append(f"agent(s) {', '.join(added)} listed since install have no memory server of their own: "
                        "their hooks use the first agent's namespace and their tools load every agent's server")
    return problems, [again] if problems else [], None
