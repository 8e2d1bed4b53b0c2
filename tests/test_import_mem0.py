"""Importing mem0 and OpenMemory exports. tests/fixtures/mem0/get_all.json is what the real
`mem0ai` package (2.2.1) returned from Memory.get_all() (tests/fixtures/mem0/make_fixture.py).
The OpenMemory backup here is built by hand in the shape of its exporter's source
(mem0ai/mem0 openmemory/api/app/routers/backup.py, `_export_sqlite`): OpenMemory is no longer
shipped, so no real one could be made."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import import_paths
from mcp_memory.importing import mem0
from mcp_memory.importing.files import detect_format
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import principal

FIXTURE = Path(__file__).parent / "fixtures" / "mem0" / "get_all.json"

OPENMEMORY = {
    "user": {"id": "5b7c0000-0000-4000-8000-000000000001", "user_id": "dana", "name": None, "email": None,
             "metadata": {}, "created_at": "2025-06-01T09:00:00+00:00", "updated_at": None},
    "apps": [{"id": "a1", "owner_id": "5b7c0000-0000-4000-8000-000000000001", "name": "cursor", "description": None,
              "metadata": {}, "is_active": True, "created_at": None, "updated_at": None}],
    "categories": [{"id": "c1", "name": "work", "description": None, "created_at": None, "updated_at": None}],
    "memories": [
        {"id": "m1", "user_id": "5b7c", "app_id": "a1", "content": "Dana ships releases on Tuesdays.",
         "metadata": {"source_app": "openmemory"}, "state": "active", "created_at": "2025-06-02T10:00:00+00:00",
         "updated_at": None, "archived_at": None, "deleted_at": None, "category_ids": ["c1"]},
        {"id": "m2", "user_id": "5b7c", "app_id": "a1", "content": "Dana's old laptop was a ThinkPad.",
         "metadata": {}, "state": "deleted", "created_at": "2025-06-03T10:00:00+00:00", "updated_at": None,
         "archived_at": None, "deleted_at": "2025-06-04T10:00:00+00:00", "category_ids": []},
        {"id": "m3", "user_id": "5b7c", "app_id": None, "content": "An archived thought.", "metadata": {},
         "state": "archived", "created_at": None, "updated_at": None, "archived_at": "2025-06-05T10:00:00+00:00",
         "deleted_at": None, "category_ids": []},
    ],
    "memory_categories": [{"memory_id": "m1", "category_id": "c1"}],
    "status_history": [], "access_controls": [],
    "export_meta": {"app_id_filter": None, "from_date": None, "to_date": None, "version": "1",
                    "generated_at": "2025-06-06T00:00:00+00:00"},
}


def test_reads_what_mem0ai_get_all_returns() -> None:
    data = json.loads(FIXTURE.read_text())
    drafts = mem0.read(data)
    assert [(d.content, d.scope) for d in drafts] == [
        ("I am vegetarian and allergic to peanuts.", "user"),
        ("My daughter Mia starts school in September.", "user"),
        ("Alice prefers short answers with code first.", "agent"),
        ("In this session we are migrating the billing service to Go.", "user"),
    ]
    for draft, item in zip(drafts, data["results"], strict=True):
        assert draft.metadata["source"] == "mem0"
        assert draft.metadata["original_id"] == item["id"]
        assert draft.metadata["original_user_id"] == "alice"
        assert draft.occurred_at == datetime.fromisoformat(item["created_at"])
    assert drafts[0].metadata["category"] == "food"
    assert drafts[2].metadata["original_agent_id"] == "coder"
    assert drafts[3].tags == ["run:run-42"] and drafts[3].metadata["original_run_id"] == "run-42"


def test_reads_an_openmemory_backup_zip_leaving_deleted_and_archived_out(tmp_path: Path) -> None:
    backup = tmp_path / "memories_export_dana.zip"
    with zipfile.ZipFile(backup, "w") as zf:
        zf.writestr("memories.json", json.dumps(OPENMEMORY))
    assert detect_format(backup) == "mem0"
    [draft] = mem0.read(mem0.load(backup))
    assert (draft.content, draft.tags, draft.scope) == ("Dana ships releases on Tuesdays.", ["work"], "user")
    assert draft.metadata == {"source_app": "openmemory", "original_user_id": "dana", "original_app": "cursor",
                              "source": "openmemory", "original_id": "m1"}
    other = tmp_path / "photos.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("a.txt", "x")
    with pytest.raises(InvalidInput, match="photos.zip: a zip without memories.json, so not an OpenMemory backup; "
                                           "the formats mcp-memory import reads: a markdown"):
        detect_format(other)


def test_detection(tmp_path: Path) -> None:
    assert detect_format(FIXTURE) == "mem0"
    bare = tmp_path / "memories.json"  # a bare list, as the platform client's get_all gives
    bare.write_text(json.dumps(json.loads(FIXTURE.read_text())["results"]))
    assert detect_format(bare) == "mem0"
    saved = tmp_path / "mem0-backup.txt"  # JSON is known by its content, whatever the name
    saved.write_text(FIXTURE.read_text())
    assert detect_format(saved) == "mem0"
    graph = tmp_path / "memory.json"
    graph.write_text(json.dumps({"type": "entity", "name": "X", "entityType": "thing", "observations": []}))
    assert detect_format(graph) == "knowledge-graph"


async def test_import_into_the_importers_namespaces_dry_run_and_twice(
        service: MemoryService, database: Database, alice: Principal) -> None:
    maintenance = MaintenanceRepository(database.admin)
    dry = await import_paths(service, maintenance, alice, [FIXTURE], dry_run=True, progress=False)
    # mem0's user and agent ids name none of ours: a user's memory is alice's, an agent's is agent-a's
    assert (dry.created, dry.planned) == (4, {"note in user": 3, "note in agent agent-a": 1})
    assert (await service.list(alice, limit=50)).memories == []
    first = await import_paths(service, maintenance, alice, [FIXTURE], progress=False)
    assert (first.created, first.unchanged) == (4, 0)
    stored = {m.content: m for m in (await service.list(alice, limit=50)).memories}
    coder = stored["Alice prefers short answers with code first."]
    assert (coder.scope.level, coder.scope.agent_id) == ("agent", "agent-a")
    assert stored["I am vegetarian and allergic to peanuts."].scope.level == "user"
    second = await import_paths(service, maintenance, alice, [FIXTURE], progress=False)
    assert (second.created, second.unchanged) == (0, 4)
    # without an agent, an agent's memory is the user's; --scope puts everything in one place
    no_agent = principal(agent=None, project="proj-y")
    assert (await import_paths(service, maintenance, no_agent, [FIXTURE], dry_run=True, progress=False)).planned \
        == {"note in user": 1}  # the other three are alice's user memories already
    scoped = await import_paths(service, maintenance, alice, [FIXTURE], scope="project", dry_run=True,
                                progress=False)
    assert scoped.planned == {"note in project proj-x": 4}


async def test_a_record_it_cannot_read_refuses_the_whole_file(service: MemoryService, database: Database,
                                                              alice: Principal, tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text())
    data["results"][2]["created_at"] = "last Tuesday"
    bad = tmp_path / "export.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match=r"results\[2\] \(id 90cf8e03.*'last Tuesday' is not an ISO 8601.*"
                                           r"nothing was imported"):
        await import_paths(service, MaintenanceRepository(database.admin), alice, [bad], progress=False)
    assert (await service.list(alice, limit=50)).memories == []
