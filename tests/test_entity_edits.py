"""A person's corrections of the graph through the service on a real database: merge one entity into
another (mentions and facts move, the merged one keeps its row), split it off again (exactly the rows
that moved come back), fix or remove a memory's key (what is current follows; superseded_by is left
alone), each recorded in entity_edits and undoable. Refusals change nothing: a read-only or confined
credential, a namespace that does not contain the other, rows in namespaces the session cannot act
in, another user's ids, a later edit in the way. After every edit the graph's checks find nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from mcp_memory.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from mcp_memory.models import Principal
from mcp_memory.repository.graph_checks import inconsistencies

from .conftest import principal

READ_ONLY = frozenset({"read"})


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


async def snapshot(database) -> dict[str, list[dict[str, Any]]]:
    """Every graph row and every memory's superseded_by and version, as the owner sees them (no
    entity's updated_at: an edit and its undo touch it)."""
    async with database.admin.acquire() as conn:
        return {
            "entities": [dict(r) for r in await conn.fetch(
                "SELECT user_id, id, agent_id, project_id, kind, name, canonical, aliases, merged_into, created_at "
                "FROM entities ORDER BY user_id, id")],
            "aliases": [dict(r) for r in await conn.fetch(
                "SELECT * FROM entity_aliases ORDER BY user_id, entity_id, alias")],
            "mentions": [dict(r) for r in await conn.fetch(
                "SELECT * FROM memory_entities ORDER BY user_id, memory_id, entity_id")],
            "facts": [dict(r) for r in await conn.fetch(
                "SELECT * FROM memory_facts ORDER BY user_id, memory_id, entity_id")],
            "memories": [dict(r) for r in await conn.fetch(
                "SELECT id, superseded_by, version, updated_at FROM memories ORDER BY id")],
        }


def as_before(now: dict[str, list[dict[str, Any]]], before: dict[str, list[dict[str, Any]]]) -> bool:
    """The graph's rows and every memory's successor as in `before`: a key fix's links and their
    undo each bump the memory's version, with a history row each (repository/fact_order.py)."""
    def links(s: dict[str, list[dict[str, Any]]]) -> list[tuple[Any, Any]]:
        return [(m["id"], m["superseded_by"]) for m in s["memories"]]
    graph = [k for k in before if k != "memories"]
    return [now[k] for k in graph] == [before[k] for k in graph] and links(now) == links(before)


async def consistent(database) -> None:
    async with database.admin.acquire() as conn:
        found = await inconsistencies(conn)
    assert found == {name: 0 for name in found}, found


async def entity_id(service, p: Principal, name: str) -> UUID:
    return (await service.entities.profile(p, name)).entity.id


async def current(service, p: Principal, who: str, attribute: str) -> list[UUID]:
    profile = await service.entities.profile(p, who)
    found = next((a for a in profile.attributes if a.attribute == attribute), None)
    return [v.memory for v in found.current] if found else []


async def greta_and_gigi(service, p: Principal) -> dict[str, UUID]:
    """Greta Ibarra, and "Gigi", who is Greta by another name: one memory names both with Greta as
    subject, one with Gigi as subject, each has a keyed fact."""
    ids = {}
    for name, content, about, key, when in (
            ("oslo", "Greta Ibarra lives in Oslo.", ["Greta Ibarra"], "home city", "2024-01-01"),
            ("lisbon", "Gigi moved to Lisbon.", ["Gigi"], "where she lives", "2025-03-01"),
            ("lunch", "Greta Ibarra and Gigi had lunch by the harbour.", None, None, "2025-04-01"),
            ("gym", "Gigi met Greta Ibarra at the gym.", ["Gigi"], None, "2025-05-01"),
            ("tea", "Gigi prefers green tea.", ["Gigi"], "favourite drink", "2025-06-01")):
        ids[name] = (await service.write(p, content, about=about, key=key, occurred_at=day(when))).memory.id
    return ids


