"""completion/complete: values for resource-template and prompt arguments, drawn from the
caller's own memories (its tags and ids) and the server's settings."""

from __future__ import annotations

import logging
from typing import Any

from mcp.server import MCPServer
from mcp_types import CompleteRequestParams, CompleteResult, Completion, PromptReference, ResourceTemplateReference

from ..errors import MemoryServiceError
from .resources import KINDS
from .state import AppState

log = logging.getLogger(__name__)
MAX_VALUES = 20


async def _complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
    ref, name, value = params.ref, params.argument.name, params.argument.value
    state: AppState = ctx.lifespan_context
    values: list[str] = []
    try:
        if isinstance(ref, ResourceTemplateReference):
            if name == "kind":
                values = [k for k in KINDS if k.startswith(value)]
            elif name in ("tag", "id"):
                service, p = await state.bind_request(ctx)
                if name == "tag":
                    values = await service.overview.tags(p, value, MAX_VALUES)
                else:
                    values = [str(i) for i in await service.overview.ids(p, value, MAX_VALUES)]
            elif name == "model":
                values = _models(state, value)
        elif isinstance(ref, PromptReference) and name == "model":
            values = _models(state, value)
    except MemoryServiceError as exc:
        log.info("no completion for %s: %s", name, exc)
    return CompleteResult(completion=Completion(values=values[:MAX_VALUES], has_more=len(values) > MAX_VALUES))


def _models(state: AppState, value: str) -> list[str]:
    return [pattern for pattern in state.settings.core_budgets if pattern.lower().startswith(value.lower())]


def register(server: MCPServer) -> None:
    server._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, _complete)
