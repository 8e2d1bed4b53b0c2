"""What a tool's text content holds: the result as compact JSON, for the model to read.

The text is what the model pays for; the structured content beside it keeps the full schema
for programs. So the text leaves out what carries no information: indentation, null fields,
fields at their default value, URIs the id already says, microseconds and UTC offsets of
timestamps, digits of scores past the fourth."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

P = ParamSpec("P")

_TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(?:\+00:00|Z)$")


# A memory's URI is memory://memories/{id}: the id says it.
_DERIVED = frozenset({"uri"})


def _lean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lean(v) for k, v in value.items() if v is not None and k not in _DERIVED}
    if isinstance(value, list):
        return [_lean(v) for v in value]
    if isinstance(value, str) and (m := _TIMESTAMP.match(value)):
        return m.group(1) + "Z"
    if isinstance(value, float):
        return round(value, 4)
    return value


def compact(model: BaseModel) -> str:
    data = model.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    return json.dumps(_lean(data), ensure_ascii=False, separators=(",", ":"))


def lean(fn: Callable[P, Awaitable[BaseModel]]) -> Callable[P, Awaitable[CallToolResult]]:
    """The tool's result as compact text plus the full structured content. The SDK still
    validates the structured content against the output schema of `fn`'s return type."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        result = await fn(*args, **kwargs)
        return CallToolResult(content=[TextContent(type="text", text=compact(result))],
                              structured_content=result.model_dump(mode="json"))

    return wrapper
