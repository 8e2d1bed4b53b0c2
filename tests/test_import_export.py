"""Import (markdown, export JSONL, the MCP memory server's memory.json) and export round trips."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database, open_database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import export_user, import_paths
from mcp_memory.importing.files import detect_format, read_file
from mcp_memory.importing.markdown import parse_markdown
from mcp_memory.models import Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import memories_indexes

MEMORY_MD = """---
updated: 2026-01-01
---
# Project memory

The API is written in Go and deployed on Fly.io.

## Conventions
- Use conventional commits
- Tests live next to the code,
  in `_test.go` files
1. Never push to main

## Build
```
# not a heading
make build
```
"""

SOUL_MD = """# Soul
- I am Ada, a careful engineering agent.
- I ask before deleting anything.
"""

KNOWLEDGE_GRAPH = "\n".join(json.dumps(r) for r in [
    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated in 2019"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
])


def test_markdown_parsing() -> None:
    drafts = parse_markdown(MEMORY_MD, "MEMORY.md")
    assert [(d.title, d.content) for d in drafts] == [
        ("Project memory", "The API is written in Go and deployed on Fly.io."),
        ("Project memory › Conventions", "Use conventional commits"),
        ("Project memory › Conventions", "Tests live next to the code, in `_test.go` files"),
        ("Project memory › Conventions", "Never push to main"),
        ("Project memory › Build", "```\n# not a heading\nmake build\n```"),
    ]
    assert all(d.kind == "note" and not d.pinned and d.tags == ["memory"] for d in drafts)
    soul = parse_markdown(SOUL_MD, "SOUL.md")
    assert [(d.kind, d.pinned, d.priority) for d in soul] == [("identity", True, 1000), ("identity", True, 999)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memories"
    (root / "nested").mkdir(parents=True)
    (root / "MEMORY.md").write_text(MEMORY_MD)
    (root / "nested" / "SOUL.md").write_text(SOUL_MD)
    (root / "memory.json").write_text(KNOWLEDGE_GRAPH)
    (root / "ignored.txt").write_text("not imported")
    (root / ".vscode").mkdir()  # another tool's JSON in the folder: none of the formats, so left out
    (root / ".vscode" / "settings.json").write_text('{"editor.tabSize": 4}')
    return root


def test_json_of_no_format_it_reads_is_one_line_naming_them(tmp_path: Path) -> None:
    for name, text in (("settings.json", '{"editor.tabSize": 4}'), ("numbers.json", "[1, 2, 3]"),
                       ("log.jsonl", "started\n"), ("empty.txt", "")):
        (tmp_path / name).write_text(text)
        with pytest.raises(InvalidInput, match=rf"{name}: not one of the formats mcp-memory import reads: a markdown"
                                               r".* \(if it is one of them, say which with --from\)$"):
            detect_format(tmp_path / name)
    for name, text in (("memory.json", KNOWLEDGE_GRAPH), ("old.json", '{"entities": [], "relations": []}'),
                       ("empty.json", "")):
        (tmp_path / name).write_text(text)
        assert detect_format(tmp_path / name) == "knowledge-graph"
    # named as a knowledge graph (--from), a record that is not one is refused, naming it
    with pytest.raises(InvalidInput, match=r"numbers.json: record 1: neither an entity nor a relation; nothing was"):
        read_file(tmp_path / "numbers.json", "knowledge-graph")
    (tmp_path / "memory.json").write_text(KNOWLEDGE_GRAPH + '\n{"type": "relation", "from": "A", "to": "B"}')
    with pytest.raises(InvalidInput, match=r"memory.json: record 4: a relation without 'relationType'; nothing"):
        read_file(tmp_path / "memory.json", "knowledge-graph")


def test_a_file_past_a_chunk_is_checked_as_utf8_to_its_last_byte(tmp_path: Path) -> None:
    """The UTF-8 check reads a file a chunk (1 MiB) at a time, not whole: a character cut by a chunk's
    end is no error, and a bad byte further on is named by its offset in the file."""
    header = json.dumps({"type": "header", "format": "mcp-memory-export", "version": 2}) + "\n"
    cut = (1 << 20) - len(header) - 1  # "é" (2 bytes) straddles the first chunk's end
    good = header.encode() + b"x" * cut + "é".encode() + b"\n" + "ü".encode() * 300_000 + b"\n"
    path = tmp_path / "moved.jsonl"
    path.write_bytes(good)
    assert detect_format(path) == "export"
    path.write_bytes(good + b"ok \xff\n")
    with pytest.raises(InvalidInput, match=rf"moved.jsonl: not UTF-8 text \(byte {len(good) + 3}\); the formats"):
        detect_format(path)
    latin = tmp_path / "notes.json"
    latin.write_bytes(b"[" + b"1," * 700_000 + "\"é\"".encode("latin-1") + b"]")
    with pytest.raises(InvalidInput, match=r"notes.json: not UTF-8 text \(byte 1400002\)"):
        detect_format(latin)


async def test_an_import_leaves_the_cyclic_collector_as_it_found_it(service: MemoryService, database: Database,
                                                                     alice: Principal, tree: Path,
                                                                     tmp_path: Path) -> None:
    """An import keeps the collector off while it reads and what it read out of collections until it
    is written: after it, read or refused, the collector runs again over everything."""
    import gc

    maintenance = MaintenanceRepository(database.admin)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert (await import_paths(service, maintenance, alice, [tree], progress=False)).created == 10
    assert gc.isenabled() and gc.get_freeze_count() == 0
    bad = tmp_path / "memory.json"
    bad.write_text(KNOWLEDGE_GRAPH + '\n{"type": "relation", "from": "A", "to": "B"}')
    with pytest.raises(InvalidInput, match="nothing was imported"):
        await import_paths(service, maintenance, alice, [bad], progress=False)
    assert gc.isenabled() and gc.get_freeze_count() == 0


async def test_import_tree_twice_adds_nothing(service: MemoryService, database: Database, alice: Principal,
                                              tree: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    written = datetime(2025, 3, 4, 5, 6, tzinfo=UTC)
    os.utime(tree / "MEMORY.md", (written.timestamp(), written.timestamp()))
    first = await import_paths(service, maintenance, alice, [tree], progress=False)
    assert (first.files, first.created, first.unchanged) == (3, 10, 0)
    notes = [m for m in (await service.list(alice, limit=100)).memories if m.source == "import:MEMORY.md"]
    assert len(notes) == 5 and {m.occurred_at for m in notes} == {written}  # dated by the file's last write
    second = await import_paths(service, maintenance, alice, [tree], progress=False)
    assert (second.created, second.unchanged) == (0, 10)

    core = (await service.list(alice, order="importance", limit=100)).memories
    identity = [m for m in core if m.kind == "identity"]
    assert [m.content for m in sorted(identity, key=lambda m: -m.priority)] == [
        "I am Ada, a careful engineering agent.", "I ask before deleting anything."]
    assert all(m.pinned and m.source == "import:SOUL.md" for m in identity)
    hits = (await service.search(alice, "who works at Anthropic")).hits
    assert hits[0].snippet == "John_Smith works at Anthropic"
    assert (await service.search(alice, "Spanish speaker")).hits[0].snippet == "John_Smith: Speaks fluent Spanish"


async def test_export_import_round_trip(service: MemoryService, database: Database, alice: Principal,
                                        make_db, settings, tmp_path: Path) -> None:
    await service.write(alice, "Line\u2028separators\u2029and\x85next-line survive a round trip")
    a = (await service.write(alice, "Round trip fact", tags=["x"], kind="fact")).memory
    await service.update(alice, a.id, content="Round trip fact, edited", reason="typo")
    b = (await service.write(alice, "Forgotten but restorable", scope="user")).memory
    await service.forget(alice, [b.id], reason="test")
    await service.write(alice, "Agent scoped", scope="agent_project")

    out = io.StringIO()
    assert await export_user(MaintenanceRepository(database.admin), alice.user_id, out) == 4
    dump = tmp_path / "export.jsonl"
    dump.write_text(out.getvalue())

    empty = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        target = MemoryService(MemoryRepository(empty.pool), settings)
        maintenance = MaintenanceRepository(empty.admin)
        report = await import_paths(target, maintenance, alice, [dump], progress=False)
        assert report.created == 4
        assert (await import_paths(target, maintenance, alice, [dump], progress=False)).created == 0

        async def snapshot(db: Database) -> tuple[list, list]:
            async with db.admin.acquire() as conn:
                memories = [dict(r) for r in await conn.fetch(
                    "SELECT id, user_id, agent_id, project_id, kind, content, content_hash, tags, version, "
                    "created_at, updated_at, deleted_at, deleted_reason, fts FROM memories ORDER BY id")]
                history = [dict(r) for r in await conn.fetch(
                    "SELECT memory_id, event, old, new, actor, client, reason, created_at "
                    "FROM memory_history ORDER BY memory_id, seq")]
            return memories, history

        assert await snapshot(empty) == await snapshot(database)
        restored = await target.restore(alice, [b.id])
        assert restored.restored[0].content == "Forgotten but restorable"
    finally:
        await empty.close()


async def _index_oid(database: Database, service: MemoryService) -> int | None:
    from mcp_memory.repository.embeddings import index_name

    assert service.vectors is not None
    name = index_name(service.vectors.model, service.vectors.dimension)
    return await database.admin.fetchval("SELECT to_regclass($1)::oid", name)


def _notes(folder: Path, count: int) -> Path:
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# Notes\n" + "".join(
        f"- Note {i}: the build of service {i} of {folder.name} uses cache {i}.\n" for i in range(count)))
    return folder


async def test_a_first_load_into_an_empty_store_builds_the_vector_index_after_its_rows(
        service: MemoryService, database: Database, alice: Principal, tmp_path: Path) -> None:
    """At least import_index_after memories into a store that holds none: the index is dropped,
    the rows go in, the index is built again (a new one), and the vector search finds them. Into a
    store that holds a memory, or below the threshold, the index is never touched."""
    maintenance = MaintenanceRepository(database.admin)
    service.settings = service.settings.model_copy(update={"import_index_after": 5})
    before = await _index_oid(database, service)
    assert before is not None
    small = await import_paths(service, maintenance, alice, [_notes(tmp_path / "small", 3)], progress=False)
    assert small.created == 3 and await _index_oid(database, service) == before  # below the threshold
    await database.admin.execute("DELETE FROM memories")  # empty again (history and graph rows may stay)
    report = await import_paths(service, maintenance, alice, [_notes(tmp_path / "first", 12)], progress=False)
    rebuilt = await _index_oid(database, service)
    assert report.created == 12 and rebuilt is not None and rebuilt != before
    found = await service.search(alice, "build of service 7 cache", limit=3)
    assert "Note 7:" in found.hits[0].snippet
    more = await import_paths(service, maintenance, alice, [_notes(tmp_path / "more", 20)], progress=False)
    assert more.created == 20 and await _index_oid(database, service) == rebuilt  # not empty: left alone


async def _text_indexes(database: Database) -> dict[str, str]:
    return await memories_indexes(database, "gin")


async def test_a_first_load_into_an_empty_store_builds_the_text_indexes_after_its_rows(
        service: MemoryService, database: Database, alice: Principal, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The full-text, trigram and tag indexes are away while a first load's rows go in, and the
    same ones are there after it, nothing left listed; a store that holds a memory keeps them."""
    maintenance = MaintenanceRepository(database.admin)
    service.settings = service.settings.model_copy(update={"import_index_after": 5})
    before = await _text_indexes(database)
    assert {"memories_fts", "memories_content_trgm", "memories_tags"} <= set(before)
    seen: list[dict[str, str]] = []
    write_many = service.write_many

    async def watched(*args, **kwargs):
        seen.append(await _text_indexes(database))
        return await write_many(*args, **kwargs)

    monkeypatch.setattr(service, "write_many", watched)
    report = await import_paths(service, maintenance, alice, [_notes(tmp_path / "first", 12)], progress=False)
    assert report.created == 12 and seen and all(not present for present in seen)
    assert await _text_indexes(database) == before
    assert await database.admin.fetchval("SELECT count(*) FROM deferred_indexes") == 0
    found = await service.search(alice, "cache 7", limit=3)
    assert "Note 7:" in found.hits[0].snippet
    seen.clear()
    await import_paths(service, maintenance, alice, [_notes(tmp_path / "more", 20)], progress=False)
    assert seen and all(present == before for present in seen)  # not empty: left alone


