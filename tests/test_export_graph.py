"""An export carries the graph whole and an import puts it back as it was: the entities (merged ones
too), every memory's mentions, keyed facts and edges, and the merges, splits and key fixes a person
made, undoable in the new store; nothing is read again by rules. Into a store that already knows
some of the names, the file's entities become those; a hand-edited file is refused naming the line,
and nothing is written; an edge to a memory the file does not hold comes in with that memory."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.backlog import Backlog
from mcp_memory.db import Database, open_database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import export_user, import_paths
from mcp_memory.importing.export_graph import Reader
from mcp_memory.models import Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import until_waiting
from .test_entity_edits import consistent, current, day, entity_id, greta_and_gigi, snapshot


async def graph_rows(db: Database) -> dict[str, list[dict[str, Any]]]:
    """snapshot()'s rows, with the edges and the edits a person made (but no row's place in a
    sequence, which a new store numbers afresh)."""
    rows = await snapshot(db)
    async with db.admin.acquire() as conn:
        rows["edges"] = [dict(r) for r in await conn.fetch("SELECT * FROM memory_edges ORDER BY from_id, kind, to_id")]
        rows["edits"] = [dict(r) for r in await conn.fetch(
            "SELECT id, agent_id, project_id, kind, entity_id, other_id, memory_id, entity_ids, rows, reason, actor, "
            "client, created_at, undone_at, undone_by FROM entity_edits ORDER BY seq")]
        rows["backlog"] = [dict(r) for r in await conn.fetch("SELECT memory_id FROM graph_backlog")]
    return rows


async def exported(db: Database, user: str, tmp_path: Path, name: str = "export.jsonl") -> Path:
    out = io.StringIO()
    await export_user(MaintenanceRepository(db.admin), user, out)
    path = tmp_path / name
    path.write_text(out.getvalue())
    return path


@pytest.fixture
async def fresh(make_db, settings):
    db = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        yield db, MemoryService(MemoryRepository(db.pool), settings)
    finally:
        await db.close()


async def test_a_store_moved_keeps_its_graph_and_a_persons_corrections_and_reads_nothing_again(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    ids = await greta_and_gigi(service, alice)
    greta, gigi = await entity_id(service, alice, "Greta Ibarra"), await entity_id(service, alice, "Gigi")
    merged = await service.entities.merge(alice, greta, gigi, reason="Gigi is Greta")
    works = await service.write(alice, "Greta is now lead designer.", about=["Greta Ibarra"], key="employer",
                                occurred_at=day("2025-07-01"))
    fixed = await service.entities.fix_key(alice, works.memory.id, "job title", reason="a title")
    await service.write(alice, "Tomasz Wolak plays chess on Sundays.")  # rules alone
    moved = await service.write(alice, "Moved to Porto last spring.", about=["me"], key="home city",
                                occurred_at=day("2025-05-01"))
    await service.update(alice, moved.memory.id, about=["Tomasz Wolak"], reason="his move, not mine")
    [refiled] = [e for e in (await service.entities.page(alice, await entity_id(service, alice, "Tomasz Wolak"))
                             ).edits if e.kind == "about"]
    gone = (await service.write(alice, "Tomasz Wolak once lived in Gdansk.")).memory.id
    await service.forget(alice, [gone], reason="wrong")
    async with database.admin.acquire() as conn:
        await conn.execute("INSERT INTO memory_edges (user_id, from_id, to_id, kind, agent_id, project_id, source) "
                           "VALUES ($1, $2, $3, 'extends', 'agent-a', 'proj-x', 'model')",
                           alice.user_id, ids["tea"], ids["lisbon"])
    before = await graph_rows(database)
    assert before["edits"] and before["edges"] and not before["backlog"]
    dump = await exported(database, alice.user_id, tmp_path)
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert lines[0]["version"] == 2 and {line["type"] for line in lines} == {"header", "entity", "memory", "edit"}

    db, target = fresh
    maintenance = MaintenanceRepository(db.admin)
    dry = await import_paths(target, maintenance, alice, [dump], progress=False, dry_run=True)
    assert dry.created == 9 and not any((await graph_rows(db)).values())  # a dry run writes no entity either
    report = await import_paths(target, maintenance, alice, [dump], progress=False)
    assert (report.created, report.graph) == (9, [])
    after = await graph_rows(db)
    assert after == before  # every row as it was, and nothing left for the rules to read
    await consistent(db)
    assert await current(target, alice, "Greta Ibarra", "home city") == [ids["lisbon"]]
    assert await current(target, alice, "Greta Ibarra", "job title") == [works.memory.id]
    hits = (await target.search(alice, "Where does Gigi live now?", explain=True)).hits
    assert hits[0].id == ids["lisbon"]
    assert (await import_paths(target, maintenance, alice, [dump], progress=False)).created == 0
    assert await graph_rows(db) == before

    assert await current(target, alice, "Tomasz Wolak", "home city") == [moved.memory.id]

    # The person's corrections can be undone there, as here.
    await target.entities.undo(alice, refiled.id)
    assert await current(target, alice, "the user", "home city") == [moved.memory.id]
    await target.entities.undo(alice, fixed.id)
    assert await current(target, alice, "Greta Ibarra", "employer") == [works.memory.id]
    await target.entities.split(alice, gigi, reason="not the same person")
    assert await current(target, alice, "Gigi", "home city") == [ids["lisbon"]]
    assert await current(target, alice, "Greta Ibarra", "home city") == [ids["oslo"]]
    edits = (await target.entities.page(alice, greta)).edits
    assert [(e.kind, e.undone_at is not None) for e in edits][-1] == ("merge", True)
    assert merged.id in {e.id for e in edits}
    await consistent(db)


async def test_into_a_store_that_knows_a_name_the_files_entity_is_that_one(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    ids = await greta_and_gigi(service, alice)
    greta, gigi = await entity_id(service, alice, "Greta Ibarra"), await entity_id(service, alice, "Gigi")
    await service.entities.merge(alice, greta, gigi, reason="Gigi is Greta")
    dump = await exported(database, alice.user_id, tmp_path)

    db, target = fresh
    there = await target.write(alice, "Greta Ibarra took up sailing.", occurred_at=day("2025-08-01"))
    own = await entity_id(target, alice, "Greta Ibarra")
    assert own != greta
    report = await import_paths(target, MaintenanceRepository(db.admin), alice, [dump], progress=False)
    assert report.created == 5
    assert report.graph == ["export.jsonl: 1 of the graph's edits were left out: they touch entities this store "
                            "held already under other ids, where undoing them could not be right"]
    await consistent(db)
    profile = await target.entities.profile(alice, "Gigi")  # the merge came with the file: Gigi is Greta
    assert profile.entity.id == own and "gigi" in (await target.entities.page(alice, own)).entity.aliases
    assert await current(target, alice, "Greta Ibarra", "home city") == [ids["lisbon"]]
    timeline = {t.memory for t in (await target.entities.page(alice, own)).timeline}
    assert timeline == {*ids.values(), there.memory.id}


async def _edge_exported(service: MemoryService, database: Database, alice: Principal,
                         tmp_path: Path) -> tuple[Any, Any, Path]:
    """Two memories, an edge from the older to the newer, and the store's export."""
    old = (await service.write(alice, "Greta Ibarra lives in Oslo.", occurred_at=day("2024-01-01"))).memory.id
    new = (await service.write(alice, "Greta Ibarra moved to Lisbon.", occurred_at=day("2025-01-01"))).memory.id
    async with database.admin.acquire() as conn:
        await conn.execute("INSERT INTO memory_edges (user_id, from_id, to_id, kind, agent_id, project_id, source) "
                           "VALUES ($1, $2, $3, 'contradicts', 'agent-a', 'proj-x', 'model')", alice.user_id, old, new)
    whole = await exported(database, alice.user_id, tmp_path)
    return old, new, whole


