"""Prompts: core memories for the start of a session, and recall (search → context), both with
memory text delimited as data."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from .. import context
from ..errors import MemoryServiceError
from .tools import bind


async def core_memories(ctx: Context, model: Annotated[str | None, Field(
        description="The model's name (e.g. claude-opus-4); picks the character budget.")] = None) -> str:
    """The pinned core memories, highest priority first, within the model's budget: load at session start."""
    try:
        service, p = await bind(ctx)
        return context.render_core(await service.overview.core(p, model))
    except MemoryServiceError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


async def recall(query: Annotated[str, Field(description="What to remember: a question or topic.")], ctx: Context,
                 limit: Annotated[int, Field(ge=1, le=50, description="How many memories.")] = 8) -> str:
    """Search memory and hand the results over as context."""
    try:
        service, p = await bind(ctx)
        result = await service.search(p, query, limit=limit)
    except MemoryServiceError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
    if not result.hits:
        return f"No memories match {query!r}."
    return context.render(result.hits, f"Memories relevant to {query!r}, best match first.")


def register(server: MCPServer) -> None:
    server.prompt("core_memories", title="Core memories")(core_memories)
    server.prompt("recall", title="Recall")(recall)
