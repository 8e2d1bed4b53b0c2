"""Resources as memory lists: size-capped pages, tag and kind lists, stats, and completions for
template and prompt arguments, all inside the session's scope."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from mcp_memory.config import Settings
from mcp_memory.server import build_server


async def write(client: Client, content: str, **args: object) -> str:
    r = await client.call_tool("memory_write", {"content": content, **args})
    assert not r.is_error, r.content[0].text
    return r.structured_content["memory"]["id"]


async def read(client: Client, uri: str) -> dict:
    return json.loads((await client.read_resource(uri)).contents[0].text)


async def test_pages_are_capped_in_size_and_lose_nothing(settings: Settings) -> None:
    settings = settings.model_copy(update={"resource_page_chars": 3000, "snippet_chars": 200})
    async with Client(build_server(settings)) as client:
        ids = {await write(client, f"long memory {i} " + "lorem ipsum " * 1000) for i in range(12)}
        seen: list[str] = []
        uri = "memory://memories"
        while True:
            page = await read(client, uri)
            assert len(json.dumps(page)) < 3000 + 1000   # one brief past the cap at most, never a dump
            assert all(len(m["snippet"]) == 200 and m["truncated"] for m in page["memories"])
            seen += [m["id"] for m in page["memories"]]
            if not page["next_cursor"]:
                break
            uri = f"memory://memories?cursor={page['next_cursor']}"
        assert len(seen) == 12 and set(seen) == ids


async def test_tag_and_kind_lists(settings: Settings) -> None:
    async with Client(build_server(settings)) as client:
        infra = {await write(client, f"infra fact {i}", tags=["infra"], kind="fact") for i in range(3)}
        await write(client, "a preference", tags=["ui"], kind="preference")
        by_tag = await read(client, "memory://tags/infra")
        assert {m["id"] for m in by_tag["memories"]} == infra
        by_kind = await read(client, "memory://kinds/preference")
        assert [m["snippet"] for m in by_kind["memories"]] == ["a preference"]
        assert (await read(client, "memory://tags/nothing"))["memories"] == []
        with pytest.raises(MCPError, match="not a kind; one of"):
            await client.read_resource("memory://kinds/recipe")


async def test_stats_resource(settings: Settings) -> None:
    async with Client(build_server(settings)) as client:
        for i in range(3):
            await write(client, f"tagged {i}", tags=["alpha", "beta"] if i else ["alpha"], pinned=i == 0)
        stats = await read(client, "memory://stats")
        assert stats["active"] == 3 and stats["pinned"] == 1 and stats["forgotten"] == 0
        assert stats["top_tags"] == {"alpha": 3, "beta": 2}
        assert stats["without_vector"] == 0 and stats["embedding_model"]
        assert (await read(client, "memory://stats?top=1"))["top_tags"] == {"alpha": 3}


async def test_completions(settings: Settings) -> None:
    settings = settings.model_copy(update={"core_budgets": {"opus": 6000, "8b": 1500, "haiku": 2000}})
    other = settings.model_copy(update={"user": "mallory"})
    async with Client(build_server(other)) as client:
        await write(client, "mallory's", tags=["infiltration", "infra-secret"])
    async with Client(build_server(settings)) as client:
        first = await write(client, "one", tags=["infra", "ideas"])
        await write(client, "two", tags=["infra"])

        async def complete(template: str, name: str, value: str) -> list[str]:
            result = await client.complete(ResourceTemplateReference(uri=template), {"name": name, "value": value})
            return result.completion.values

        assert await complete("memory://tags/{tag}{?cursor}", "tag", "in") == ["infra"]   # not mallory's
        assert await complete("memory://tags/{tag}{?cursor}", "tag", "") == ["infra", "ideas"]
        assert await complete("memory://kinds/{kind}{?cursor}", "kind", "pr") == ["preference", "procedure"]
        assert await complete("memory://memories/{id}", "id", first[:8]) == [first]
        assert await complete("memory://core{?model}", "model", "") == ["opus", "8b", "haiku"]
        prompt = await client.complete(PromptReference(name="core_memories"), {"name": "model", "value": "h"})
        assert prompt.completion.values == ["haiku"]
