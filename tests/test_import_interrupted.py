"""`mcp-memory import` of an export stopped half-way, as it fails for users: the process killed
(SIGKILL) while its first load has the vector index dropped, then the database dropping the
connection in the middle of a batch. Running the command again finishes it: every memory once, with
its history, its vector and its names read, the vector index back, the graph consistent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest

from mcp_memory.models import Principal, WriteItem
from mcp_memory.repository.graph_checks import inconsistencies
from mcp_memory.service import MemoryService

from .exports import as_version_1, copied, exported_with_vectors

CLI = str(Path(sys.executable).with_name("mcp-memory"))
COPIES = 80  # of 20 memories: 1,600 records, four batches of the import's 500 (the third is cut off)
PLACES = ("Lisbon", "Oslo", "Kyoto", "Quito", "Hobart")


def _replicated(export: str, version: int) -> str:
    """The export's records copied under new ids into a project each (a text is one memory per
    namespace; texts, vectors and history as exported), so a load of many memories costs the
    embedding of twenty. Version 2 copies the project's entities too, and each graph onto them;
    version 1 carries no graph (the names are read on import)."""
    lines = [json.loads(line) for line in (export if version == 2 else as_version_1(export, [None] * 20)).splitlines()]
    header, records = lines[0], [r for r in lines if r["type"] == "memory"]
    entities = [r["entity"] for r in lines if r["type"] == "entity"]
    out = [header, *({"type": "entity", "entity": e} for e in entities if e["project_id"] is None)]
    copies = []
    for n in range(COPIES):
        ids = {e["id"]: str(uuid.uuid4()) for e in entities if e["project_id"] is not None}
        out += [{"type": "entity", "entity": {**e, "id": ids[e["id"]], "project_id": f"proj-{n}",
                                              "merged_into": ids.get(e["merged_into"], e["merged_into"])}}
                for e in entities if e["id"] in ids]
        for r in records:
            copy = copied(r, project_id=f"proj-{n}")
            if copy.get("graph"):
                copy["graph"] = {**copy["graph"], **{part: [{**x, "entity": ids.get(x["entity"], x["entity"])}
                                                            for x in copy["graph"][part]]
                                                     for part in ("mentions", "facts")}}
            copies.append(copy)
    return "".join(json.dumps(r) + "\n" for r in [*out, *copies])


async def _stall_at(conn: asyncpg.Connection, memory_id: str) -> None:
    """The insert of `memory_id` waits (as a batch does on a slow or failing server) until its
    connection is cut."""
    await conn.execute(f"""
        CREATE OR REPLACE FUNCTION stall_import() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.id = '{memory_id}' THEN PERFORM pg_sleep(120); END IF; RETURN NEW; END $$;
        DROP TRIGGER IF EXISTS stall_import ON memories;
        CREATE TRIGGER stall_import BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION stall_import();""")


async def _stalled_backend(conn: asyncpg.Connection, proc: subprocess.Popen) -> int:
    for _ in range(1200):
        pid = await conn.fetchval("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                  "AND wait_event = 'PgSleep'")
        if pid is not None:
            return pid
        assert proc.poll() is None, proc.communicate()
        await asyncio.sleep(0.05)
    raise AssertionError("the import never reached the stalled memory")


def _import(dump: Path, url: str, writers: int) -> subprocess.Popen:
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": url, "MCP_MEMORY_USER": "alice", "MCP_MEMORY_PROJECT": "none",
           "MCP_MEMORY_IMPORT_INDEX_AFTER": "1000", "MCP_MEMORY_IMPORT_WRITERS": str(writers)}
    return subprocess.Popen([CLI, "import", "--quiet", str(dump)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.mark.parametrize(("version", "writers"), [(1, 1), (2, 1), (2, 2)])
async def test_an_import_cut_off_half_way_is_finished_by_running_it_again(
        service: MemoryService, database, alice: Principal, make_db, tmp_path: Path, version: int,
        writers: int) -> None:
    """One batch after another, what is there after each stop is every batch before the stopped one;
    with two written at once, the other writer's batches too, as far as they got; the same command
    run again finishes it either way."""
    texts = [f"{name} moved to {PLACES[i % 5]} in spring {2000 + i} and keeps a {pet} called Pip {i}."
             for i, (name, pet) in enumerate((n, p) for n in ("Ana Souza", "Bruno Lima", "Chiara Neri", "Dev Patel")
                                             for p in ("cat", "dog", "parrot", "tortoise", "hamster"))]
    await service.write_many(alice, [WriteItem(content=t) for t in texts])
    dump = tmp_path / "export.jsonl"
    dump.write_text(_replicated(await exported_with_vectors(service, database.admin, alice.user_id), version))
    records = [r for r in map(json.loads, dump.read_text().splitlines()) if r["type"] == "memory"]
    ids = [r["memory"]["id"] for r in records]
    url = await make_db()
    conn = await asyncpg.connect(url)
    try:
        # Killed in its second batch, while the first load has the vector index dropped.
        await _stall_at(conn, ids[700])
        killed = _import(dump, url, writers)
        await _stalled_backend(conn, killed)
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(timeout=30) == -signal.SIGKILL
        for backend in await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                        "AND pid <> pg_backend_pid()"):
            await conn.execute("SELECT pg_terminate_backend($1)", backend["pid"])  # as the server notices
        there = await conn.fetchval("SELECT count(*) FROM memories")
        assert there == 500 if writers == 1 else there < 1600
        assert not await conn.fetchval("SELECT count(*) FROM memories WHERE id = $1", uuid.UUID(ids[700]))
        assert not await conn.fetchval("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'memories_hnsw_%'")

        # The database drops the connection in the middle of the third batch.
        await _stall_at(conn, ids[1300])
        cut = _import(dump, url, writers)
        await conn.execute("SELECT pg_terminate_backend($1)", await _stalled_backend(conn, cut))
        _, err = cut.communicate(timeout=60)
        assert cut.returncode != 0
        assert "Traceback" not in err, err
        assert "error: the database at" in err and "administrator command" in err, err
        assert "run the same command again to finish it" in err, err
        there = await conn.fetchval("SELECT count(*) FROM memories")
        assert there == 1000 or writers > 1  # the other writer's batch may have been there already

        await conn.execute("DROP TRIGGER stall_import ON memories")
        done = _import(dump, url, writers)
        printed, err = done.communicate(timeout=180)
        assert done.returncode == 0, err
        assert f"imported {1600 - there} new memories from 1 file(s); {there} were already there" in printed
        assert await conn.fetchval("SELECT count(DISTINCT id) FROM memories") == len(ids) == 1600
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 0
        assert await conn.fetchval("SELECT count(*) FROM memory_history") == sum(len(r["history"]) for r in records)
        assert await conn.fetchval("SELECT count(*) FROM graph_backlog") == 0
        assert await conn.fetchval("SELECT count(DISTINCT memory_id) FROM memory_entities") == len(ids)
        if version == 2:  # the graph as the file has it, not read again
            assert await conn.fetchval("SELECT count(*) FROM memory_entities") == sum(
                len(r["graph"]["mentions"]) for r in records)
        assert await conn.fetchval("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'memories_hnsw_%'")
        assert not {k: n for k, n in (await inconsistencies(conn)).items() if n}
    finally:
        await conn.close()


def test_a_misuse_of_a_connection_is_a_bug_not_an_outage() -> None:
    """Only a connection lost reads as the database gone: asyncpg's other InterfaceErrors are ours."""
    from mcp_memory.config import Settings
    from mcp_memory.db import as_unavailable

    settings = Settings(database_url="postgresql://me@db.example:5432/memory")
    lost = as_unavailable(asyncpg.InterfaceError("cannot call Transaction.__aexit__(): the underlying connection "
                                                 "is closed"), settings, None)
    assert lost is not None and "the database at db.example:5432/memory is not available" in str(lost)
    assert as_unavailable(asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
                          settings, None) is None
