"""Importing doobidoo's mcp-memory-service database. The fixture was written by the real peer
(mcp-memory-service 12.4.0) through its own MCP tools: tests/fixtures/doobidoo/make_fixture.py."""

from __future__ import annotations

import gzip
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import detect_format, import_paths
from mcp_memory.importing import doobidoo
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

FIXTURE = Path(__file__).parent / "fixtures" / "doobidoo" / "memories.db.gz"
LIVE = {
    "The staging database runs PostgreSQL 16 on port 5433.",
    "Alice prefers squash merges and conventional commit messages.",
    "Decided to use Redis for the session cache instead of memcached.",
    "The CI pipeline takes about twelve minutes on the main branch.",
    "Ünïcode survives: naïve café, 東京, emoji 🚀.",
    "The deploy script lives in ops/deploy.sh; it needs VPN access and sudo.",
}


@pytest.fixture
def peer_db(tmp_path: Path) -> Path:
    path = tmp_path / "sqlite_vec.db"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return path


def _peer_rows(path: Path) -> dict[str, sqlite3.Row]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return {r["content"]: r for r in conn.execute("SELECT * FROM memories")}
    finally:
        conn.close()


def test_reads_live_current_memories_with_their_tags_types_times_and_provenance(peer_db: Path) -> None:
    drafts = {d.content: d for d in doobidoo.read(peer_db)}
    # the deleted row and the version the peer's versioned update superseded stay out
    assert set(drafts) == LIVE
    rows = _peer_rows(peer_db)
    for content, draft in drafts.items():
        row = rows[content]
        assert draft.occurred_at == datetime.fromtimestamp(row["created_at"], UTC)
        assert draft.metadata["source"] == "mcp-memory-service"
        assert draft.metadata["original_id"] == row["content_hash"]
        assert draft.metadata["original_type"] == row["memory_type"]
    staging = drafts["The staging database runs PostgreSQL 16 on port 5433."]
    assert (staging.kind, staging.tags) == ("fact", ["infra", "database"])
    alice = drafts["Alice prefers squash merges and conventional commit messages."]
    assert (alice.kind, alice.tags, alice.metadata["author"]) == ("preference", ["preferences", "git"], "alice")
    ci = drafts["The CI pipeline takes about twelve minutes on the main branch."]  # updated in place by the peer
    assert (ci.tags, ci.metadata["measured"]) == (["ci", "timing"], "2026-11")
    assert drafts["Decided to use Redis for the session cache instead of memcached."].kind == "decision"
    deploy = drafts["The deploy script lives in ops/deploy.sh; it needs VPN access and sudo."]
    assert deploy.metadata["original_parent_id"] == rows[
        "The deploy script lives in ops/deploy.sh and needs VPN access."]["content_hash"]


def test_detection_by_content_and_refusals(peer_db: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "anything.bin"
    renamed.write_bytes(peer_db.read_bytes())
    assert detect_format(renamed) == "doobidoo"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with pytest.raises(InvalidInput, match="SQLite database but not mcp-memory-service's; the formats"):
        detect_format(other)
    text = tmp_path / "MEMORY.md"
    text.write_text("- a note\n")
    with pytest.raises(InvalidInput, match="not SQLite"):
        detect_format(text, "doobidoo")
    with pytest.raises(InvalidInput, match="an SQLite database, not markdown"):
        detect_format(peer_db, "markdown")


async def test_import_dry_run_then_twice(service: MemoryService, database: Database, alice: Principal,
                                         peer_db: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    dry = await import_paths(service, maintenance, alice, [peer_db], dry_run=True, progress=False)
    assert (dry.dry_run, dry.created, dry.unchanged) == (True, 6, 0)
    assert dry.planned == {"fact in project proj-x": 1, "preference in project proj-x": 1,
                           "decision in project proj-x": 1, "note in project proj-x": 3}
    assert len(dry.first) == 5 and dry.first[0].startswith("[fact, project proj-x] The staging database")
    assert (await service.list(alice, limit=100)).memories == []  # a dry run writes nothing

    first = await import_paths(service, maintenance, alice, [peer_db], progress=False)
    assert (first.created, first.unchanged) == (6, 0)
    stored = {m.content: m for m in (await service.list(alice, limit=100)).memories}
    assert set(stored) == LIVE
    rows = _peer_rows(peer_db)
    for content, memory in stored.items():
        # namespaces come from the importing identity, the original time is kept
        assert (memory.scope.level, memory.scope.agent_id, memory.scope.project_id) == ("project", None, "proj-x")
        assert memory.occurred_at == datetime.fromtimestamp(rows[content]["created_at"], UTC)
        assert memory.metadata["original_id"] == rows[content]["content_hash"]
        assert memory.source == "import:sqlite_vec.db"
    hits = (await service.search(alice, "which cache did we pick for sessions")).hits
    assert hits[0].snippet == "Decided to use Redis for the session cache instead of memcached."

    second = await import_paths(service, maintenance, alice, [peer_db], progress=False)
    assert (second.created, second.unchanged) == (0, 6)
    again = await import_paths(service, maintenance, alice, [peer_db], dry_run=True, progress=False)
    assert (again.created, again.unchanged, again.planned) == (0, 6, {})


@pytest.mark.parametrize(("column", "value", "why"), [
    ("metadata", "'{not json'", "metadata is not JSON"),
    ("content", "CAST(X'4361666afb' AS TEXT)", "its content is not UTF-8 text"),
    ("created_at", "NULL, created_at_iso = 'yesterday'", "created_at is not a time"),
])
async def test_a_row_it_cannot_read_refuses_the_whole_import(service: MemoryService, database: Database,
                                                             alice: Principal, peer_db: Path, tmp_path: Path,
                                                             column: str, value: str, why: str) -> None:
    good = tmp_path / "MEMORY.md"
    good.write_text("- Imported before the bad file would be read\n")
    with sqlite3.connect(peer_db) as conn:
        row_id = conn.execute("SELECT id FROM memories WHERE content LIKE 'Decided%'").fetchone()[0]
        conn.execute("DROP TRIGGER IF EXISTS memories_fts_au")  # the peer's full-text index is not ours to keep
        conn.execute(f"UPDATE memories SET {column} = {value} WHERE id = ?", (row_id,))
    maintenance = MaintenanceRepository(database.admin)
    with pytest.raises(InvalidInput, match=rf"memories row id {row_id} .*{why}.*nothing was imported"):
        await import_paths(service, maintenance, alice, [good, peer_db], progress=False)
    assert (await service.list(alice, limit=100)).memories == []
