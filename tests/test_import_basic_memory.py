"""Importing a basic-memory project. tests/fixtures/basic_memory/project/ was written by the real
`basic-memory` package (0.24.1) through its own CLI: tests/fixtures/basic_memory/make_fixture.py."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import import_paths
from mcp_memory.importing import basic_memory
from mcp_memory.importing.files import detect_format
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import principal

FIXTURE = Path(__file__).parent / "fixtures" / "basic_memory" / "project"
WRITTEN = datetime(2026, 5, 4, 3, 2, 1, tzinfo=UTC)  # the notes' file time, for those without `created`
EXPECTED = {
    "We keep sessions in Redis.",
    "Session Cache: Use Redis for the session cache (memcached lacked persistence)",
    "Session Cache: Sessions expire after 30 minutes",
    "Session Cache depends on Staging Database",
    "Session Cache implements Login Flow (the remember-me part)",
    "Staging Database: Runs PostgreSQL 16 on port 5433",
    "Staging Database: Nightly backups to object storage (kept 14 days)",
    "Staging Database: Only reachable over the VPN",
    "Staging Database part of Infrastructure",
    "Café Notes: Naïve café near 東京 station 🚀",
    "Alice joined in 2023 and leads the platform team.",
    "Alice Moreau: Prefers squash merges and conventional commits",
    "Alice Moreau: Leads the platform team",
    "Alice Moreau works on Login Flow",
    "Users sign in with email and a one-time code. See Session Cache for where sessions live.\n\n"
    "The remember-me box keeps a session for 30 days.",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    shutil.copytree(FIXTURE, root)
    for note in root.rglob("*.md"):
        os.utime(note, (WRITTEN.timestamp(), WRITTEN.timestamp()))
    return root


def test_reads_notes_observations_and_relations_with_provenance(project: Path) -> None:
    drafts = {d.content: d for d in basic_memory.read(project)}
    assert set(drafts) == EXPECTED  # the note basic-memory deleted is gone from the folder, so from the import
    decision = drafts["Session Cache: Use Redis for the session cache (memcached lacked persistence)"]
    assert (decision.kind, decision.tags, decision.about) == ("decision", ["redis", "infra", "decision"],
                                                              ["Session Cache"])
    assert decision.metadata == {"source": "basic-memory", "original_path": "decisions/Session Cache.md",
                                 "original_type": "decision", "original_permalink": "demo/decisions/session-cache",
                                 "original_category": "decision"}
    assert decision.occurred_at == WRITTEN  # no `created` in its front matter: the file's time
    relation = drafts["Session Cache implements Login Flow (the remember-me part)"]
    assert (relation.about, relation.metadata["relation"], relation.metadata["to"]) == (
        ["Session Cache", "Login Flow"], "implements", "Login Flow")
    alice = drafts["Alice Moreau: Prefers squash merges and conventional commits"]
    assert (alice.kind, alice.occurred_at) == ("preference", datetime(2025, 3, 1, 9, tzinfo=UTC))  # front matter
    prose = drafts["We keep sessions in Redis."]
    assert (prose.title, prose.kind, prose.tags) == ("Session Cache", "decision", ["cache", "redis"])


def test_detection_and_parsing_rules(project: Path, tmp_path: Path) -> None:
    assert detect_format(project) == "basic-memory"
    assert detect_format(project / "specs" / "Login Flow.md") == "basic-memory"  # one note, by its front matter
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "MEMORY.md").write_text("- a note\n")
    with pytest.raises(InvalidInput, match="a folder, not a basic-memory project; the formats"):
        detect_format(plain)
    assert detect_format(plain, "basic-memory") == "basic-memory"
    (plain / "MEMORY.md").write_text(
        "---\ntitle: [unclosed\n---\n"  # not YAML: the note's text, as basic-memory reads it
        "- [x] a done task\n- [10:02] a timecode, not a category\n- rel [[A]] and more prose\n"
        "```\n- [fact] inside a fence\n```\n> - [fact] inside a quote\n- 'works with' [[Bob|Bobby]]\n"
        "- [tech] uses #postgres for storage #db\n")
    got = {d.content: d for d in basic_memory.read(plain)}
    assert "MEMORY: uses postgres for storage" in got
    assert got["MEMORY: uses postgres for storage"].tags == ["postgres", "db", "tech"]
    assert got["MEMORY works with Bob"].metadata["relation"] == "works with"
    assert not any("inside a" in c and c.startswith("MEMORY:") for c in got)
    assert any("a done task" in c for c in got) and any("a timecode" in c for c in got)


async def test_import_dry_run_then_twice_with_the_graph(service: MemoryService, database: Database,
                                                        alice: Principal, project: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    dry = await import_paths(service, maintenance, alice, [project], dry_run=True, progress=False)
    assert (dry.dry_run, dry.files, dry.created, dry.unchanged) == (True, 5, len(EXPECTED), 0)
    assert dry.planned == {"decision in project proj-x": 2, "fact in project proj-x": 7,
                           "note in project proj-x": 5, "preference in project proj-x": 1}
    assert (await service.list(alice, limit=100)).memories == []

    first = await import_paths(service, maintenance, alice, [project], progress=False)
    assert (first.created, first.unchanged) == (len(EXPECTED), 0)
    stored = {m.content: m for m in (await service.list(alice, limit=100)).memories}
    assert set(stored) == EXPECTED
    for memory in stored.values():  # the importing identity's namespace, provenance kept
        assert (memory.scope.level, memory.scope.project_id) == ("project", "proj-x")
        assert memory.metadata["source"] == "basic-memory" and memory.source == "import:demo"
    relation = stored["Session Cache depends on Staging Database"]
    got = (await service.get(alice, [relation.id])).memories[0]
    assert set(got.about or []) == {"Session Cache", "Staging Database"}  # the relation's two ends, as entities
    assert stored["Alice Moreau: Leads the platform team"].occurred_at == datetime(2025, 3, 1, 9, tzinfo=UTC)
    hits = (await service.search(alice, "which port does the staging database use")).hits
    assert hits[0].snippet == "Staging Database: Runs PostgreSQL 16 on port 5433"

    second = await import_paths(service, maintenance, alice, [project], progress=False)
    assert (second.created, second.unchanged) == (0, len(EXPECTED))
    again = await import_paths(service, maintenance, alice, [project], dry_run=True, progress=False)
    assert (again.created, again.planned) == (0, {})


async def test_namespace_is_the_importers_and_a_bad_note_refuses_the_whole_import(
        service: MemoryService, database: Database, project: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    bob = principal("bob", agent=None, project=None)
    (project / "people" / "Broken.md").write_bytes(b"---\ntitle: Broken\npermalink: demo/broken\n---\nCaf\xe9\n")
    with pytest.raises(InvalidInput, match=r"note people/Broken.md: not UTF-8 text \(byte 48\); nothing was imported"):
        await import_paths(service, maintenance, bob, [project], progress=False)
    assert (await service.list(bob, limit=100)).memories == []
    (project / "people" / "Broken.md").unlink()
    report = await import_paths(service, maintenance, bob, [project], progress=False, scope="user")
    assert report.created == len(EXPECTED)
    assert {m.scope.level for m in (await service.list(bob, limit=100)).memories} == {"user"}
