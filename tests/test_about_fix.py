"""Filing a memory about someone else after it was written (memory_update `about`): its keyed fact
moves with it, what it wrongly replaced is current again, and the fix is recorded and undoable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.errors import Conflict, InvalidInput, NotFound, PermissionDenied

from .conftest import principal
from .test_entity_edits import consistent, entity_id


def ago(days: int) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


async def about_of(service, p, memory_id) -> list[str]:
    return (await service.get(p, [memory_id])).memories[0].about or []


async def edits_of(service, p, name: str) -> list:
    return [e for e in (await service.entities.page(p, await entity_id(service, p, name))).edits if e.kind == "about"]


async def test_a_fact_filed_about_the_wrong_person_moves_with_its_subject_and_the_fix_undoes(service, database) -> None:
    p = principal("alice")
    mine = await service.write(p, "I work at Globex.", about=["me"], key="employer", occurred_at=ago(30))
    hers = await service.write(p, "Works at Initech now.", about=["me"], key="employer", occurred_at=ago(2))
    assert (await service.get(p, [mine.memory.id])).memories[0].superseded_by == hers.memory.id

    fixed = await service.update(p, hers.memory.id, about=["Sara"], reason="it was my wife's news")
    assert fixed.status == "updated"
    assert await about_of(service, p, hers.memory.id) == ["Sara"]
    # The user's own employer is current again; Initech is Sara's.
    assert (await service.get(p, [mine.memory.id])).memories[0].superseded_by is None
    found = await service.search(p, "Where does Sara work?", limit=3)
    assert found.hits[0].id == hers.memory.id
    await consistent(database)

    [edit] = await edits_of(service, p, "Sara")
    assert edit.memory == hers.memory.id and "Sara" in edit.summary and edit.reason == "it was my wife's news"
    await service.entities.undo(p, edit.id)
    assert await about_of(service, p, hers.memory.id) == ["the user"]
    assert (await service.get(p, [mine.memory.id])).memories[0].superseded_by == hers.memory.id
    await consistent(database)
    with pytest.raises(Conflict, match="already undone"):
        await service.entities.undo(p, edit.id)


async def test_a_bad_about_names_the_argument_and_changes_nothing(service) -> None:
    p = principal("alice")
    note = await service.write(p, "Greta moved to Oslo.", about=["Greta"], key="home city")
    for bad, said in (([], "about: pass at least one name"), ([""], r"about\[0\]"), (["Greta"], "already about")):
        with pytest.raises(InvalidInput, match=said):
            await service.update(p, note.memory.id, about=bad)
    assert await about_of(service, p, note.memory.id) == ["Greta"]
    with pytest.raises(NotFound):
        await service.update(principal("bob"), note.memory.id, about=["Rui"])
    await service.forget(p, ids=[note.memory.id])
    with pytest.raises(NotFound):  # as any update of a forgotten memory
        await service.update(p, note.memory.id, about=["Rui"])


async def test_an_undo_after_the_memory_changed_is_refused(service) -> None:
    p = principal("alice")
    note = await service.write(p, "Lives in Porto now.", about=["me"], key="home city")
    await service.update(p, note.memory.id, about=["Ana Lima"])
    [edit] = await edits_of(service, p, "Ana Lima")
    await service.update(p, note.memory.id, about=["Rui Costa"])
    with pytest.raises(Conflict, match="later fix of whom a memory is about"):
        await service.entities.undo(p, edit.id)
    assert await about_of(service, p, note.memory.id) == ["Rui Costa"]


async def test_an_undo_after_the_text_was_read_again_is_refused(service) -> None:
    """A new text read since names other things: putting back the mentions the fix found would undo
    that reading too, so the undo says what changed and changes nothing."""
    p = principal("alice")
    note = await service.write(p, "Lives in Porto now.", about=["me"], key="home city")
    await service.update(p, note.memory.id, about=["Ana Lima"])
    [edit] = await edits_of(service, p, "Ana Lima")
    await service.update(p, note.memory.id, content="Lives in Porto now, near Tomasz Wolak.")
    with pytest.raises(Conflict, match="changed since this fix"):
        await service.entities.undo(p, edit.id)
    assert await about_of(service, p, note.memory.id) == ["Ana Lima"]


async def test_memory_update_files_a_memory_about_someone_else_over_mcp(settings, database) -> None:
    """An agent that filed "Got promoted to staff engineer." about the user when it was her
    partner's news fixes it with memory_update's `about`; the user's title stays theirs. Too many
    names, a blank one and another field changed in the same call with a bad name change nothing,
    each named."""
    from .test_server import call, call_error, connect

    async with connect(settings) as client:
        async def write(text: str, when: str) -> str:
            got = await call(client, "memory_write", {"content": text, "about": ["me"], "key": "job title",
                                                     "occurred_at": f"{when}T00:00:00Z"})
            return got["memory"]["id"]

        mine = await write("I am a product designer.", "2024-02-01")
        theirs = await write("Got promoted to staff engineer.", "2025-02-01")
        fixed = await call(client, "memory_update", {"id": theirs, "about": ["Rui Costa"], "reason": "Rui's news"})
        assert fixed["status"] == "updated" and fixed["memory"]["about"] == ["Rui Costa"]
        found = await call(client, "memory_search", {"query": "What is my job title now?"})
        assert found["hits"][0]["id"] == mine and found["hits"][0]["superseded_by"] is None
        for bad, said in (([f"P{i}" for i in range(11)], "about"), (["  "], "about[0]")):
            error = await call_error(client, "memory_update", {"id": theirs, "about": bad, "title": "Rui"})
            assert said in error
        assert (await call(client, "memory_get", {"ids": [theirs]}))["memories"][0]["title"] is None
    await consistent(database)


async def test_an_about_fix_shows_on_the_entity_page_and_undoes_there(database, db_url: str, service) -> None:
    """The console lists an agent's about fix among the entity's edits, with whom it names now, and
    its Undo button puts the memory back as it was."""
    from .http_server import http_server
    from .test_console import ENV, sign_in
    from .test_console_entities import ALICE, edit_ids
    from .test_http import make_key

    note = await service.write(ALICE, "Started at Globex this week.", about=["me"], key="employer")
    await service.update(ALICE, note.memory.id, about=["Rui Costa"], reason="Rui's job")
    rui = await entity_id(service, ALICE, "Rui Costa")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, await make_key(database, "alice", name="curator"))
        page = client.get(f"/ui/entities/{rui}").text
        assert f"memory {note.memory.id}: about Rui Costa now, its keyed employer with it" in page
        assert "why: Rui&#39;s job" in page or "why: Rui's job" in page
        [edit] = edit_ids(page)
        assert client.post(f"/ui/entities/edits/{edit}/undo", data={"csrf": token}).status_code == 303
    assert await about_of(service, ALICE, note.memory.id) == ["the user"]
    await consistent(database)


async def test_a_credential_confined_to_its_agent_refiles_no_user_wide_memory(service) -> None:
    wide = principal(agent=None)
    shared = (await service.write(wide, "Dana Ruiz works at Acme.", about=["Dana Ruiz"], key="employer",
                                  scope="user")).memory.id
    confined = principal().model_copy(update={"agent_confined": True})
    with pytest.raises(PermissionDenied):
        await service.update(confined, shared, about=["Rui Costa"])
    assert await about_of(service, wide, shared) == ["Dana Ruiz"]
