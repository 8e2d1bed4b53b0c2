"""Forgetting by query: preview -> token -> execute, and every way a token can be misused."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from mcp_types import ElicitResult

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.server import build_server
from mcp_memory.service import MemoryService

from .conftest import principal
from .test_server import call, call_error

WRITER = principal(permissions=frozenset({"read", "write", "forget"}))


async def seed(service: MemoryService, p: Principal, n: int = 5) -> list:
    ids = [(await service.write(p, f"Old standup notes from sprint {i}", tags=["standup"])).memory.id
           for i in range(n)]
    ids.append((await service.write(p, "The release checklist lives in the wiki")).memory.id)
    return ids


async def live_ids(service: MemoryService, p: Principal) -> set:
    return {m.id for m in (await service.list(p, limit=100)).memories}


async def test_preview_then_execute(service: MemoryService, alice: Principal) -> None:
    ids = await seed(service, alice)
    preview = await service.forget_preview(alice, query="standup notes", limit=10)
    assert preview.mode == "preview" and preview.token and preview.token.startswith("fgt_")
    assert {c.id for c in preview.candidates} == set(ids[:5])
    assert all(c.score is not None for c in preview.candidates)
    assert await live_ids(service, alice) == set(ids), "a preview changes nothing"

    done = await service.forget_execute(alice, preview.token, reason="sprint retro done")
    assert done.mode == "executed" and {f.id for f in done.forgotten} == set(ids[:5])
    assert await live_ids(service, alice) == {ids[5]}
    history = (await service.history(alice, ids[0])).entries
    assert history[-1].event == "DELETE" and history[-1].reason == "sprint retro done"


async def test_execute_a_subset(service: MemoryService, alice: Principal) -> None:
    ids = await seed(service, alice)
    preview = await service.forget_preview(alice, f=MemoryFilter(tags=["standup"]))
    done = await service.forget_execute(alice, preview.token, ids=ids[:2])
    assert {f.id for f in done.forgotten} == set(ids[:2])
    assert await live_ids(service, alice) == set(ids[2:])


async def test_token_misuse_is_refused_and_changes_nothing(service: MemoryService, alice: Principal,
                                                           database: Database) -> None:
    ids = await seed(service, alice)
    preview = await service.forget_preview(alice, query="standup notes")
    token = preview.token

    with pytest.raises(NotFound, match="unknown forget token"):      # tampered
        await service.forget_execute(alice, token[:-2] + "xx")
    for other in (principal("bob"), principal(agent="agent-b"), principal(project="proj-y")):
        with pytest.raises(NotFound, match="unknown forget token"):  # foreign
            await service.forget_execute(other, token)
    with pytest.raises(InvalidInput, match="not in this token's preview"):
        await service.forget_execute(alice, token, ids=[ids[0], ids[5]])
    await service.update(alice, ids[1], title="edited after the preview")
    with pytest.raises(Conflict, match="changed since the preview"):  # stale
        await service.forget_execute(alice, token)
    assert await live_ids(service, alice) == set(ids)

    fresh = await service.forget_preview(alice, query="standup notes")
    await service.forget_execute(alice, fresh.token, ids=[ids[0]])
    with pytest.raises(Conflict, match="already used"):              # reused
        await service.forget_execute(alice, fresh.token, ids=[ids[2]])

    expiring = await service.forget_preview(alice, query="standup notes")
    async with database.admin.acquire() as conn:
        await conn.execute("UPDATE forget_tokens SET expires_at = now() - interval '1 second'")
    with pytest.raises(Conflict, match="expired"):
        await service.forget_execute(alice, expiring.token)
    assert await live_ids(service, alice) == set(ids) - {ids[0]}


async def test_concurrent_executes_of_one_token(service: MemoryService, alice: Principal) -> None:
    await seed(service, alice)
    preview = await service.forget_preview(alice, query="standup notes")
    results = await asyncio.gather(*[service.forget_execute(alice, preview.token) for _ in range(6)],
                                   return_exceptions=True)
    wins = [r for r in results if not isinstance(r, BaseException)]
    assert len(wins) == 1 and len(wins[0].forgotten) == 5
    assert all(isinstance(r, Conflict) for r in results if isinstance(r, BaseException))


async def test_batch_limit_needs_admin(service: MemoryService, alice: Principal, settings: Settings) -> None:
    await seed(service, alice, n=30)
    with pytest.raises(PermissionDenied, match="at most 25"):
        await service.forget_preview(WRITER, query="standup", limit=26)
    big = await service.forget_preview(alice, query="standup notes sprint", limit=40)
    assert len(big.candidates) == 30 and not big.more
    small = await service.forget_preview(WRITER, f=MemoryFilter(tags=["standup"]), limit=10)
    assert len(small.candidates) == 10 and small.more


async def test_pinned_are_left_out_unless_forced(service: MemoryService, alice: Principal) -> None:
    pinned = (await service.write(alice, "Standup is at 9:30 every day", pinned=True)).memory.id
    ids = await seed(service, alice, n=2)
    preview = await service.forget_preview(alice, query="standup")
    assert pinned not in {c.id for c in preview.candidates} and preview.skipped_pinned == 1
    with pytest.raises(PermissionDenied, match="admin"):
        await service.forget_preview(WRITER, query="standup", force=True)
    forced = await service.forget_preview(alice, query="standup", force=True)
    assert pinned in {c.id for c in forced.candidates}
    await service.forget_execute(alice, forced.token)
    assert await live_ids(service, alice) == {ids[2]}


async def test_nothing_to_forget(service: MemoryService, alice: Principal) -> None:
    empty = await service.forget_preview(alice, query="zebras")
    assert empty.token is None and empty.candidates == []
    with pytest.raises(InvalidInput, match="say what to forget"):
        await service.forget_preview(alice)


# --- through MCP ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_forget_flow_over_mcp(settings: Settings, mode: str) -> None:
    async with Client(build_server(settings), mode=mode) as client:
        for i in range(3):
            await call(client, "memory_write", {"content": f"temporary scratch note {i}"})
        keep = await call(client, "memory_write", {"content": "permanent fact"})
        assert "needs the token from a preview" in await call_error(
            client, "memory_forget", {"query": "scratch", "mode": "execute"})
        preview = await call(client, "memory_forget", {"query": "temporary scratch note"})
        assert preview["mode"] == "preview" and len(preview["candidates"]) == 3
        done = await call(client, "memory_forget", {"mode": "execute", "token": preview["token"],
                                                     "reason": "cleanup"})
        assert len(done["forgotten"]) == 3 and done["restorable_until"]
        left = await call(client, "memory_list", {})
        assert [m["id"] for m in left["memories"]] == [keep["memory"]["id"]]
        assert "already used" in await call_error(client, "memory_forget", {"mode": "execute",
                                                                            "token": preview["token"]})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_execute_asks_the_human_when_the_client_can(settings: Settings, mode: str, answer: str) -> None:
    asked: list[str] = []

    async def elicit(context, params) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=answer, content={"confirm": True} if answer == "accept" else None)

    async with Client(build_server(settings), mode=mode, elicitation_callback=elicit) as client:
        await call(client, "memory_write", {"content": "obsolete deploy runbook"})
        preview = await call(client, "memory_forget", {"query": "deploy runbook"})
        assert asked == []
        result = await client.call_tool("memory_forget", {"mode": "execute", "token": preview["token"]})
        assert len(asked) == 1 and "Forget 1 memory?" in asked[0] and "obsolete deploy runbook" in asked[0]
        listed = await call(client, "memory_list", {})
        if answer == "accept":
            assert not result.is_error and len(listed["memories"]) == 0
        else:
            assert result.is_error and "nothing was forgotten" in result.content[0].text
            assert len(listed["memories"]) == 1


async def test_preview_takes_ids_or_a_query_not_both(service: MemoryService, alice: Principal) -> None:
    ids = await seed(service, alice, n=1)
    with pytest.raises(InvalidInput, match="not both"):
        await service.forget_preview(alice, ids=ids[:1], query="standup")
    assert [c.id for c in (await service.forget_preview(alice, ids=ids[:1])).candidates] == ids[:1]
