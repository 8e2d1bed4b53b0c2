"""Output schemas that cost clients little to check.

Clients validate every structured result against the tool's output schema. Pydantic's schemas
are correct but expensive to walk: each nested model is a `$ref` (the Python SDK's jsonschema
resolves it per item: a ten-hit search spent 80% of the client's time validating, ~5 ms), and
every optional field is `anyOf: [X, null]`. The same constraints without references and with
`type: [X, "null"]` validate the same documents, several times faster."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

# Keywords that would constrain null too: with any of them in X, [X, null] is not a type list.
_UNION_BLOCKERS = frozenset({"enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "type"})
# Words about a value, not constraints: the outer node's win.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})


class Recursive(ValueError):
    """A model that contains itself cannot be inlined; its schema is kept as it is."""


def inline(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` replaced by its definition and `anyOf: [X, null]` of a
    single-typed X folded into X's `type` list."""
    defs = schema.get("$defs", {})

    def walk(node: Any, inside: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in inside:
                raise Recursive(name)
            target = walk(defs[name], (*inside, name))
            return {**target, **{k: walk(v, inside) for k, v in node.items() if k != "$ref"}}
        out = {k: walk(v, inside) for k, v in node.items() if k != "$defs"}
        return _fold_nullable(out)

    try:
        return walk(schema, ())
    except Recursive:
        return schema


def _fold_nullable(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = branches[0] if branches[1] == {"type": "null"} else branches[1]
    if not isinstance(other.get("type"), str) or _UNION_BLOCKERS & (other.keys() - {"type"}):
        return node
    outer = node.keys() - {"anyOf"}
    if _UNION_BLOCKERS & outer or (other.keys() & outer) - _ANNOTATIONS:
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**other, **rest, "type": [other["type"], "null"]}


def inline_output_schemas(server: MCPServer) -> None:
    for tool in server._tool_manager.list_tools():  # the SDK has no public hook for this
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = inline(tool.fn_metadata.output_schema)
