"""Memories as MCP resources: browsable lists (all, by tag, by kind) capped in size, one memory
per URI, the pinned core, counts, and a resources/list that pages through the memories."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import ListResourcesResult, PaginatedRequestParams, Resource

from .. import context
from ..errors import MemoryServiceError, NotFound
from ..models import KINDS, MemoryFilter, Principal
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


async def _browse(ctx: Context, f: MemoryFilter | None, cursor: str | None) -> str:
    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.overview.browse(p, f, cursor)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def memories_page(ctx: Context, cursor: str | None = None) -> str:
    """This session's memories, newest first, by their start; follow next_cursor for more."""
    return await _browse(ctx, None, cursor)


async def memories_by_tag(tag: str, ctx: Context, cursor: str | None = None) -> str:
    """Memories carrying this tag, newest first (paginated)."""
    return await _browse(ctx, MemoryFilter(tags=[tag]), cursor)


async def memories_by_kind(kind: str, ctx: Context, cursor: str | None = None) -> str:
    """Memories of one kind, newest first (paginated)."""
    if kind not in KINDS:
        raise ResourceNotFoundError(f"{kind!r} is not a kind; one of: {', '.join(KINDS)}")
    return await _browse(ctx, MemoryFilter(kinds=[kind]), cursor)  # type: ignore[list-item]


async def memory_resource(id: str, ctx: Context) -> str:
    """One memory, in full."""
    try:
        memory_id = UUID(id)
    except ValueError:
        raise ResourceNotFoundError(f"{id!r} is not a memory id (a UUID)") from None

    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.get_one(p, memory_id)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def core_resource(ctx: Context, model: str | None = None) -> str:
    """Pinned core memories, highest priority first, cut at whole memories to the budget for the
    model named (`?model=claude-opus-4`), as context ready to read."""
    async def op(service: MemoryService, p: Principal) -> str:
        return context.render_core(await service.overview.core(p, model))
    return await _resource_call(ctx, op)


async def stats_resource(ctx: Context, top: int = 10) -> str:
    """Counts of this session's memories: live, forgotten, pinned, by kind, scope and tag (`top` tags)."""
    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.overview.stats(p, top)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def jobs_resource(ctx: Context, limit: int = 20) -> str:
    """The decision job queue of this session's user: counts by status and the latest `limit` jobs."""
    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.jobs(p, max(1, min(limit, 200)))).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def entities_resource(ctx: Context, limit: int = 100) -> str:
    """The entities this session's memories name (people, the user, projects, places, tools), the
    most named first, each with how many live memories name it."""
    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.entities.list(p, limit)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


async def entity_resource(ref: str, ctx: Context) -> str:
    """One entity's profile, by id or name ('me' for the user): each keyed attribute's current value,
    its earlier values and those dated ahead with their dates, and the entities it appears with."""
    async def op(service: MemoryService, p: Principal) -> str:
        return (await service.entities.profile(p, ref)).model_dump_json(indent=1)
    return await _resource_call(ctx, op)


def register(server: MCPServer) -> None:
    json_type = "application/json"
    server.resource("memory://memories{?cursor}", name="memories", title="Memories",
                    mime_type=json_type)(memories_page)
    server.resource("memory://memories/{id}", name="memory", title="Memory", mime_type=json_type)(memory_resource)
    server.resource("memory://tags/{tag}{?cursor}", name="memories-by-tag", title="Memories by tag",
                    mime_type=json_type)(memories_by_tag)
    server.resource("memory://kinds/{kind}{?cursor}", name="memories-by-kind", title="Memories by kind",
                    mime_type=json_type)(memories_by_kind)
    server.resource("memory://core{?model}", name="core", title="Core memories", mime_type="text/plain")(core_resource)
    server.resource("memory://stats{?top}", name="stats", title="Memory statistics",
                    mime_type=json_type)(stats_resource)
    server.resource("memory://jobs{?limit}", name="jobs", title="Decision jobs", mime_type=json_type)(jobs_resource)
    server.resource("memory://entities{?limit}", name="entities", title="Entities",
                    mime_type=json_type)(entities_resource)
    server.resource("memory://entities/{ref}", name="entity", title="Entity profile",
                    mime_type=json_type)(entity_resource)
    # MCPServer lists resources in one page with no cursor; memories need real pagination.
    server._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams, _list_resources)


FIXED = [
    Resource(uri="memory://memories", name="memories", title="Memories", mime_type="application/json",
             description="This session's memories, newest first (paginated JSON; each memory by its start)."),
    Resource(uri="memory://core", name="core", title="Core memories", mime_type="text/plain",
             description="Pinned memories in priority order, within a character budget: read at session start."),
    Resource(uri="memory://stats", name="stats", title="Memory statistics", mime_type="application/json",
             description="Counts by kind, scope and tag; forgotten and not-yet-embedded memories."),
    Resource(uri="memory://entities", name="entities", title="Entities", mime_type="application/json",
             description="Who and what the memories name, most named first; memory://entities/{name} profiles one."),
]


async def _list_resources(ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
    """resources/list: the fixed entry points, then the session's memories themselves, paginated,
    so a client's resource picker can browse them."""
    state: AppState = ctx.lifespan_context
    cursor = params.cursor if params else None
    fixed = [] if cursor else FIXED
    try:
        service, p = await state.bind_request(ctx)
        page = await service.overview.browse(p, None, cursor)
    except MemoryServiceError as exc:
        log.info("resources/list without memories: %s", exc)
        return ListResourcesResult(resources=fixed)
    listed = [Resource(uri=m.uri, name=str(m.id), title=m.title or m.snippet[:60], mime_type="application/json",
                       description=f"{m.kind}, {m.scope.level}, {m.age}")
              for m in page.memories]
    return ListResourcesResult(resources=fixed + listed, next_cursor=page.next_cursor)