async def test_a_merge_moves_mentions_and_facts_and_a_split_puts_back_exactly_what_moved(service, database) -> None:
    p = principal()
    ids = await greta_and_gigi(service, p)
    greta, gigi = await entity_id(service, p, "Greta Ibarra"), await entity_id(service, p, "Gigi")
    assert await current(service, p, "Greta Ibarra", "home city") == [ids["oslo"]]
    before = await snapshot(database)

    merged = await service.entities.merge(p, greta, gigi, reason="Gigi is Greta")
    assert (merged.kind, merged.entity, merged.other, merged.reason) == ("merge", greta, gigi, "Gigi is Greta")
    assert "merged Gigi into Greta Ibarra" in merged.summary
    await consistent(database)
    # Greta now holds Gigi's facts: Lisbon is her current city, Oslo the earlier one.
    assert await current(service, p, "Greta Ibarra", "home city") == [ids["lisbon"]]
    profile = await service.entities.profile(p, "Gigi")  # the old name is an alias now
    assert profile.entity.id == greta
    city = next(a for a in profile.attributes if a.attribute == "home city")
    assert [v.memory for v in city.earlier] == [ids["oslo"]] and city.current[0].valid_from == day("2025-03-01")
    assert gigi not in {e.id for e in (await service.entities.list(p)).entities}
    page = await service.entities.page(p, greta)
    assert page.entity.aliases == ["gigi"]
    assert [t.memory for t in page.timeline] == [ids[n] for n in ("tea", "gym", "lunch", "lisbon", "oslo")]
    assert {t.memory: t.role for t in page.timeline}[ids["gym"]] == "about"  # Gigi was its subject
    assert [m.id for m in page.merged] == [gigi] and page.merged[0].edit == merged.id
    gone = await service.entities.page(p, gigi)
    assert gone.entity.merged_into == greta and gone.timeline == [] and gone.attributes == []
    # Nothing was marked superseded or not: the older city keeps its (absent) successor.
    after = await snapshot(database)
    assert after["memories"] == before["memories"]
    # A new memory naming Gigi is Greta's.
    later = await service.write(p, "Gigi adopted a cat.", about=["Gigi"])
    assert later.memory.about == ["Gigi"]
    assert later.memory.id in {t.memory for t in (await service.entities.page(p, greta)).timeline}

    split = await service.entities.split(p, gigi, reason="not the same person after all")
    assert split.kind == "split" and "split Gigi off Greta Ibarra" in split.summary
    await consistent(database)
    restored = await snapshot(database)
    # Exactly as before, but for the memory written since (still Greta's: it was never Gigi's).
    later_rows = [r for r in restored["mentions"] if r["memory_id"] == later.memory.id]
    assert [r["entity_id"] for r in later_rows] == [greta]
    restored["mentions"] = [r for r in restored["mentions"] if r["memory_id"] != later.memory.id]
    restored["memories"] = [r for r in restored["memories"] if r["id"] != later.memory.id]
    assert restored == before
    assert await current(service, p, "Greta Ibarra", "home city") == [ids["oslo"]]
    assert await current(service, p, "Gigi", "home city") == [ids["lisbon"]]
    edits = (await service.entities.page(p, greta)).edits
    assert [(e.kind, e.undone_at is not None) for e in edits] == [("split", False), ("merge", True)]
    assert edits[1].undone_by == p.actor

    again = await service.entities.undo(p, split.id)  # a split undone: merged again
    assert again.kind == "merge" and again.id != merged.id
    assert await current(service, p, "Greta Ibarra", "home city") == [ids["lisbon"]]
    await consistent(database)
    with pytest.raises(Conflict, match="already undone"):
        await service.entities.undo(p, merged.id)


