"""Write, update, forget, restore and history through the service, on a real database."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

from .conftest import principal


async def table_counts(db: Database) -> tuple[int, int]:
    async with db.admin.acquire() as conn:
        return (await conn.fetchval("SELECT count(*) FROM memories"),
                await conn.fetchval("SELECT count(*) FROM memory_history"))


async def test_write_then_get_search_list(service: MemoryService, alice: Principal) -> None:
    written = await service.write(alice, "  The deploy key lives in 1Password under 'infra'  ",
                                  title="Deploy key", kind="fact", tags=["Infra", "secrets", "infra"])
    assert written.status == "created"
    m = written.memory
    assert m.content == "The deploy key lives in 1Password under 'infra'"
    assert m.tags == ["infra", "secrets"]
    assert m.scope.level == "project" and m.scope.project_id == "proj-x" and m.scope.agent_id is None
    assert m.version == 1 and m.source == "pytest"

    got = await service.get(alice, [m.id])
    assert [g.id for g in got.memories] == [m.id] and got.memories[0].access_count == 1

    hits = (await service.search(alice, "where is the deploy key?")).hits
    assert hits and hits[0].id == m.id

    page = await service.list(alice)
    assert [x.id for x in page.memories] == [m.id] and page.next_cursor is None


async def test_exact_duplicate_returns_existing(service: MemoryService, alice: Principal,
                                                database: Database) -> None:
    first = await service.write(alice, "Prefers tabs over spaces")
    again = await service.write(alice, "  prefers TABS   over spaces ")
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    # The same text in another scope is another memory.
    other = await service.write(alice, "Prefers tabs over spaces", scope="user")
    assert other.status == "created" and other.memory.id != first.memory.id
    assert (await table_counts(database))[0] == 2


async def test_concurrent_duplicate_writes_make_one_row(service: MemoryService, alice: Principal,
                                                        database: Database) -> None:
    results = await asyncio.gather(*[service.write(alice, "Racing text") for _ in range(8)])
    assert sorted(r.status for r in results) == ["created"] + ["duplicate"] * 7
    assert len({r.memory.id for r in results}) == 1
    assert await table_counts(database) == (1, 1)


async def test_idempotency_key_makes_retries_safe(service: MemoryService, alice: Principal,
                                                  database: Database) -> None:
    first = await service.write(alice, "Retry me", tags=["a"], idempotency_key="req-1")
    retry = await service.write(alice, "retry   ME", tags=["a"], idempotency_key="req-1")  # the same request
    assert retry.status == "duplicate" and retry.memory.id == first.memory.id
    assert await table_counts(database) == (1, 1)


@pytest.mark.parametrize("change", [{"content": "Retry me, changed by a confused client"}, {"tags": ["b"]},
                                    {"kind": "fact"}, {"scope": "user"}, {"importance": 0.9}])
async def test_an_idempotency_key_reused_for_another_request_is_refused(
        service: MemoryService, alice: Principal, database: Database, change: dict) -> None:
    first = await service.write(alice, "Retry me", tags=["a"], idempotency_key="req-1")
    request = {"content": "Retry me", "tags": ["a"], **change}
    with pytest.raises(Conflict, match="idempotency_key was already used for a different request"):
        await service.write(alice, idempotency_key="req-1", **request)
    await service.forget(alice, [first.memory.id])  # also once the first memory is forgotten
    with pytest.raises(Conflict, match="different request"):
        await service.write(alice, idempotency_key="req-1", **request)
    assert await table_counts(database) == (1, 2)
    same = await service.write(alice, "Retry me", tags=["a"], idempotency_key="req-1")
    assert same.status == "duplicate" and same.memory.id == first.memory.id and same.memory.deleted_at is not None


async def test_update_records_old_and_new(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Lives in Lisbon", kind="fact")).memory
    updated = await service.update(alice, m.id, content="Lives in Oslo", tags=["home"], reason="moved")
    assert updated.status == "updated"
    assert updated.memory.version == 2 and updated.memory.content == "Lives in Oslo"
    same = await service.update(alice, m.id, content="Lives in Oslo")
    assert same.status == "unchanged" and same.memory.version == 2
    history = (await service.history(alice, m.id)).entries
    assert [e.event for e in history] == ["ADD", "UPDATE"]
    assert history[1].old == {"content": "Lives in Lisbon", "tags": []}
    assert history[1].new == {"content": "Lives in Oslo", "tags": ["home"]}
    assert history[1].reason == "moved" and history[1].actor == "test:alice" and history[1].client == "pytest"
    # Full text follows the new content (the generated column is recomputed).
    assert (await service.search(alice, "Oslo", explain=True)).hits[0].explain["fulltext"] == 1
    assert (await service.search(alice, "Lisbon", explain=True)).hits[0].explain["fulltext"] is None


async def test_if_version_refuses_stale_writer(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Version me")).memory
    await service.update(alice, m.id, title="first", if_version=1)
    with pytest.raises(Conflict, match="at version 2, not 1"):
        await service.update(alice, m.id, title="second", if_version=1)
    assert (await service.get_one(alice, m.id)).title == "first"


async def test_update_to_existing_text_is_a_conflict(service: MemoryService, alice: Principal) -> None:
    a = (await service.write(alice, "Text A")).memory
    await service.write(alice, "Text B")
    with pytest.raises(Conflict, match="already has this content"):
        await service.update(alice, a.id, content="text b")
    assert (await service.get_one(alice, a.id)).content == "Text A"


async def test_an_update_keeps_a_turns_identity_with_its_session(service: MemoryService, alice: Principal) -> None:
    """A turn is known by its words, session and place (content_hash): a change to any of them, made
    alone, moves it, and the same words said in another session stay another turn."""
    said = {"session_id": "s-one", "repeat": 0}
    turn = (await service.write(alice, "User: ship it", kind="episode", metadata=said)).memory
    other = (await service.write(alice, "User: ship it", kind="episode",
                                 metadata={"session_id": "s-two", "repeat": 0})).memory
    assert other.id != turn.id
    # Moved to the other session by its metadata alone: now the same turn as `other`, so refused.
    with pytest.raises(Conflict, match="already has this content"):
        await service.update(alice, turn.id, metadata={"session_id": "s-two", "repeat": 0})
    # As a note it is its words alone: a third memory of them is then the same memory.
    await service.update(alice, turn.id, kind="note")
    again = await service.write(alice, "User: ship it", kind="note")
    assert again.status == "duplicate" and again.memory.id == turn.id

async def test_forget_restore_round_trip(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Temporary secret plan")).memory
    before = datetime.now(UTC)
    result = await service.forget(alice, [m.id], reason="obsolete")
    assert [f.id for f in result.forgotten] == [m.id]
    assert result.restorable_until - before >= timedelta(days=29, hours=23)

    assert (await service.search(alice, "secret plan")).hits == []
    assert (await service.list(alice)).memories == []
    with pytest.raises(NotFound):
        await service.get(alice, [m.id])
    with pytest.raises(NotFound):
        await service.get_one(alice, m.id)
    with pytest.raises(NotFound):
        await service.update(alice, m.id, title="x")
    with pytest.raises(NotFound, match="already forgotten"):
        await service.forget(alice, [m.id])

    restored = await service.restore(alice, [m.id], reason="still needed")
    assert [r.id for r in restored.restored] == [m.id] and restored.restored[0].deleted_at is None
    assert [h.id for h in (await service.search(alice, "secret plan")).hits] == [m.id]
    with pytest.raises(NotFound):
        await service.restore(alice, [m.id])

    history = (await service.history(alice, m.id)).entries
    assert [(e.event, e.reason) for e in history] == [("ADD", None), ("DELETE", "obsolete"),
                                                       ("RESTORE", "still needed")]
    assert all(e.actor == "test:alice" for e in history)


async def test_forget_is_all_or_nothing(service: MemoryService, alice: Principal, database: Database) -> None:
    m = (await service.write(alice, "Keep me")).memory
    before = await table_counts(database)
    with pytest.raises(NotFound, match="nothing was forgotten"):
        await service.forget(alice, [m.id, uuid4()])
    assert await table_counts(database) == before
    assert (await service.get_one(alice, m.id)).deleted_at is None


async def test_restore_refuses_when_duplicate_was_rewritten(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Twice")).memory
    await service.forget(alice, [m.id])
    await service.write(alice, "Twice")
    with pytest.raises(Conflict, match="identical memory"):
        await service.restore(alice, [m.id])


async def test_pinned_needs_force_and_admin(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "I am Ada, a careful agent", kind="identity", pinned=True, priority=10)).memory
    with pytest.raises(PermissionDenied, match="pinned"):
        await service.forget(alice, [m.id])
    with pytest.raises(PermissionDenied, match="pinned"):
        await service.update(alice, m.id, content="I am someone else")
    with pytest.raises(PermissionDenied, match="pinned"):
        await service.update(alice, m.id, pinned=False)
    # Metadata-level edits are allowed without force.
    assert (await service.update(alice, m.id, tags=["core"])).status == "updated"
    writer = principal(permissions=frozenset({"read", "write", "forget"}))
    with pytest.raises(PermissionDenied, match="admin"):
        await service.forget(writer, [m.id], force=True)
    unpinned = await service.update(alice, m.id, pinned=False, force=True, reason="retire")
    assert not unpinned.memory.pinned
    assert (await service.history(alice, m.id)).entries[-1].event == "UNPIN"


async def test_permissions_are_enforced(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Shared fact")).memory
    reader = principal(permissions=frozenset({"read"}))
    assert (await service.get(reader, [m.id])).memories
    with pytest.raises(PermissionDenied, match="'write'"):
        await service.write(reader, "nope")
    with pytest.raises(PermissionDenied, match="'forget'"):
        await service.forget(reader, [m.id])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"content": "   "}, "content is empty"),
    ({"content": "x" * 32_001}, "more than the limit"),
    ({"content": "ok", "title": "t" * 201}, "title has 201"),
    ({"content": "ok", "tags": [" "]}, "empty strings"),
    ({"content": "ok", "tags": [f"t{i}" for i in range(33)]}, "at most 32"),
    ({"content": "ok", "metadata": {"blob": "x" * 20_000}}, "metadata is"),
])
async def test_bad_write_changes_nothing(service: MemoryService, alice: Principal, database: Database,
                                         kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await service.write(alice, **kwargs)
    assert await table_counts(database) == (0, 0)


async def test_write_scope_needs_the_namespace(service: MemoryService) -> None:
    loner = principal(agent=None, project=None)
    with pytest.raises(InvalidInput, match="needs a project"):
        await service.write(loner, "x", scope="project")
    with pytest.raises(InvalidInput, match="needs an agent"):
        await service.write(loner, "x", scope="agent")
    assert (await service.write(loner, "x")).memory.scope.level == "user"


async def test_list_paginates_in_every_order(service: MemoryService, alice: Principal) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(7):
        await service.write(alice, f"memory {i}", importance=[0.7, 0.1, 0.7, 0.3, 0.7, 0.9, 0.123457][i],
                            occurred_at=base + timedelta(days=i % 3))
    for order in ("recent", "oldest", "importance"):
        seen, cursor = [], None
        while True:
            page = await service.list(alice, order=order, limit=3, cursor=cursor)
            seen += page.memories
            cursor = page.next_cursor
            if cursor is None:
                break
        assert len(seen) == 7 and len({m.id for m in seen}) == 7, order
        full = (await service.list(alice, order=order, limit=100)).memories
        assert [m.id for m in seen] == [m.id for m in full], order
    importance = [m.importance for m in full]
    assert importance == sorted(importance, reverse=True)


async def test_cursor_is_checked(service: MemoryService, alice: Principal) -> None:
    for i in range(3):
        await service.write(alice, f"m{i}")
    cursor = (await service.list(alice, limit=1)).next_cursor
    with pytest.raises(InvalidInput, match="other filters or order"):
        await service.list(alice, order="oldest", limit=1, cursor=cursor)
    with pytest.raises(InvalidInput, match="not one this server issued"):
        await service.list(alice, cursor="garbage!")


async def test_filters(service: MemoryService, alice: Principal) -> None:
    old = datetime(2020, 5, 1, tzinfo=UTC)
    await service.write(alice, "Old decision about databases", kind="decision", tags=["db"], occurred_at=old)
    await service.write(alice, "New preference about databases", kind="preference", tags=["db", "ui"])
    await service.write(alice, "User-level note about databases", scope="user")
    hits = (await service.search(alice, "databases")).hits
    assert len(hits) == 3
    from mcp_memory.models import MemoryFilter
    assert [h.kind for h in (await service.search(alice, "databases", MemoryFilter(kinds=["decision"]))).hits] \
        == ["decision"]
    assert len((await service.search(alice, "databases", MemoryFilter(tags=["DB", "ui"]))).hits) == 1
    assert len((await service.search(alice, "databases", MemoryFilter(until=datetime(2021, 1, 1)))).hits) == 1
    assert len((await service.search(alice, "databases", MemoryFilter(since=datetime(2021, 1, 1)))).hits) == 2
    assert [h.scope.level for h in (await service.search(alice, "databases", MemoryFilter(scope="user"))).hits] \
        == ["user"]
    with pytest.raises(InvalidInput, match="since must be earlier"):
        await service.search(alice, "x", MemoryFilter(since=old, until=old))


async def test_history_is_append_only(service: MemoryService, alice: Principal, database: Database) -> None:
    await service.write(alice, "audited")
    async with database.admin.acquire() as conn:
        with pytest.raises(Exception, match="append-only"):
            await conn.execute("UPDATE memory_history SET actor = 'mallory'")


async def test_if_version_under_concurrency_one_writer_wins(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "Contended memory")).memory
    results = await asyncio.gather(*[service.update(alice, m.id, title=f"writer {i}", if_version=1)
                                     for i in range(6)], return_exceptions=True)
    wins = [r for r in results if not isinstance(r, BaseException)]
    assert len(wins) == 1
    assert all(isinstance(r, Conflict) and "at version 2" in str(r) for r in results if r not in wins)
    final = await service.get_one(alice, m.id)
    assert final.version == 2 and final.title == wins[0].memory.title


async def test_supersedes_ranks_successor_first(service: MemoryService, alice: Principal) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    old = (await service.write(alice, "Maya lives in Lisbon, Portugal; Maya's home city is Lisbon",
                               occurred_at=base)).memory
    new = (await service.write(alice, "Maya moved to Oslo", supersedes=[old.id],
                               occurred_at=base + timedelta(days=90))).memory
    hits = (await service.search(alice, "Maya lives in Lisbon home city")).hits
    assert [h.id for h in hits] == [new.id, old.id]
    assert hits[1].superseded_by == new.id
    replaced = await service.get_one(alice, old.id)
    assert replaced.superseded_by == new.id and replaced.version == 2
    last = (await service.history(alice, old.id)).entries[-1]
    assert (last.event, last.old, last.new) == ("UPDATE", {"superseded_by": None}, {"superseded_by": str(new.id)})
    assert last.reason == f"superseded by {new.id}"
    # A forgotten successor replaces nothing: no read names it (an id memory_get cannot find), and
    # restored it is named again; the stored link and its history stay as they were.
    await service.forget(alice, [new.id])
    assert (await service.search(alice, "Maya lives in Lisbon home city")).hits[0].superseded_by is None
    assert (await service.get(alice, [old.id])).memories[0].superseded_by is None
    assert (await service.get_one(alice, old.id)).superseded_by is None
    assert [m.superseded_by for m in (await service.list(alice)).memories] == [None]
    near = await service.write(alice, "Maya's home city is Lisbon, in Portugal")
    assert [(r.id, r.superseded_by) for r in near.related if r.id == old.id] == [(old.id, None)]
    await service.forget(alice, [near.memory.id])
    await service.restore(alice, [new.id])
    assert (await service.get(alice, [old.id])).memories[0].superseded_by == new.id
    assert (await service.search(alice, "Maya lives in Lisbon home city")).hits[1].superseded_by == new.id


async def test_supersedes_unknown_id_writes_nothing(service: MemoryService, alice: Principal,
                                                    database: Database) -> None:
    with pytest.raises(NotFound, match="nothing was written"):
        await service.write(alice, "successor", supersedes=[uuid4()])
    assert await table_counts(database) == (0, 0)


async def test_rate_limits_bind_remote_principals(service: MemoryService, alice: Principal,
                                                  database: Database) -> None:
    from mcp_memory.errors import RateLimited

    service.settings = service.settings.model_copy(update={"write_rate_per_minute": 3, "forget_rate_per_minute": 1})
    remote = alice.model_copy(update={"rate_limited": True})
    # Windows are whole minutes of the database's clock: start well inside one.
    async with database.admin.acquire() as conn:
        second = await conn.fetchval("SELECT extract(second FROM now())")
    if second > 45:
        await asyncio.sleep(61 - float(second))
    written = [(await service.write(remote, f"remote {i}")).memory.id for i in range(3)]
    with pytest.raises(RateLimited, match=r"at most 3 writes per minute for this credential; retry in \d+ s"):
        await service.write(remote, "one too many")
    await service.forget(remote, [written[0]])
    with pytest.raises(RateLimited, match="forgets"):
        await service.forget(remote, [written[1]])
    assert {m.id for m in (await service.list(alice)).memories} == set(written[1:])
    for i in range(5):  # the local owner is not limited
        await service.write(alice, f"local {i}")
    other = principal("bob").model_copy(update={"rate_limited": True})  # limits are per principal
    await service.write(other, "bob is not alice")


async def test_confined_credentials_change_only_their_own(service: MemoryService, alice: Principal) -> None:
    shared = (await service.write(alice, "Team-wide convention", scope="user")).memory
    bot = principal(agent="bot", project="sandbox").model_copy(update={"agent_confined": True,
                                                                         "project_confined": True})
    mine = (await service.write(bot, "bot's own note")).memory
    assert mine.scope.level == "agent_project"
    assert shared.id in {m.id for m in (await service.list(bot)).memories}  # it may read what is shared
    with pytest.raises(PermissionDenied, match="cannot write at scope 'user'"):
        await service.write(bot, "poisoning the shared well", scope="user")
    with pytest.raises(PermissionDenied, match="shared beyond this credential"):
        await service.update(bot, shared.id, content="rewritten by a bot")
    with pytest.raises(PermissionDenied, match="shared beyond this credential"):
        await service.forget(bot, [shared.id])
    with pytest.raises(PermissionDenied, match="shared beyond this credential"):
        await service.write(bot, "bot's successor", supersedes=[shared.id])
    assert (await service.get_one(alice, shared.id)).version == 1


async def test_restoring_someone_elses_forget_needs_admin(service: MemoryService, alice: Principal) -> None:
    m = (await service.write(alice, "forgotten by the owner")).memory
    await service.forget(alice, [m.id])
    other_key = principal(permissions=frozenset({"read", "write", "forget"})).model_copy(update={"actor": "key:b#2"})
    with pytest.raises(PermissionDenied, match="forgotten by another principal"):
        await service.restore(other_key, [m.id])
    own = (await service.write(other_key, "forgotten by the key itself")).memory
    await service.forget(other_key, [own.id])
    assert (await service.restore(other_key, [own.id])).restored
    assert (await service.restore(alice, [m.id])).restored  # the admin may


async def test_application_role_cannot_destroy(database: Database, service: MemoryService,
                                               alice: Principal) -> None:
    import asyncpg

    await service.write(alice, "indelible")
    for sql in ("DELETE FROM memories", "DELETE FROM memory_history", "UPDATE memory_history SET reason = 'x'",
                "UPDATE api_keys SET permissions = '{admin}'"):
        async with database.pool.acquire() as conn:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(sql)


async def test_write_many_is_checked_first_then_stored_in_one_go(service: MemoryService, alice: Principal,
                                                                 database: Database) -> None:
    from mcp_memory.models import WriteItem

    await service.write(alice, "Already known")
    bad = [WriteItem(content="fine"), WriteItem(content="also fine", tags=["x" * 100])]
    with pytest.raises(InvalidInput, match=r"items\[1\]: tag .* nothing was written"):
        await service.write_many(alice, bad)
    assert await table_counts(database) == (1, 1)

    items = [WriteItem(content=f"batch memory {i}", kind="episode", tags=["batch"]) for i in range(5)]
    items += [WriteItem(content="Already known"), WriteItem(content="batch memory 0"),
              WriteItem(content="user-wide one", scope="user")]
    result = await service.write_many(alice, items)
    assert (result.created, result.duplicates) == (6, 2)
    assert [m.status for m in result.memories] == ["created"] * 5 + ["duplicate", "duplicate", "created"]
    assert result.memories[6].id == result.memories[0].id  # a repeat inside the batch is the same memory
    assert await table_counts(database) == (7, 7)  # one history row per memory created
    stored = await service.get(alice, [m.id for m in result.memories[:5]])
    assert all(m.scope.project_id == "proj-x" and m.tags == ["batch"] for m in stored.memories)
    hits = (await service.search(alice, "batch memory 3", explain=True)).hits
    assert hits[0].id == result.memories[3].id and hits[0].explain["vector"] is not None  # embedded
