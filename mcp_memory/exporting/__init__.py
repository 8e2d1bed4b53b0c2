"""Exports in other memory tools' own formats, so that leaving is as easy as arriving: what
doobidoo's mcp-memory-service imports (its sync JSON) and a folder of notes basic-memory indexes.
One small module each, writing plain data; `mcp_memory.importers.export_to` reads the memories.

Only the user's live, current memories go out (forgotten ones and versions a newer one replaced
stay behind: neither tool would know they are not true now). Neither tool has our namespaces:
each memory's agent and project go into its metadata (`mcp_memory_agent_id`,
`mcp_memory_project_id`), with its id and kind."""

from __future__ import annotations

from typing import Any, Literal

Target = Literal["mcp-memory", "doobidoo-json", "basic-memory"]
TARGETS: tuple[str, ...] = Target.__args__  # type: ignore[attr-defined]


def current(memory: dict[str, Any]) -> bool:
    """Live and not replaced by a newer version."""
    return memory.get("deleted_at") is None and memory.get("superseded_by") is None


def ours(memory: dict[str, Any]) -> dict[str, Any]:
    """What a peer's metadata keeps of our memory: its id, kind and namespace."""
    return {"mcp_memory_id": str(memory["id"]), "mcp_memory_kind": memory["kind"],
            **({"mcp_memory_agent_id": memory["agent_id"]} if memory.get("agent_id") else {}),
            **({"mcp_memory_project_id": memory["project_id"]} if memory.get("project_id") else {})}
