"""capture/inflight.py: what a hook answering with context waits for before it recalls."""

from __future__ import annotations

import anyio

from mcp_memory.capture.inflight import InFlight

SHOP = ("alice", "shop")


async def test_another_sessions_capture_is_waited_for_until_it_is_stored() -> None:
    inflight, order = InFlight(), []
    capture = inflight.started(SHOP, "first-run")

    async def store_it() -> None:
        await anyio.sleep(0.1)
        order.append("stored")
        inflight.finished(capture)

    async with anyio.create_task_group() as tg:
        tg.start_soon(store_it)
        with anyio.fail_after(10):
            await inflight.settled(SHOP, "next-run", within=30)
        order.append("recalled")
    assert order == ["stored", "recalled"]


async def test_the_sessions_own_capture_and_other_stores_are_not_waited_for() -> None:
    inflight = InFlight()
    inflight.started(SHOP, "this-run")                 # never finishes
    inflight.started(("alice", "elsewhere"), "other")  # another project's
    inflight.started(("bob", "shop"), "other")         # another user's
    with anyio.fail_after(1):   # returns at once, not after `within`
        await inflight.settled(SHOP, "this-run", within=30)


async def test_a_capture_that_never_finishes_costs_the_bound_only() -> None:
    inflight = InFlight()
    stuck = inflight.started(SHOP, "first-run")
    with anyio.fail_after(10):
        await inflight.settled(SHOP, "next-run", within=0.2)
    assert not stuck.done.is_set()
    inflight.finished(stuck)
    with anyio.fail_after(1):
        await inflight.settled(SHOP, "next-run", within=30)   # nothing running any more
