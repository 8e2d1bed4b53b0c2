"""Scope isolation: another user's memories, and another agent's or project's, are invisible to
every operation, and the answer is always 'not found' so ids do not leak."""

from __future__ import annotations

import pytest

from mcp_memory.errors import NotFound
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.service import MemoryService

from .conftest import principal

ALICE_A_X = principal("alice", "agent-a", "proj-x")
ALICE_B_X = principal("alice", "agent-b", "proj-x")
ALICE_A_Y = principal("alice", "agent-a", "proj-y")
ALICE_NONE = principal("alice", None, None)
BOB_A_X = principal("bob", "agent-a", "proj-x")


@pytest.fixture
async def seeded(service: MemoryService) -> dict[str, object]:
    """One memory per level of alice's namespace, all with the same words, plus bob's twin."""
    ids = {}
    for level in ("user", "project", "agent", "agent_project"):
        ids[level] = (await service.write(ALICE_A_X, f"launch codes are in the {level} vault",
                                          scope=level)).memory.id
    ids["bob"] = (await service.write(BOB_A_X, "launch codes are in the project vault")).memory.id
    return ids


async def _visible_ids(service: MemoryService, p: Principal) -> set:
    hits = {h.id for h in (await service.search(p, "launch codes vault", limit=50)).hits}
    listed = {m.id for m in (await service.list(p, limit=100)).memories}
    assert hits == listed
    return hits


@pytest.mark.parametrize(("who", "expected"), [
    (ALICE_A_X, {"user", "project", "agent", "agent_project"}),
    (ALICE_B_X, {"user", "project"}),                  # another agent: not agent-a's memories
    (ALICE_A_Y, {"user", "agent"}),                    # another project: not proj-x's memories
    (ALICE_NONE, {"user"}),                            # no agent, no project: the shared level only
    (BOB_A_X, {"bob"}),                                # another user: nothing of alice's
])
async def test_visibility_by_scope(service: MemoryService, seeded: dict, who: Principal, expected: set) -> None:
    assert await _visible_ids(service, who) == {seeded[k] for k in expected}


async def test_invisible_memories_cannot_be_touched(service: MemoryService, seeded: dict) -> None:
    outsiders = [(ALICE_B_X, "agent"), (ALICE_A_Y, "project"), (BOB_A_X, "user"), (BOB_A_X, "agent_project")]
    for who, level in outsiders:
        target = seeded[level]
        with pytest.raises(NotFound):
            await service.get(who, [target])
        with pytest.raises(NotFound):
            await service.get_one(who, target)
        with pytest.raises(NotFound):
            await service.update(who, target, content="pwned")
        with pytest.raises(NotFound):
            await service.forget(who, [target])
        with pytest.raises(NotFound):
            await service.history(who, target)
    # Nothing changed for the owner.
    owner_view = {m.id: m for m in (await service.list(ALICE_A_X, limit=100)).memories}
    assert all(m.version == 1 and "pwned" not in m.content for m in owner_view.values())


async def test_forgotten_memory_cannot_be_restored_from_outside(service: MemoryService, seeded: dict) -> None:
    await service.forget(ALICE_A_X, [seeded["agent_project"]])
    for who in (ALICE_B_X, ALICE_A_Y, BOB_A_X):
        with pytest.raises(NotFound):
            await service.restore(who, [seeded["agent_project"]])
        with pytest.raises(NotFound):
            await service.history(who, seeded["agent_project"])
    assert (await service.restore(ALICE_A_X, [seeded["agent_project"]])).restored


async def test_mixed_batch_is_refused_whole(service: MemoryService, seeded: dict) -> None:
    with pytest.raises(NotFound):
        await service.forget(BOB_A_X, [seeded["bob"], seeded["user"]])
    assert (await service.get(BOB_A_X, [seeded["bob"]])).memories
    assert (await service.get(ALICE_NONE, [seeded["user"]])).memories


async def test_partial_get_reports_invisible_as_not_found(service: MemoryService, seeded: dict) -> None:
    got = await service.get(ALICE_B_X, [seeded["project"], seeded["agent"], seeded["bob"]])
    assert [m.id for m in got.memories] == [seeded["project"]]
    assert set(got.not_found) == {seeded["agent"], seeded["bob"]}


async def test_stats_count_only_visible(service: MemoryService, seeded: dict) -> None:
    assert (await service.overview.stats(ALICE_A_X)).active == 4
    assert (await service.overview.stats(ALICE_NONE)).active == 1
    stats = await service.overview.stats(BOB_A_X)
    assert stats.active == 1 and stats.by_scope == {"project": 1}


async def test_scope_smuggling_strings_are_just_data(service: MemoryService, seeded: dict) -> None:
    """Injection-looking text in queries, tags and filters is bound as parameters."""
    nasty = ["' OR 1=1 --", "alice'); DROP TABLE memories; --", "%", "\\", "alice", "*", "\" OR \"\"=\""]
    for text in nasty:
        hits = (await service.search(BOB_A_X, f"launch codes {text}")).hits
        assert {h.id for h in hits} == {seeded["bob"]}
        assert (await service.search(BOB_A_X, "launch", MemoryFilter(tags=[text]))).hits == []
    assert (await service.overview.stats(ALICE_A_X)).active == 4