async def test_fixing_a_key_changes_what_is_current_and_which_memory_replaces_which(service, database) -> None:
    p = principal()
    works = await service.write(p, "Greta works at Ironbark Studios.", about=["Greta Ibarra"], key="employer",
                                occurred_at=day("2024-02-01"))
    title = await service.write(p, "Greta is now lead designer.", about=["Greta"], key="employer",
                                occurred_at=day("2025-02-01"))  # filed under the wrong key
    assert title.memory.replaced == [works.memory.id]
    assert await current(service, p, "Greta Ibarra", "employer") == [title.memory.id]
    hits = (await service.search(p, "Which company does Greta Ibarra work for now?", explain=True)).hits
    assert hits[0].id == title.memory.id and hits[0].explain["fact"] == 1
    before = await snapshot(database)

    fixed = await service.entities.fix_key(p, title.memory.id, "job title", reason="a title, not an employer")
    assert fixed.kind == "key" and fixed.memory == title.memory.id and "employer → job title" in fixed.summary
    await consistent(database)
    assert await current(service, p, "Greta Ibarra", "employer") == [works.memory.id]
    assert await current(service, p, "Greta Ibarra", "job title") == [title.memory.id]
    hits = (await service.search(p, "Which company does Greta Ibarra work for now?", explain=True)).hits
    assert hits[0].id == works.memory.id and hits[0].explain["fact"] == 1 and hits[0].valid_until is None
    assert (await service.get(p, [title.memory.id])).memories[0].key == "job title"
    # The employer before is no longer replaced by a memory that states no employer (fact_order.py).
    assert (await service.get_one(p, works.memory.id)).superseded_by is None
    assert hits[0].superseded_by is None
    entry = (await service.history(p, works.memory.id)).entries[-1]
    assert entry.old == {"superseded_by": str(title.memory.id)} and entry.new == {"superseded_by": None}
    assert "its key fixed" in entry.reason
    page = await service.entities.page(p, await entity_id(service, p, "Greta Ibarra"))
    assert page.superseded == {}

    undone = await service.entities.undo(p, fixed.id)
    assert undone.id == fixed.id and undone.undone_at is not None
    assert as_before(await snapshot(database), before)
    assert (await service.history(p, works.memory.id)).entries[-1].new == {"superseded_by": str(title.memory.id)}
    await consistent(database)

    removed = await service.entities.fix_key(p, title.memory.id, None)
    assert "removed" in removed.summary
    assert await current(service, p, "Greta Ibarra", "employer") == [works.memory.id]
    assert (await service.get(p, [title.memory.id])).memories[0].key is None
    assert (await service.get_one(p, works.memory.id)).superseded_by is None
    await consistent(database)
    await service.entities.undo(p, removed.id)
    assert as_before(await snapshot(database), before)

    # Fixes of two memories are undone in any order; two of one memory, the later first.
    first = await service.entities.fix_key(p, title.memory.id, "job title")
    other = await service.entities.fix_key(p, works.memory.id, "team")
    await service.entities.undo(p, first.id)
    again = await service.entities.fix_key(p, title.memory.id, "job title")
    later = await service.entities.fix_key(p, title.memory.id, "team lead")
    with pytest.raises(Conflict, match="later key fix"):
        await service.entities.undo(p, again.id)
    for edit in (later, again, other):
        await service.entities.undo(p, edit.id)
    assert as_before(await snapshot(database), before)
    await consistent(database)

    # A key fixed into an attribute with a later value: replaced by that one; a link changed since
    # the fix leaves its undo refused, nothing changed.
    lead = await service.write(p, "Greta was promoted to design director.", about=["Greta"], key="job title",
                               occurred_at=day("2026-01-01"))
    into = await service.entities.fix_key(p, title.memory.id, "job title")
    assert (await service.get_one(p, title.memory.id)).superseded_by == lead.memory.id
    await service.update(p, lead.memory.id, occurred_at=day("2023-01-01"))  # moves the links again
    with pytest.raises(Conflict, match="changed since the key fix"):
        await service.entities.undo(p, into.id)
    await consistent(database)


