"""Bad input gets a clear error that names the argument and changes nothing; a server bug gets
an error id the operator can find in the log. No caller ever sees a bare "Error executing tool"."""

from __future__ import annotations

import logging
import re
from typing import Any

import asyncpg
import pytest

from mcp_memory.config import Settings
from mcp_memory.db.migrate import migrate
from mcp_memory.service import MemoryService

from .test_server import call, call_error, connect

NUL = "a\x00b"


def not_bare(tool: str, message: str) -> str:
    assert message.strip() != f"Error executing tool {tool}", message
    return message


@pytest.mark.parametrize(("tool", "args", "argument"), [
    ("memory_write", {"content": NUL}, "content"),
    ("memory_write", {"content": "ok", "title": NUL}, "title"),
    ("memory_write", {"content": "ok", "tags": [NUL]}, "tags"),
    ("memory_write", {"content": "ok", "metadata": {"k": NUL}}, "metadata"),
    ("memory_write", {"content": "ok", "metadata": {NUL: 1}}, "metadata key"),
    ("memory_write", {"content": "ok", "idempotency_key": NUL}, "idempotency_key"),
    ("memory_search", {"query": NUL}, "query"),
    ("memory_write_many", {"items": [{"content": "fine"}, {"content": NUL}]}, "items[1]"),
    ("memory_write_many", {"items": [{"content": "fine", "occurred_at": "0001-01-01T00:00:00Z"}]}, "items[0]"),
    ("memory_forget", {"query": NUL}, "query"),
    ("memory_forget", {"ids": ["00000000-0000-0000-0000-000000000001"], "reason": NUL}, "reason"),
    ("memory_forget", {"token": NUL, "mode": "execute"}, "token"),
    ("memory_write", {"content": "ok", "occurred_at": "0001-01-01T00:00:00+14:00"}, "occurred_at"),
    ("memory_write", {"content": "ok", "occurred_at": "0001-01-01T00:00:00Z"}, "occurred_at"),
    ("memory_write", {"content": "ok", "occurred_at": "9999-12-31T23:59:59.999999Z"}, "occurred_at"),
    ("memory_search", {"query": "x", "since": "0001-01-01T00:00:00Z"}, "since"),
    ("memory_search", {"query": "x", "as_of": "9999-12-31T23:00:00-05:00"}, "as_of"),
    ("memory_list", {"until": "0001-01-01T05:00:00+14:00"}, "until"),
])
async def test_bad_values_are_named_and_change_nothing(settings: Settings, tool: str, args: dict[str, Any],
                                                       argument: str) -> None:
    async with connect(settings) as client:
        message = not_bare(tool, await call_error(client, tool, args))
        assert re.search(rf"\b{re.escape(argument)}(?!\w)", message), message
        assert (await call(client, "memory_list", {}))["memories"] == []


async def test_old_and_far_dates_inside_the_range_are_stored_and_searchable(settings: Settings) -> None:
    async with connect(settings) as client:
        for when in ("1215-06-15T00:00:00Z", "0001-01-02T00:00:00Z", "9999-12-29T00:00:00Z"):
            await call(client, "memory_write", {"content": f"Charter sealed {when}", "occurred_at": when})
        hits = (await call(client, "memory_search", {"query": "charter sealed"}))["hits"]
        assert len(hits) == 3


@pytest.mark.parametrize(("tool", "args", "unknown"), [
    ("memory_search", {"query": "x", "bogus": 1}, "bogus"),
    ("memory_search", {"query": "x", "_meta": {}}, "_meta"),
    ("memory_forget", {"ids": ["00000000-0000-0000-0000-000000000001"], "confirmation": {"confirm": True}},
     "confirmation"),
    ("memory_write", {"content": "x", "limt": 3}, "limt"),
])
async def test_unknown_arguments_are_refused_by_name(settings: Settings, tool: str, args: dict[str, Any],
                                                     unknown: str) -> None:
    async with connect(settings) as client:
        message = not_bare(tool, await call_error(client, tool, args))
        assert unknown in message and "not permitted" in message
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools[tool].input_schema["additionalProperties"] is False


