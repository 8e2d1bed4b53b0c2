"""Every tool and resource through the SDK's in-process Client, in both protocol eras."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory.config import Settings
from mcp_memory.server import build_server

TOOLS = {"memory_search", "memory_get", "memory_list", "memory_write", "memory_write_many", "memory_update",
         "memory_forget", "memory_restore", "memory_undo_decision", "memory_accept_suggestion",
         "memory_history"}


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def call_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """Both protocol eras: 2026-07-28 (auto) and the initialize handshake hosts still use."""
    return request.param


def connect(settings: Settings, mode: str = "legacy") -> Client:
    # Entered inside each test: an async fixture's teardown runs in another task, and the
    # client's task group must exit in the task that entered it.
    return Client(build_server(settings), mode=mode)


async def test_tool_contract(settings: Settings, mode: str) -> None:
    async with connect(settings, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for name, tool in tools.items():
            assert "ctx" not in tool.input_schema["properties"], name
            assert tool.output_schema is not None, name
            assert tool.description, name
        ann = {n: t.annotations for n, t in tools.items()}
        assert all(ann[n].read_only_hint for n in ("memory_search", "memory_get", "memory_list", "memory_history"))
        assert ann["memory_forget"].destructive_hint is True and ann["memory_forget"].read_only_hint is False
        assert ann["memory_write"].destructive_hint is False
        assert ann["memory_update"].idempotent_hint is True and ann["memory_restore"].idempotent_hint is True


async def test_every_tool_end_to_end(settings: Settings, mode: str) -> None:
    async with connect(settings, mode) as client:
        w = await call(client, "memory_write", {"content": "The staging database runs on port 6543",
                                                "title": "staging db", "kind": "fact", "tags": ["infra"]})
        assert w["status"] == "created"
        mid = w["memory"]["id"]
        assert w["memory"]["uri"] == f"memory://memories/{mid}"

        hits = (await call(client, "memory_search", {"query": "which port does staging use", "explain": True}))["hits"]
        assert hits[0]["id"] == mid and hits[0]["age"] == "just now" and hits[0]["explain"]["fulltext"] == 1
        assert hits[0]["explain"]["vector"] == 1 and 0 < hits[0]["explain"]["recency"] <= 1

        got = await call(client, "memory_get", {"ids": [mid]})
        assert got["memories"][0]["content"] == "The staging database runs on port 6543"

        listed = await call(client, "memory_list", {"kinds": ["fact"], "limit": 5})
        assert [m["id"] for m in listed["memories"]] == [mid]

        newer = await call(client, "memory_write", {"content": "Staging moved to port 7000", "supersedes": [mid]})
        assert (await call(client, "memory_get", {"ids": [mid]}))["memories"][0]["superseded_by"] == \
            newer["memory"]["id"]
        await call(client, "memory_forget", {"ids": [newer["memory"]["id"]]})

        up = await call(client, "memory_update", {"id": mid, "content": "The staging database runs on port 6544",
                                                  "reason": "port changed", "if_version": 2})
        assert up["status"] == "updated" and up["memory"]["version"] == 3

        gone = await call(client, "memory_forget", {"ids": [mid], "reason": "decommissioned"})
        assert gone["forgotten"][0]["id"] == mid
        assert (await call(client, "memory_search", {"query": "staging database port"}))["hits"] == []

        back = await call(client, "memory_restore", {"ids": [mid], "reason": "back in use"})
        assert back["restored"][0]["id"] == mid

        history = (await call(client, "memory_history", {"id": mid}))["entries"]
        assert [(e["event"], e["reason"]) for e in history] == [
            ("ADD", None), ("UPDATE", f"superseded by {newer['memory']['id']}"), ("UPDATE", "port changed"),
            ("DELETE", "decommissioned"), ("RESTORE", "back in use")]
        assert {e["actor"] for e in history} == {"local:alice"}
        assert history[2]["old"] == {"content": "The staging database runs on port 6543"}


@pytest.mark.parametrize(("tool", "args", "says"), [
    ("memory_write", {"content": ""}, "content"),
    ("memory_write", {"content": "   "}, "content is empty"),
    ("memory_write", {"content": "x" * 40_000}, "content: String should have at most 32000 characters (got 40000)"),
    ("memory_write", {"content": "ok", "importance": 2}, "importance"),
    ("memory_write", {"content": "ok", "kind": "gossip"}, "kind"),
    ("memory_write", {"content": 42}, "content"),
    ("memory_write", {"content": "ok", "tags": "not-a-list"}, "tags"),
    ("memory_search", {"query": "x", "limit": 0}, "limit"),
    ("memory_search", {"query": "x", "limit": 51}, "limit"),
    ("memory_search", {"query": "   "}, "query is empty"),
    ("memory_list", {"limit": 101}, "limit"),
    ("memory_list", {"cursor": "nope"}, "cursor"),
    ("memory_get", {"ids": ["not-a-uuid"]}, "UUID"),
    ("memory_get", {"ids": []}, "ids"),
    ("memory_get", {"ids": ["00000000-0000-0000-0000-000000000000"]}, "no memory"),
    ("memory_update", {"id": "00000000-0000-0000-0000-000000000000", "title": "x"}, "no memory"),
    ("memory_update", {"id": "12"}, "UUID"),
    ("memory_forget", {"ids": ["00000000-0000-0000-0000-000000000000"]}, "nothing was forgotten"),
    ("memory_restore", {"ids": ["00000000-0000-0000-0000-000000000000"]}, "nothing was restored"),
    ("memory_history", {"id": "00000000-0000-0000-0000-000000000000"}, "no memory"),
    ("memory_search", {}, "query"),
])
async def test_bad_input_is_a_clear_error_and_changes_nothing(settings: Settings, mode: str, tool: str, args: dict,
                                                              says: str) -> None:
    async with connect(settings, mode) as client:
        keep = await call(client, "memory_write", {"content": "untouchable"})
        message = await call_error(client, tool, args)
        assert says.lower() in message.lower()
        listed = await call(client, "memory_list", {})
        assert [m["id"] for m in listed["memories"]] == [keep["memory"]["id"]]
        assert listed["memories"][0]["version"] == 1
        assert len((await call(client, "memory_history", {"id": keep["memory"]["id"]}))["entries"]) == 1


async def test_update_without_changes_is_refused(settings: Settings, mode: str) -> None:
    async with connect(settings, mode) as client:
        mid = (await call(client, "memory_write", {"content": "x"}))["memory"]["id"]
        assert "nothing to update" in await call_error(client, "memory_update", {"id": mid})


async def test_resources(settings: Settings, mode: str) -> None:
    async with connect(settings, mode) as client:
        ids = [(await call(client, "memory_write", {"content": f"resource memory {i}"}))["memory"]["id"]
               for i in range(3)]
        listing = await client.list_resources()
        uris = [r.uri for r in listing.resources]
        assert uris[:4] == ["memory://memories", "memory://core", "memory://stats", "memory://entities"]
        assert set(uris[4:]) == {f"memory://memories/{i}" for i in ids}

        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"memory://memories{?cursor}", "memory://memories/{id}", "memory://tags/{tag}{?cursor}",
                             "memory://kinds/{kind}{?cursor}", "memory://core{?model}", "memory://stats{?top}",
                             "memory://jobs{?limit}", "memory://entities{?limit}", "memory://entities/{ref}"}

        page = json.loads((await client.read_resource("memory://memories")).contents[0].text)
        assert [m["id"] for m in page["memories"]] == ids[::-1] and page["next_cursor"] is None

        one = json.loads((await client.read_resource(f"memory://memories/{ids[0]}")).contents[0].text)
        assert one["content"] == "resource memory 0"

        await call(client, "memory_forget", {"ids": [ids[0]]})
        with pytest.raises(MCPError, match="no memory"):
            await client.read_resource(f"memory://memories/{ids[0]}")
        with pytest.raises(MCPError, match="not a memory id"):
            await client.read_resource("memory://memories/hello")
        assert f"memory://memories/{ids[0]}" not in [r.uri for r in (await client.list_resources()).resources]


async def test_resources_paginate(settings: Settings) -> None:
    settings = settings.model_copy(update={"resource_page_size": 4})
    async with Client(build_server(settings), mode="legacy") as client:
        written = {(await call(client, "memory_write", {"content": f"paged {i}"}))["memory"]["id"] for i in range(10)}
        seen, cursor, pages = [], None, 0
        while True:
            listing = await client.list_resources(cursor=cursor)
            seen += [r.uri.rsplit("/", 1)[1] for r in listing.resources if r.uri.count("/") == 3]
            pages += 1
            cursor = listing.next_cursor
            if not cursor:
                break
        assert pages == 3 and len(seen) == 10 and set(seen) == written

        first = json.loads((await client.read_resource("memory://memories")).contents[0].text)
        assert len(first["memories"]) == 4 and first["next_cursor"]
        second = json.loads((await client.read_resource(
            f"memory://memories?cursor={first['next_cursor']}")).contents[0].text)
        assert len(second["memories"]) == 4
        assert not {m["id"] for m in first["memories"]} & {m["id"] for m in second["memories"]}


async def test_unreachable_database_fails_calls_not_the_handshake(tmp_path: Path) -> None:
    settings = Settings(database_url="postgresql://nobody@127.0.0.1:1/none", data_dir=tmp_path, user="u",
                        db_start_timeout_s=5)
    started = time.perf_counter()
    async with Client(build_server(settings), mode="legacy") as client:
        assert time.perf_counter() - started < 2
        assert len((await client.list_tools()).tools) == len(TOOLS)
        message = await call_error(client, "memory_search", {"query": "anything"})
        assert "not available" in message and "mcp-memory doctor" in message