async def test_bad_input_and_refusals_change_nothing(service, database) -> None:
    p = principal()
    ids = await greta_and_gigi(service, p)
    greta, gigi = await entity_id(service, p, "Greta Ibarra"), await entity_id(service, p, "Gigi")
    plain = (await service.write(p, "Greta Ibarra likes the sea.")).memory.id
    before = await snapshot(database)
    refused: list[tuple[type[Exception], str, Any]] = [
        (PermissionDenied, "lacks the 'write'", service.entities.merge(principal(permissions=READ_ONLY), greta, gigi)),
        (PermissionDenied, "lacks the 'write'", service.entities.fix_key(principal(permissions=READ_ONLY),
                                                                         ids["oslo"], "job title")),
        (InvalidInput, "into itself", service.entities.merge(p, greta, greta)),
        (NotFound, "no entity", service.entities.merge(p, greta, uuid4())),
        (NotFound, "no entity", service.entities.merge(principal("bob"), greta, gigi)),  # another user's ids
        (NotFound, "no entity", service.entities.split(principal("bob"), gigi)),
        (Conflict, "not merged", service.entities.split(p, gigi)),
        (NotFound, "no entity edit", service.entities.undo(p, uuid4())),
        (InvalidInput, "names no attribute", service.entities.fix_key(p, ids["oslo"], "the")),
        (InvalidInput, "1-60 characters", service.entities.fix_key(p, ids["oslo"], "x" * 61)),
        (InvalidInput, "already filed", service.entities.fix_key(p, ids["oslo"], "lives in")),
        (InvalidInput, "no keyed attribute", service.entities.fix_key(p, plain, "job title")),
        (NotFound, "no memory", service.entities.fix_key(principal("bob"), ids["oslo"], "job title")),
        (InvalidInput, "reason: at most", service.entities.merge(p, greta, gigi, reason="x" * 1001)),
    ]
    for kind, message, call in refused:
        with pytest.raises(kind, match=message):
            await call
    assert await snapshot(database) == before

    # An edit of another user is not found, and the second undo of one is refused.
    merged = await service.entities.merge(p, greta, gigi)
    with pytest.raises(NotFound, match="no entity edit"):
        await service.entities.undo(principal("bob"), merged.id)
    with pytest.raises(Conflict, match="already merged"):
        await service.entities.merge(p, greta, gigi)
    # A later edit touching the same entities is undone first.
    fixed = await service.entities.fix_key(p, ids["lisbon"], "hometown")
    with pytest.raises(Conflict, match="later key fix .* undo it first"):
        await service.entities.undo(p, merged.id)
    await service.entities.undo(p, fixed.id)
    await service.entities.undo(p, merged.id)
    restored = await snapshot(database)
    assert restored == before
    await consistent(database)