async def test_an_edge_to_a_memory_the_file_lacks_comes_in_with_that_memory(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    old, new, whole = await _edge_exported(service, database, alice, tmp_path)
    part = tmp_path / "part.jsonl"
    part.write_text("".join(line for line in whole.read_text().splitlines(keepends=True)
                            if json.loads(line).get("memory", {}).get("id") != str(new)))

    db, target = fresh
    maintenance = MaintenanceRepository(db.admin)
    assert (await import_paths(target, maintenance, alice, [part], progress=False)).created == 1
    assert await db.admin.fetchval("SELECT count(*) FROM memory_edges") == 0
    assert (await import_paths(target, maintenance, alice, [whole], progress=False)).created == 1
    assert [tuple(r) for r in await db.admin.fetch("SELECT from_id, to_id, kind FROM memory_edges")] == [
        (old, new, "contradicts")]
    await consistent(db)


async def test_an_edge_between_two_batches_written_at_once_comes_in(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two batches written at once (`import_writers`) each hold one end of an edge, uncommitted, while
    their graph goes in, so neither could see both ends: the import puts the edge in after its batches."""
    import asyncio

    import asyncpg

    from mcp_memory import importers

    old, new, whole = await _edge_exported(service, database, alice, tmp_path)
    db, target = fresh
    assert target.settings.import_writers == 2
    monkeypatch.setattr(importers, "BATCH", 1)
    blocker = await asyncpg.connect(db.dsn)  # not the import's pool, whose two connections both write
    try:
        held = blocker.transaction()
        await held.start()
        # Each batch waits at its history's insert, its memory in and uncommitted, until both are there.
        await blocker.execute("LOCK TABLE memory_history IN EXCLUSIVE MODE")
        task = asyncio.create_task(import_paths(target, MaintenanceRepository(db.admin), alice, [whole],
                                                progress=False))
        # Asked on the blocker's connection: the pool's two are the writers'.
        await until_waiting(blocker, "the two batches were never written at once", query="INSERT INTO memory_history%",
                            count=2, seconds=20)
        await held.commit()
        report = await asyncio.wait_for(task, 60)
    finally:
        await blocker.close()
    assert report.created == 2
    assert [tuple(r) for r in await db.admin.fetch("SELECT from_id, to_id, kind FROM memory_edges")] == [
        (old, new, "contradicts")]
    await consistent(db)


async def test_a_batch_stopped_to_break_a_deadlock_is_written_again(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    """A batch that waits on another transaction's row while that one waits on the batch's (batches
    written at once, where a file holds one memory twice) is the one PostgreSQL stops: it goes again."""
    import asyncio

    import asyncpg

    first = (await service.write(alice, "Greta Ibarra lives in Oslo.")).memory.id
    second = (await service.write(alice, "Greta Ibarra moved to Lisbon.")).memory.id
    whole = await exported(database, alice.user_id, tmp_path)
    db, target = fresh
    other = await asyncpg.connect(db.dsn)
    try:
        held = other.transaction()
        await held.start()
        row = "INSERT INTO memories (user_id, id, kind, content, content_hash) VALUES ($1, $2, 'fact', $3, $3)"
        await other.execute(row, alice.user_id, second, "held second")
        task = asyncio.create_task(import_paths(target, MaintenanceRepository(db.admin), alice, [whole],
                                                progress=False))
        # The batch holds the first memory and waits on the second.
        await until_waiting(other, "the batch never waited", query="INSERT INTO memories%", seconds=20)
        await other.execute(row, alice.user_id, first, "held first")  # returns once the batch is stopped
        await held.rollback()
        report = await asyncio.wait_for(task, 60)
    finally:
        await other.close()
    assert report.created == 2
    assert sorted(r["content"] for r in await db.admin.fetch("SELECT content FROM memories")) == [
        "Greta Ibarra lives in Oslo.", "Greta Ibarra moved to Lisbon."]
    await consistent(db)


@pytest.mark.parametrize(("edit", "error"), [
    (lambda r: r["graph"]["mentions"][0].update(entity="00000000-0000-0000-0000-000000000001"),
     "graph names entity 00000000-0000-0000-0000-000000000001, which no line before it holds"),
    (lambda r: r["graph"]["mentions"][0].update(role="subject"), "graph: mentions.0.role: Input should be"),
    (lambda r: r["graph"]["facts"].append({**r["graph"]["facts"][0], "entity": r["graph"]["mentions"][0]["entity"],
                                           "attribute": ""}), "graph: facts.1.attribute"),
    (lambda r: r["graph"]["facts"][0].update(key_words="home\x00city"),
     "graph: facts.0.key_words: Value error, it contains a NUL character"),
])
async def test_a_hand_edited_graph_is_refused_naming_the_line_and_nothing_is_written(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path, edit, error) -> None:
    await service.write(alice, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city")
    dump = await exported(database, alice.user_id, tmp_path)
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    number = next(i for i, line in enumerate(lines, 1) if line["type"] == "memory")
    edit(lines[number - 1])
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))

    db, target = fresh
    with pytest.raises(InvalidInput, match=f"line {number}: {error}".replace(".", r"\.")):
        await import_paths(target, MaintenanceRepository(db.admin), alice, [dump], progress=False)
    assert await db.admin.fetchval("SELECT (SELECT count(*) FROM memories) + (SELECT count(*) FROM entities)") == 0


async def test_a_memory_the_store_had_not_read_is_read_where_it_goes(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    m = (await service.write(alice, "Greta lives in Oslo.", about=["Greta Ibarra"], key="home city")).memory.id
    async with database.admin.acquire() as conn:  # as a store upgraded from before the graph, read later
        await conn.execute("DELETE FROM memory_entities")
        await conn.execute("DELETE FROM memory_facts")
        await conn.execute("INSERT INTO graph_backlog (user_id, memory_id, created_at, given) "
                           "VALUES ($1, $2, now(), $3)", alice.user_id, m,
                           {"about": ["Greta Ibarra"], "key": "home city"})
    dump = await exported(database, alice.user_id, tmp_path)
    record = next(r for r in map(json.loads, dump.read_text().splitlines()) if r["type"] == "memory")
    assert record["graph"] is None and record["structure"] == {"about": ["Greta Ibarra"], "key": "home city"}

    db, target = fresh
    await import_paths(target, MaintenanceRepository(db.admin), alice, [dump], progress=False)
    assert await Backlog(db.admin, target.structure).read_all() == 1
    assert await current(target, alice, "Greta Ibarra", "home city") == [m]
    await consistent(db)


async def test_a_name_a_session_writes_while_the_import_runs_is_one_entity(
        service: MemoryService, database: Database, alice: Principal, fresh, tmp_path: Path) -> None:
    """The import's entities race a write naming the same person: whoever commits first creates it,
    and the other's rows point at it (the import waits on the write's uncommitted row, then takes it)."""
    import asyncio

    from mcp_memory.repository import graph_transfer

    await service.write(alice, "Greta Ibarra lives in Oslo.")
    reader = Reader()
    for number, line in enumerate((await exported(database, alice.user_id, tmp_path)).read_text().splitlines(), 1):
        if json.loads(line)["type"] == "entity":
            reader.entity(json.loads(line)["entity"], number)
    entities = reader.entities
    db, target = fresh
    writer = await db.admin.acquire()
    importer = await db.admin.acquire()
    try:
        tx = writer.transaction()
        await tx.start()
        greta = next(e for e in entities if e["canonical"] == "greta ibarra")
        other = await writer.fetchval(
            "INSERT INTO entities (user_id, agent_id, project_id, name, canonical) "
            "VALUES ('alice', $1, $2, 'Greta Ibarra', 'greta ibarra') RETURNING id",
            greta["agent_id"], greta["project_id"])

        async def take() -> graph_transfer.Taken:
            async with importer.transaction():
                return await graph_transfer.take_entities(importer, "alice", entities)

        task = asyncio.create_task(take())
        await until_waiting(writer, "the import never waited on the writer")
        await tx.commit()
        taken = await task
    finally:
        await db.admin.release(writer)
        await db.admin.release(importer)
    assert taken.ids[greta["id"]] == other != greta["id"]
    assert await db.admin.fetchval("SELECT count(*) FROM entities WHERE canonical = 'greta ibarra'") == 1
