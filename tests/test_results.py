"""The text a tool returns is compact JSON for the model to read; the structured content keeps
the full schema."""

from __future__ import annotations

import json

import pydantic_core

from mcp_memory.config import Settings
from mcp_memory.models import SearchResult

from .test_server import connect


async def test_search_text_is_compact_and_structured_content_full(settings: Settings) -> None:
    async with connect(settings) as client:
        for i in range(12):
            await client.call_tool("memory_write", {"content": f"Maya Okafor fact number {i}: likes tea"})
        result = await client.call_tool("memory_search", {"query": "Maya Okafor tea", "limit": 10})
    text, full = result.content[0].text, result.structured_content
    assert "\n" not in text and ": " not in text.replace(": likes", "")  # no indentation or padding
    lean = json.loads(text)
    assert len(lean["hits"]) == len(full["hits"]) == 10
    for short, hit in zip(lean["hits"], full["hits"], strict=True):
        assert short["id"] == hit["id"] and short["snippet"] == hit["snippet"]
        assert "uri" not in short and hit["uri"] == f"memory://memories/{hit['id']}"  # the id says it
        assert None not in short.values() and "title" not in short and "explain" not in short
        assert "truncated" not in short and hit["truncated"] is False  # default left out of the text
        assert short["occurred_at"].endswith("Z") and "." not in short["occurred_at"]
    before = pydantic_core.to_json(SearchResult.model_validate(full), indent=2).decode()
    assert len(text) <= 0.45 * len(before), (len(text), len(before))
