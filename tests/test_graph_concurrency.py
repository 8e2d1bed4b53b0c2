"""Writers at once (two editor windows, an agent and a capture hook, a batch import beside a chat)
writing keyed values of the same people: every call should succeed and each person's one-at-a-time
attribute should have one live value: each write takes the locks of the names it holds, in one order,
before it creates entities or replaces facts (repository/graph.py `lock_names`)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from mcp_memory.models import WriteItem
from mcp_memory.repository.graph_checks import inconsistencies

from .conftest import principal
from .test_graph_killed import item


async def test_writers_at_once_on_the_same_people_all_succeed_and_leave_one_live_value(service, database) -> None:
    p = principal()

    def when(it: dict) -> datetime:
        return datetime.fromisoformat(it["occurred_at"])

    async def one(n: int) -> None:
        it = item(n)
        await service.write(p, it["content"], about=it["about"], key=it["key"], occurred_at=when(it))

    async def batch(n: int) -> None:
        await service.write_many(p, [WriteItem(content=it["content"], about=it["about"], key=it["key"],
                                               occurred_at=when(it)) for it in map(item, range(n, n + 4))])

    results = await asyncio.gather(*map(one, range(60)), *map(batch, range(60, 240, 4)), return_exceptions=True)
    failed = [f"{type(r).__name__}: {str(r).splitlines()[0]}" for r in results if isinstance(r, BaseException)]
    async with database.admin.acquire() as conn:
        assert await inconsistencies(conn) == {name: 0 for name in await inconsistencies(conn)}
        heads = await live_values(conn)
    assert failed == []
    assert [dict(r) for r in heads if r["live"] != 1] == []


async def live_values(conn) -> list:
    """Each entity's one-at-a-time attributes with how many live values each holds (one, if right)."""
    return await conn.fetch(
        """SELECT e.name, f.attribute, count(*) AS live FROM memory_facts f
           JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
           JOIN entities e ON e.user_id = f.user_id AND e.id = f.entity_id
           WHERE f.single AND m.superseded_by IS NULL AND m.deleted_at IS NULL
           GROUP BY e.name, f.attribute""")
