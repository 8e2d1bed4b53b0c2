"""The graph's backlog: memories it has not read (stored before the graph existed, or imported from an
export) get their names, and from an export the writer's `about` and `key`, as a write gives them;
through `mcp-memory backfill`, an import, and the server's own pass when it starts."""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path
from uuid import uuid4

import pytest

from mcp_memory.backlog import Backlog
from mcp_memory.db import Database, open_database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import export_user, import_paths
from mcp_memory.models import Principal
from mcp_memory.repository.graph_checks import inconsistencies
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .exports import as_version_1
from .test_graph import day


async def graph_of(db: Database, user: str) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Each memory's text -> (what it is about, its key's attribute), read as the owner."""
    async with db.admin.acquire() as conn:
        rows = await conn.fetch(
            """SELECT m.content, coalesce(array_agg(DISTINCT e.canonical) FILTER (WHERE me.role = 'about'), '{}')
                      AS about, max(f.attribute) AS key
               FROM memories m LEFT JOIN memory_entities me ON me.user_id = m.user_id AND me.memory_id = m.id
               LEFT JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
               LEFT JOIN memory_facts f ON f.user_id = m.user_id AND f.memory_id = m.id
               WHERE m.user_id = $1 GROUP BY m.content""", user)
    return {r["content"]: (tuple(sorted(r["about"])), r["key"]) for r in rows}


async def test_memories_stored_before_the_graph_are_read_once_and_searches_find_their_facts(
        service: MemoryService, database: Database, alice: Principal) -> None:
    await service.write(alice, "Greta Ibarra lives in Oslo.", occurred_at=day("2024-01-01"))
    await service.write(alice, "I moved to Lisbon last spring.")
    before = await graph_of(database, alice.user_id)
    # As a store upgraded from before the graph: no mentions, and the migration's backlog.
    async with database.admin.acquire() as conn:
        await conn.execute("DELETE FROM memory_entities")
        await conn.execute("DELETE FROM entities")
        for migration in ("018_graph_backlog.sql", "022_graph_backlog_order.sql"):
            await conn.execute(resources.files("mcp_memory.sql").joinpath(migration).read_text())
        assert await conn.fetchval("SELECT count(*) FROM graph_backlog WHERE created_at IS NOT NULL") == 2
    backlog = Backlog(database.admin, service.structure)
    assert await backlog.read_all() == 2
    assert await graph_of(database, alice.user_id) == before
    assert before["Greta Ibarra lives in Oslo."] == (("greta ibarra",), None)
    assert before["I moved to Lisbon last spring."] == (("(user)",), None)
    assert await backlog.read_all() == 0  # read once
    async with database.admin.acquire() as conn:
        assert set((await inconsistencies(conn)).values()) == {0}
    # The writer's key on a new memory meets the first name of the memory read late.
    new = await service.write(alice, "Greta moved to Bergen.", about=["Greta"], key="home city")
    profile = await service.entities.profile(alice, "Greta Ibarra")
    assert [v.memory for a in profile.attributes for v in a.current] == [new.memory.id]


async def test_a_version_1_export_carries_about_and_key_and_an_import_reads_them_again(
        service: MemoryService, database: Database, alice: Principal, make_db, settings, tmp_path: Path) -> None:
    old = await service.write(alice, "Greta lives in Oslo.", about=["Greta Ibarra"], key="where she lives",
                              occurred_at=day("2024-01-01"))
    new = await service.write(alice, "Moved to Lisbon in March.", about=["Greta Ibarra"], key="home city",
                              occurred_at=day("2025-03-01"))
    assert new.memory.replaced == [old.memory.id]
    await service.write(alice, "Tomasz Wolak plays chess on Sundays.")
    out = io.StringIO()
    assert await export_user(MaintenanceRepository(database.admin), alice.user_id, out) == 3
    dump = tmp_path / "export.jsonl"
    dump.write_text(as_version_1(out.getvalue(), [
        {"about": ["Greta Ibarra"], "key": "where she lives"}, {"about": ["Greta Ibarra"], "key": "home city"}, None]))

    empty = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        target = await MemoryService.open(empty, settings)
        imported = await import_paths(target, MaintenanceRepository(empty.admin), alice, [dump], progress=False)
        assert imported.created == 3
        assert {a for a, _ in (await graph_of(empty, alice.user_id)).values()} == {()}  # not read yet: on the backlog
        assert await Backlog(empty.admin, target.structure).read_all() == 3
        assert await graph_of(empty, alice.user_id) == await graph_of(database, alice.user_id)
        hits = (await target.search(alice, "Where does Greta Ibarra live now?", explain=True)).hits
        assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id] and "fact" in (hits[0].explain or {})
        # Nothing replaced again on the way: superseded_by came with the export.
        got = {m.id: m.superseded_by for m in (await target.get(alice, [old.memory.id, new.memory.id])).memories}
        assert got == {old.memory.id: new.memory.id, new.memory.id: None}
        async with empty.admin.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM memory_history WHERE reason LIKE '%same key%'") == 1
    finally:
        await empty.close()


async def test_an_export_with_a_bad_structure_is_refused_and_one_no_write_would_take_is_read_by_rules(
        service: MemoryService, database: Database, alice: Principal, tmp_path: Path) -> None:
    await service.write(alice, "Placeholder so the export has a shape.")
    out = io.StringIO()
    await export_user(MaintenanceRepository(database.admin), alice.user_id, out)
    header, line = as_version_1(out.getvalue(), [None]).splitlines()

    def edited(content: str, structure: object) -> Path:
        record = json.loads(line)
        record["memory"].update(id=str(uuid4()), content=content)
        record["structure"] = structure
        dump = tmp_path / f"{uuid4()}.jsonl"
        dump.write_text(header + "\n" + json.dumps(record) + "\n")
        return dump

    maintenance = MaintenanceRepository(database.admin)
    with pytest.raises(InvalidInput, match="line 2: structure must be"):
        await import_paths(service, maintenance, alice, [edited("Greta sails.", {"about": ["x" * 500]})],
                           progress=False)
    # A key whose memory names no one is no key a write would take: the text is read by rules alone.
    await import_paths(service, maintenance, alice, [edited("Sails on weekends.", {"about": [], "key": "hobby"})],
                       progress=False)
    assert await Backlog(database.admin, service.structure).read_all() == 1
    assert (await graph_of(database, alice.user_id))["Sails on weekends."] == ((), None)


async def test_the_server_reads_the_backlog_once_it_is_up(service: MemoryService, database: Database,
                                                          alice: Principal, settings) -> None:
    from mcp import Client

    from mcp_memory.server import build_server

    from .test_statistics import eventually

    await service.write(alice, "Greta Ibarra lives in Oslo.")
    async with database.admin.acquire() as conn:
        await conn.execute("DELETE FROM memory_entities")
        await conn.execute("INSERT INTO graph_backlog (user_id, memory_id) SELECT user_id, id FROM memories")
    async with Client(build_server(settings)) as client:
        await client.list_tools()

        async def read() -> bool:
            async with database.admin.acquire() as conn:
                return await conn.fetchval("SELECT count(*) FROM graph_backlog") == 0

        await eventually(read)
        profile = json.loads((await client.read_resource("memory://entities/Greta Ibarra")).contents[0].text)
        assert profile["entity"]["name"] == "Greta Ibarra"


async def test_the_backlog_is_read_in_the_order_its_memories_were_written(
        service: MemoryService, database: Database, alice: Principal, make_db, settings, tmp_path: Path) -> None:
    """Oldest first, batch after batch, whatever the ids: a lone first name read after the full name
    written before it is that person at once (read before it, it would be an entity of its own,
    merged when the full name came)."""
    await service.write(alice, "Greta Ibarra leads the Falcon team.")
    await service.write(alice, "Greta fixed the build.")
    out = io.StringIO()
    await export_user(MaintenanceRepository(database.admin), alice.user_id, out)
    header, *lines = as_version_1(out.getvalue(), [None, None]).splitlines()  # read on import
    records = [json.loads(line) for line in lines]
    for record, mid in zip(records, ("ffffffff-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001"),
                           strict=True):  # the older memory's id sorts last
        record["memory"]["id"] = mid
        record["history"] = [{**h, "memory_id": mid} for h in record["history"]]
    dump = tmp_path / "export.jsonl"
    dump.write_text("\n".join([header, *map(json.dumps, records)]) + "\n")

    empty = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        target = await MemoryService.open(empty, settings)
        imported = await import_paths(target, MaintenanceRepository(empty.admin), alice, [dump], progress=False)
        assert imported.created == 2
        backlog = Backlog(empty.admin, target.structure)
        assert await backlog.repo.read(1, backlog.said) == 1 and await backlog.repo.read(1, backlog.said) == 1
        assert (await graph_of(empty, alice.user_id))["Greta fixed the build."] == (("greta ibarra",), None)
        async with empty.admin.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM entity_edits") == 0  # no lone Greta to merge
            assert await conn.fetchval("SELECT count(*) FROM entities WHERE canonical = 'greta'") == 0
    finally:
        await empty.close()


async def test_names_are_read_while_an_import_goes_in_and_its_failure_is_its_own(
        service: MemoryService, database: Database, alice: Principal, tmp_path: Path) -> None:
    """`mcp-memory import` reads the backlog alongside the import: the import's result comes back
    with nothing left unread; an import that fails raises its own error (not a task group's); a
    backlog that cannot be read leaves the import done and says how the names get read later."""
    maintenance = MaintenanceRepository(database.admin)
    for i in range(3):
        await service.write(alice, f"Greta Ibarra reviewed release {i}.")
    out = io.StringIO()
    await export_user(maintenance, alice.user_id, out)
    dump = tmp_path / "export.jsonl"
    dump.write_text(out.getvalue())
    bob = Principal(**{**alice.model_dump(), "user_id": "bob"})
    backlog = Backlog(database.admin, service.structure)

    async def into(p: Principal, path: Path):
        return await import_paths(service, maintenance, p, [path], progress=False)

    async def moved() -> object:  # as bob: a verbatim copy under another user (new ids), read on import
        records = [json.loads(line) for line in as_version_1(out.getvalue(), [None] * 3).splitlines()]
        for r in records[1:]:
            r["memory"]["id"] = str(uuid4())
        copy = tmp_path / "bob.jsonl"
        copy.write_text("".join(json.dumps(r) + "\n" for r in records))
        return await into(bob, copy)

    report, unread = await backlog.alongside(moved)
    assert report.created == 3 and unread is None
    assert set((await graph_of(database, "bob")).values()) == {(("greta ibarra",), None)}
    assert await backlog.repo.pending() == 0

    with pytest.raises(InvalidInput, match="no such file"):
        await backlog.alongside(lambda: into(bob, tmp_path / "missing.jsonl"))

    async def hides_the_backlog() -> str:
        await database.admin.execute("ALTER TABLE graph_backlog RENAME TO graph_backlog_away")
        return "imported"

    try:
        assert await backlog.alongside(hides_the_backlog) == (
            "imported", "the names of some memories are not read yet (relation \"graph_backlog\" does not exist): "
            "`mcp-memory backfill` reads them, as the server does when it starts")
    finally:
        await database.admin.execute("ALTER TABLE IF EXISTS graph_backlog_away RENAME TO graph_backlog")
