"""Memories as MCP resources: a paginated list, one memory per URI, and a resources/list that
pages through the session's memories so resource pickers can browse them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import ListResourcesResult, PaginatedRequestParams, Resource

from ..errors import MemoryServiceError, NotFound
from ..models import Principal
from ..service import MemoryService
from .state import AppState
from .tools import bind

log = logging.getLogger(__name__)


async def _resource_call(ctx: Context, op: Callable[[MemoryService, Principal], Awaitable[str]]) -> str:
    try:
        service, p = await bind(ctx)
        return await op(service, p)
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from None
    except MemoryServiceError as exc:
        raise ResourceError(str(exc)) from None


async def memories_page(ctx: Context, cursor: str | None = None) -> str:
    """The session's memories, newest first, one page at a time (follow next_cursor)."""
    async def op(service: MemoryService, p: Principal) -> str:
        state: AppState = ctx.request_context.lifespan_context
        page = await service.list(p, None, order="recent", limit=state.settings.resource_page_size, cursor=cursor)
        return page.model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def memory_resource(id: str, ctx: Context) -> str:
    """One memory, in full."""
    try:
        memory_id = UUID(id)
    except ValueError:
        raise ResourceNotFoundError(f"{id!r} is not a memory id (a UUID)") from None

    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.get_one(p, memory_id)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


def list_resources_handler(server: MCPServer) -> Callable[..., Awaitable[ListResourcesResult]]:
    """resources/list: the fixed entry points, then the session's memories themselves, paginated,
    so a client's resource picker can browse them."""

    async def handler(ctx: Any, params: PaginatedRequestParams) -> ListResourcesResult:
        fixed = await server.list_resources()
        fixed.insert(0, Resource(uri="memory://memories", name="memories", title="Memories",
                                 description="This session's memories, newest first (paginated JSON).",
                                 mime_type="application/json"))
        state: AppState = ctx.lifespan_context
        try:
            service = await state.service()
            request = getattr(ctx, "request", None)
            p = await state.principal(ctx.session, ctx.protocol_version,
                                      request.headers if request is not None else None)
            page = await service.list(p, None, order="recent", limit=state.settings.resource_page_size,
                                      cursor=params.cursor if params else None)
        except MemoryServiceError as exc:
            log.info("resources/list without memories: %s", exc)
            return ListResourcesResult(resources=fixed)
        listed = [Resource(uri=m.uri, name=str(m.id), title=m.title or m.content[:60],
                           description=f"{m.kind}, {m.scope.level}, {m.age}", mime_type="application/json")
                  for m in page.memories]
        first = not (params and params.cursor)
        return ListResourcesResult(resources=(fixed if first else []) + listed, next_cursor=page.next_cursor)

    return handler