async def test_a_server_bug_answers_with_an_id_found_in_the_log(settings: Settings, monkeypatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    async def broken(*_: Any, **__: Any) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(MemoryService, "search", broken)
    async with connect(settings) as client:
        with caplog.at_level(logging.ERROR):
            message = not_bare("memory_search", await call_error(client, "memory_search", {"query": "x"}))
    error_id = re.search(r"internal error ([0-9a-f]{12})", message).group(1)
    assert "a bug" not in message  # the exception's own text stays on the server
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info and logged[0].exc_info[0] is ZeroDivisionError


async def test_migration_repairs_infinite_dates(make_db) -> None:
    """Rows stored as ±infinity before the range existed take their creation time, with history."""
    url = await make_db()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DELETE FROM schema_migrations WHERE version >= '008'")
        await conn.execute(
            """INSERT INTO memories (id, user_id, kind, content, content_hash, occurred_at)
               VALUES (gen_random_uuid(), 'alice', 'note', 'forever', 'h1', 'infinity'),
                      (gen_random_uuid(), 'alice', 'note', 'never', 'h2', '-infinity'),
                      (gen_random_uuid(), 'alice', 'note', 'fine', 'h3', '1215-06-15')""")
        assert "008_input_ranges.sql" in await migrate(conn)
        rows = await conn.fetch("SELECT content, occurred_at = created_at AS repaired, isfinite(occurred_at) AS ok "
                                "FROM memories ORDER BY content")
        assert [(r["content"], r["repaired"], r["ok"]) for r in rows] == [
            ("fine", False, True), ("forever", True, True), ("never", True, True)]
        history = await conn.fetch("SELECT actor, event FROM memory_history")
        assert sorted((h["actor"], h["event"]) for h in history) == [("migration:008", "UPDATE")] * 2
    finally:
        await conn.close()


@pytest.mark.parametrize("key", [[1e308 * 10, "2024-01-01T00:00:00+00:00", "00000000-0000-0000-0000-000000000001"],
                                 [0.5, "0001-01-01T00:00:00+14:00", "00000000-0000-0000-0000-000000000001"],
                                 [0.5, "2024-01-01T00:00:00+00:00", "00000000-0000-0000-0000-000000000001"]])
async def test_a_rewritten_cursor_is_refused_as_a_bad_argument(service: MemoryService, alice, key: list) -> None:
    import base64
    import json as json_

    from mcp_memory.errors import InvalidInput

    for i in range(3):
        await service.write(alice, f"memory {i}", importance=0.1 * i)
    page = await service.list(alice, order="importance", limit=1)
    assert page.next_cursor and len((await service.list(alice, order="importance", limit=1,
                                                        cursor=page.next_cursor)).memories) == 1
    outer = json_.loads(base64.urlsafe_b64decode(page.next_cursor + "=" * (-len(page.next_cursor) % 4)))
    body = json_.loads(outer["b"])
    body["k"] = key  # the sort key rewritten, the signature kept
    forged = base64.urlsafe_b64encode(json_.dumps({"b": json_.dumps(body), "s": outer["s"]}).encode()).decode()
    with pytest.raises(InvalidInput, match="cursor is not one this server issued"):
        await service.list(alice, order="importance", limit=1, cursor=forged)


async def test_schemas_and_settings_agree_on_limits(settings: Settings) -> None:
    from pydantic import ValidationError

    from mcp_memory import limits

    async with connect(settings) as client:
        tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
    write = tools["memory_write"]
    assert write["content"]["maxLength"] == settings.max_content_chars == limits.MAX_CONTENT_CHARS
    assert write["title"]["anyOf"][0]["maxLength"] == settings.max_title_chars
    assert write["tags"]["anyOf"][0]["maxItems"] == settings.max_tags
    with pytest.raises(ValidationError):  # a setting may tighten a published limit, never loosen it
        Settings(max_content_chars=limits.MAX_CONTENT_CHARS + 1)