async def test_namespaces_decide_what_may_be_merged(service, database) -> None:
    here = principal()  # agent-a · proj-x
    shared = principal(agent=None, project=None)
    project = principal(agent=None, project="proj-x")
    await service.write(shared, "Tomasz Wolak runs the bakery.", about=["Tomasz Wolak"])
    await service.write(project, "Tom leads the proj-x standup.", about=["Tom"])
    tomasz, tom = await entity_id(service, here, "Tomasz Wolak"), await entity_id(service, here, "Tom")
    before = await snapshot(database)
    # The shared Tomasz does not live in proj-x alone: proj-x's Tom cannot take him in.
    with pytest.raises(InvalidInput, match="does not contain.*merge the other way round"):
        await service.entities.merge(here, tom, tomasz)
    # A credential confined to its agents and projects changes nothing shared beyond them.
    confined = here.model_copy(update={"agent_confined": True, "project_confined": True})
    with pytest.raises(PermissionDenied, match="shared beyond this credential"):
        await service.entities.merge(confined, tomasz, tom)
    # Another agent names the shared Tomasz too: from agent-a those mentions can be neither seen nor
    # moved, so the merge of Tomasz into anything is refused, whole.
    other_agent = principal(agent="agent-b", project=None)
    await service.write(other_agent, "Tomasz Wolak fixed the oven.", about=["Tomasz Wolak"], scope="agent")
    await service.write(shared, "Tomasz the chef bakes rye.", about=["Chef Tomasz"])
    chef_id = await entity_id(service, here, "Chef Tomasz")
    before = await snapshot(database)
    with pytest.raises(PermissionDenied, match="namespaces this session does not act in"):
        await service.entities.merge(here, chef_id, tomasz)
    assert await snapshot(database) == before
    # Into the wider one it goes; the merge is recorded in proj-x's namespace.
    merged = await service.entities.merge(here, tomasz, tom)
    await consistent(database)
    async with database.admin.acquire() as conn:
        row = await conn.fetchrow("SELECT agent_id, project_id FROM entity_edits WHERE id = $1", merged.id)
    assert (row["agent_id"], row["project_id"]) == (None, "proj-x")
    with pytest.raises(NotFound):  # invisible from another project
        await service.entities.undo(principal(project="proj-y"), merged.id)
    await service.entities.undo(here, merged.id)
    await consistent(database)


async def test_row_level_security_alone_keeps_edits_apart(service, database, monkeypatch) -> None:
    from mcp_memory.repository import sql

    alice = principal()
    ids = await greta_and_gigi(service, alice)
    greta, gigi = await entity_id(service, alice, "Greta Ibarra"), await entity_id(service, alice, "Gigi")
    await service.write(principal(project="proj-y"), "Wanjiru Kamau plays the cello.", about=["Wanjiru Kamau"],
                        scope="project")
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    before = await snapshot(database)
    for who in (principal("bob"), principal("alice", agent="agent-b", project="proj-y")):
        with pytest.raises(NotFound):
            await service.entities.merge(who, greta, gigi)
        with pytest.raises(NotFound):
            await service.entities.page(who, greta)
        with pytest.raises(NotFound):
            await service.entities.fix_key(who, ids["oslo"], "hometown")
        assert await service.entities.of_memory(who, ids["lunch"]) == []
    assert await snapshot(database) == before
    merged = await service.entities.merge(alice, greta, gigi)  # the same calls work under RLS alone
    fixed = await service.entities.fix_key(alice, ids["tea"], "favourite food")
    for who in (principal("bob"), principal("alice", agent="agent-b", project="proj-y")):
        for edit in (merged.id, fixed.id):
            with pytest.raises(NotFound):
                await service.entities.undo(who, edit)
    wanjiru = await entity_id(service, principal(project="proj-y"), "Wanjiru Kamau")
    with pytest.raises(NotFound):  # proj-x does not see proj-y's entity
        await service.entities.merge(alice, greta, wanjiru)
    page = await service.entities.page(alice, greta)
    assert [e.kind for e in page.edits] == ["key", "merge"]
    assert {m.name for m in await service.entities.of_memory(alice, ids["lunch"])} == {"Greta Ibarra"}
    await service.entities.undo(alice, fixed.id)
    await service.entities.undo(alice, merged.id)
    assert await snapshot(database) == before
    await consistent(database)
    async with database.pool.acquire() as conn:  # the application role with no user set sees nothing
        assert await conn.fetchval("SELECT count(*) FROM entity_edits") == 0
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM entity_edits") == 3


async def test_a_forgotten_memorys_key_is_not_fixed(service) -> None:
    p = principal("alice")
    note = (await service.write(p, "Greta works at Ironbark.", about=["Greta"], key="employer")).memory.id
    await service.forget(p, ids=[note])
    with pytest.raises(Conflict, match="forgotten: restore it first"):
        await service.entities.fix_key(p, note, "job title")