async def test_text_indexes_a_killed_load_took_away_are_built_by_the_next_start(
        database: Database, tmp_path: Path) -> None:
    """The process dies between taking the indexes away and building them: the list holds them,
    and the next `migrate` (every start) builds them; a second one finds nothing to do."""
    from mcp_memory.db.migrate import migrate

    maintenance = MaintenanceRepository(database.admin)
    before = await _text_indexes(database)
    assert sorted(await maintenance.defer_text_indexes_of_empty_store()) == sorted(before)
    assert await _text_indexes(database) == {}
    assert await database.admin.fetchval("SELECT count(*) FROM deferred_indexes") == len(before)
    async with database.admin.acquire() as conn:
        await migrate(conn)
        await migrate(conn)
    assert await _text_indexes(database) == before
    assert await database.admin.fetchval("SELECT count(*) FROM deferred_indexes") == 0
    assert await maintenance.restore_deferred_indexes() == 0


async def test_a_first_load_that_fails_midway_still_leaves_the_vector_index(
        service: MemoryService, database: Database, alice: Principal, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    maintenance = MaintenanceRepository(database.admin)
    service.settings = service.settings.model_copy(update={"import_index_after": 5})
    written = 0
    write_many = service.write_many

    async def failing(*args, **kwargs):
        nonlocal written
        written += 1
        if written > 1:
            raise ConnectionResetError("the database went away")
        return await write_many(*args, **kwargs)

    monkeypatch.setattr(service, "write_many", failing)
    service.settings = service.settings.model_copy(update={"max_batch": 5})
    with pytest.raises(ConnectionResetError):
        await import_paths(service, maintenance, alice, [_notes(tmp_path / "first", 12)], progress=False)
    assert await _index_oid(database, service) is not None
    assert {"memories_fts", "memories_content_trgm", "memories_tags"} <= set(await _text_indexes(database))
