"""Published output schemas are inlined (no $ref, nullable fields as type lists) and accept and
refuse exactly what pydantic's schemas do."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from mcp_memory.config import Settings
from mcp_memory.models import SearchResult
from mcp_memory.server.schemas import inline

from .test_server import call, connect


def errors(schema: dict[str, Any], doc: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]


async def test_published_schemas_are_inlined_and_judge_results_alike(settings: Settings) -> None:
    async with connect(settings) as client:
        await call(client, "memory_write", {"content": "Alice drinks green tea", "tags": ["drinks"]})
        result = await call(client, "memory_search", {"query": "tea", "explain": True})
        tools = {t.name: t for t in (await client.list_tools()).tools}
    published = tools["memory_search"].output_schema
    assert "$ref" not in json.dumps(published) and "$defs" not in published
    original = SearchResult.model_json_schema(mode="serialization")
    assert errors(published, result) == errors(original, result) == []
    broken = copy.deepcopy(result)
    broken["hits"][0]["score"] = "high"
    broken["hits"][0]["scope"] = None
    assert len(errors(published, broken)) == len(errors(original, broken)) == 2


def test_nullable_unions_fold_into_type_lists_but_not_enums() -> None:
    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        maybe: str | None = None
        inner: Inner | None = None

    flat = inline(Outer.model_json_schema())
    assert flat["properties"]["maybe"]["type"] == ["string", "null"]
    assert flat["properties"]["inner"]["type"] == ["object", "null"]
    assert flat["properties"]["inner"]["properties"]["n"]["type"] == "integer"
    for doc, ok in (({"maybe": None, "inner": None}, True), ({"inner": {"n": "x"}}, False), ({"maybe": 3}, False)):
        assert (errors(flat, doc) == []) is ok
        assert (errors(Outer.model_json_schema(), doc) == []) is ok


def test_a_model_containing_itself_keeps_its_references() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    schema = Node.model_json_schema()
    assert inline(schema) == schema


@pytest.mark.parametrize("doc", [{"query": "q", "hits": []}, {"query": "q", "hits": [], "intent": None}])
def test_optional_objects_stay_optional(doc: dict[str, Any]) -> None:
    assert errors(inline(SearchResult.model_json_schema(mode="serialization")), doc) == []
