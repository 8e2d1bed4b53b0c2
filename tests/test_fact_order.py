"""A keyed fact's date corrected with memory_update: the values of its one-at-a-time attribute
follow the new order (repository/fact_order.py) in reads, search and the profile, with history, and
nothing else moves: a pinned value, a writer's own link, another subject's or attribute's values, a
narrower credential's reach."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID

from mcp_memory.repository.graph_checks import inconsistencies

from .conftest import principal, until_waiting


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


async def successors(service, p, ids: list[UUID]) -> list[UUID | None]:
    got = {m.id: m.superseded_by for m in (await service.get(p, ids)).memories}
    return [got[i] for i in ids]


async def current(service, p, name: str, attribute: str) -> UUID:
    profile = await service.entities.profile(p, name)
    return next(a for a in profile.attributes if a.attribute == attribute).current[0].memory


async def test_a_value_moved_before_the_one_that_replaced_it_is_replaced_by_it(service, database) -> None:
    """"She joined Globex in 2023, not 2025": Acme (2024) holds again, Globex is replaced by it."""
    p = principal()
    acme = (await service.write(p, "Dana Ruiz works at Acme.", about=["Dana Ruiz"], key="employer",
                                occurred_at=day("2024-03-01"))).memory.id
    globex = (await service.write(p, "Dana Ruiz joined Globex.", about=["Dana Ruiz"], key="employer",
                                  occurred_at=day("2025-02-01"))).memory.id
    assert await successors(service, p, [acme, globex]) == [globex, None]

    await service.update(p, globex, occurred_at=day("2023-01-01"), reason="date fix")
    assert await successors(service, p, [acme, globex]) == [None, acme]
    assert await current(service, p, "Dana Ruiz", "employer") == acme
    hits = (await service.search(p, "Where does Dana work now?")).hits
    assert [h.id for h in hits[:2]] == [acme, globex] and hits[0].superseded_by is None
    history = (await service.history(p, acme)).entries
    assert history[-1].old == {"superseded_by": str(globex)} and history[-1].new == {"superseded_by": None}
    assert f"after the date of {globex} moved" in history[-1].reason
    assert (await service.history(p, globex)).entries[-1].new == {"superseded_by": str(acme)}
    # A value written later but dated before both does not replace the live one (as on any write).
    hooli = (await service.write(p, "Dana Ruiz worked at Hooli.", about=["Dana Ruiz"], key="employer",
                                 occurred_at=day("2020-05-01"))).memory.id
    assert (await successors(service, p, [hooli]))[0] is not None
    assert await current(service, p, "Dana Ruiz", "employer") == acme
    async with database.admin.acquire() as conn:
        assert not any((await inconsistencies(conn)).values())


async def test_a_value_moved_after_the_newest_replaces_it(service) -> None:
    p = principal()
    ids = [(await service.write(p, f"Greta Ibarra moved to {city}.", about=["Greta Ibarra"], key="home city",
                                occurred_at=day(f"202{i}-01-01"))).memory.id
           for i, city in enumerate(("Oslo", "Bergen", "Lisbon"))]
    assert await successors(service, p, ids) == [ids[1], ids[2], None]
    await service.update(p, ids[1], occurred_at=day("2026-01-01"))  # Bergen is the newest now
    assert await successors(service, p, ids) == [ids[1], None, ids[1]]
    assert await current(service, p, "Greta Ibarra", "home city") == ids[1]
    assert (await service.search(p, "Where does Greta live now?")).hits[0].id == ids[1]
    # Back where it was: the order of the writes again.
    await service.update(p, ids[1], occurred_at=day("2021-01-01"))
    assert (await successors(service, p, ids))[1:] == [ids[2], None]


async def test_what_a_move_leaves_alone(service) -> None:
    """Another attribute's and another subject's values, a many-valued attribute, a pinned value
    (never replaced), an unchanged date, a text edit: no link moves, no history row is added."""
    p = principal()
    city = (await service.write(p, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                                occurred_at=day("2025-06-01"))).memory.id
    pinned = (await service.write(p, "Greta Ibarra works at Ironbark.", about=["Greta Ibarra"], key="employer",
                                  occurred_at=day("2023-01-01"), pinned=True)).memory.id
    job = (await service.write(p, "Greta Ibarra joined Saltmarsh Bank.", about=["Greta Ibarra"], key="employer",
                               occurred_at=day("2024-01-01"))).memory.id
    his = (await service.write(p, "Tomasz Lind works at Saltmarsh Bank.", about=["Tomasz Lind"], key="employer",
                               occurred_at=day("2022-01-01"))).memory.id
    allergy = (await service.write(p, "Greta Ibarra is allergic to penicillin.", about=["Greta Ibarra"],
                                   key="allergies", occurred_at=day("2021-01-01"))).memory.id
    every = [city, pinned, job, his, allergy]
    before = await successors(service, p, every)
    assert before == [None, None, None, None, None]  # a pinned value is never replaced

    async def events() -> list[int]:
        return [len((await service.history(p, i)).entries) for i in every]

    counted = await events()
    await service.update(p, job, occurred_at=day("2026-01-01"))  # still after the pinned value
    await service.update(p, job, content="Greta Ibarra joined Saltmarsh Bank as an analyst.")
    await service.update(p, job, occurred_at=day("2026-01-01"))  # the same date: nothing moves
    assert await successors(service, p, every) == before
    assert await events() == [n + (2 if i == job else 0) for i, n in zip(every, counted, strict=True)]
    # Moved before the pinned value it is replaced by it; the pinned one stays unreplaced.
    await service.update(p, job, occurred_at=day("2022-06-01"))
    assert await successors(service, p, [pinned, job]) == [None, pinned]


async def test_a_writers_own_link_and_a_narrower_credentials_reach_stay(service) -> None:
    """A link the writer made to a memory outside the attribute's values stays; a credential
    confined to its agent changes no memory outside it (a user-wide value), as on a write."""
    p = principal()
    note = (await service.write(p, "Dana said Acme's office is in Lyon.", occurred_at=day("2025-06-01"))).memory.id
    wide = principal(agent=None)
    old = (await service.write(wide, "Dana Ruiz works at Acme.", about=["Dana Ruiz"], key="employer",
                               scope="user", occurred_at=day("2024-01-01"))).memory.id
    confined = principal().model_copy(update={"agent_confined": True})
    new = (await service.write(confined, "Dana Ruiz joined Globex.", about=["Dana Ruiz"], key="employer",
                               scope="agent", occurred_at=day("2025-01-01"))).memory.id
    assert await successors(service, p, [old, new]) == [None, None]  # confined: the user-wide one stays
    await service.update(confined, new, occurred_at=day("2026-01-01"))
    assert await successors(service, p, [old, new]) == [None, None]  # and stays on a move
    await service.update(confined, new, occurred_at=day("2023-01-01"))
    assert await successors(service, p, [old, new]) == [None, old]
    linked = (await service.write(p, "Dana Ruiz moved to Initech.", about=["Dana Ruiz"], key="employer",
                                  occurred_at=day("2022-01-01"), supersedes=[note])).memory.id
    await service.update(p, linked, occurred_at=day("2021-01-01"))
    assert (await successors(service, p, [note]))[0] == linked


async def across(database, hold: str, held_id: UUID, then: str, then_id: UUID, work):
    """`work()` while another transaction holds `hold`'s rows and, once `work` is waiting on them,
    asks for `then`'s, which `work` holds: a cycle PostgreSQL breaks by stopping the transaction
    whose deadlock check runs first. That must be `work`'s: the other asks only once `work` waits on
    it (a fixed pause, then any backend's wait, each failed once in a full run), and checks only
    after a minute."""
    async with database.admin.acquire() as other:
        held = other.transaction()
        await held.start()
        await other.execute("SET LOCAL deadlock_timeout = '1min'")
        await other.execute(hold, held_id)

        async def then_theirs() -> None:
            await until_waiting(other, "the work never waited on the held row", blocked_by=other.get_server_pid())
            await other.execute(then, then_id)
            await held.rollback()

        waiting = asyncio.create_task(then_theirs())
        done = await work()
        await waiting
        return done


async def test_a_move_stopped_to_break_a_deadlock_goes_again(service, database) -> None:
    """The update locks its own row before the attribute's other values; a transaction holding one
    of those and then asking for the moved row is a cycle. The update goes again from its start and
    lands (memory_update.py, repository/deadlocks.py)."""
    p = principal()
    acme = (await service.write(p, "Dana Ruiz works at Acme.", about=["Dana Ruiz"], key="employer",
                                occurred_at=day("2024-03-01"))).memory.id
    globex = (await service.write(p, "Dana Ruiz joined Globex.", about=["Dana Ruiz"], key="employer",
                                  occurred_at=day("2025-02-01"))).memory.id
    row = "SELECT 1 FROM memories WHERE id = $1 FOR UPDATE"
    await across(database, row, acme, row, globex,
                 lambda: service.update(p, globex, occurred_at=day("2023-01-01")))
    assert await successors(service, p, [acme, globex]) == [None, acme]
    assert [e.event for e in (await service.history(p, globex)).entries].count("UPDATE") == 2  # once, not twice


async def test_a_key_fix_stopped_to_break_a_deadlock_goes_again(service, database) -> None:
    """A key fix locks the memory's facts before the attribute's values: a transaction holding one
    value and then asking for those facts is a cycle; the fix goes again and lands (entities.py)."""
    p = principal()
    works = (await service.write(p, "Greta works at Ironbark Studios.", about=["Greta Ibarra"], key="employer",
                                 occurred_at=day("2024-02-01"))).memory.id
    title = (await service.write(p, "Greta is now lead designer.", about=["Greta"], key="employer",
                                 occurred_at=day("2025-02-01"))).memory.id
    fixed = await across(database, "SELECT 1 FROM memories WHERE id = $1 FOR UPDATE", works,
                         "SELECT 1 FROM memory_facts WHERE memory_id = $1 FOR UPDATE", title,
                         lambda: service.entities.fix_key(p, title, "job title"))
    assert await successors(service, p, [works, title]) == [None, None]
    await service.entities.undo(p, fixed.id)
    assert await successors(service, p, [works]) == [title]


async def test_memory_update_files_a_keyed_fact_under_another_key_as_the_consoles_fix_does(settings, database) -> None:
    """An agent that keyed "Greta is now lead designer." as her employer fixes it with
    memory_update's `key`: her employer before is current again, and the fix is the console's
    (recorded, undoable). A key no attribute, a memory keyed nothing and another field changed in
    the same call change nothing, each named."""
    from .test_server import call, call_error, connect

    async with connect(settings) as client:
        async def write(text: str, key: str, when: str) -> str:
            got = await call(client, "memory_write", {"content": text, "about": ["Greta Ibarra"], "key": key,
                                                     "occurred_at": f"{when}T00:00:00Z"})
            return got["memory"]["id"]

        works = await write("Greta works at Ironbark Studios.", "employer", "2024-02-01")
        title = await write("Greta is now lead designer.", "employer", "2025-02-01")
        found = await call(client, "memory_search", {"query": "Which company does Greta Ibarra work for now?"})
        assert found["hits"][0]["id"] == title
        fixed = await call(client, "memory_update", {"id": title, "key": "job title", "reason": "a title"})
        assert fixed["status"] == "updated" and fixed["memory"]["key"] == "job title"
        found = await call(client, "memory_search", {"query": "Which company does Greta Ibarra work for now?"})
        assert found["hits"][0]["id"] == works and found["hits"][0]["superseded_by"] is None
        plain = (await call(client, "memory_write", {"content": "Lunch with Greta on Friday."}))["memory"]["id"]
        said = await call_error(client, "memory_update", {"id": plain, "key": "employer", "title": "Lunch"})
        assert "no keyed attribute" in said and "nothing was changed" in said
        assert (await call(client, "memory_get", {"ids": [plain]}))["memories"][0]["title"] is None
        said = await call_error(client, "memory_update", {"id": title, "key": "   "})
        assert "key" in said
    async with database.admin.acquire() as conn:
        edits = [tuple(r) for r in await conn.fetch("SELECT kind, reason FROM entity_edits WHERE kind = 'key'")]
        assert edits == [("key", "a title")]
        assert not any((await inconsistencies(conn)).values())
