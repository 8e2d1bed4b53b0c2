"""`mcp-memory export --to doobidoo-json|basic-memory`: the user's live, current memories in a
peer's format."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInput
from ..repository.maintenance import MaintenanceRepository
from . import Target, basic_memory, current, doobidoo


async def export_to(maintenance: MaintenanceRepository, user_id: str, target: Target, *,
                    out: TextIO | None = None, folder: Path | None = None) -> int:
    """Write the user's live, current memories, oldest first, for `target`: doobidoo's JSON to
    `out`, basic-memory's notes into `folder`; returns how many were written."""
    from .. import __version__

    if target == "basic-memory" and folder is None:
        raise InvalidInput("export --to basic-memory needs a folder to write the notes into (-o FOLDER)")
    if target == "basic-memory" and folder is not None:
        basic_memory.check_folder(folder)  # before reading anything
    memories: list[dict[str, Any]] = []
    async for kind, record in maintenance.export(user_id, include_forgotten=False):
        if kind == "memory" and current(record["memory"]):
            memories.append(record["memory"])
    if target == "doobidoo-json":
        assert out is not None
        return doobidoo.write(memories, out, exported_by=f"mcp-memory {__version__}")
    if target == "basic-memory":
        assert folder is not None
        return basic_memory.write(memories, folder)
    raise InvalidInput(f"--to {target}: not one of doobidoo-json, basic-memory")
