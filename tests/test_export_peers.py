"""`mcp-memory export --to doobidoo-json|basic-memory`, read back by our importers always, and by the
real peers where they are installed: doobidoo's mcp-memory-service 12.4.0 (../shared/peers/
setup_doobidoo.sh; its MemoryImporter through tests/fixtures/doobidoo/peer_import.py) and
basic-memory 0.24.1 (Python >= 3.12: `python3.12 -m venv V && V/bin/pip install basic-memory==0.24.1`,
then BASIC_MEMORY_PYTHON=V/bin/python; tests/fixtures/basic_memory/peer_read.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.exporting import doobidoo as doobidoo_json
from mcp_memory.exporting.run import export_to
from mcp_memory.importers import import_paths
from mcp_memory.importing import basic_memory, doobidoo
from mcp_memory.importing.files import detect_format
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import principal

FIXTURES = Path(__file__).parent / "fixtures"
PEER_DIR = Path(os.environ.get("PEER_DIR", "/tmp/peer-doobidoo"))
PEER_PYTHON = PEER_DIR / "venv" / "bin" / "python"
BM_PYTHON = os.environ.get("BASIC_MEMORY_PYTHON")
WHEN = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
# What goes out: (content, kind, title, tags, scope)
LIVE = [
    ("The staging database runs PostgreSQL 16 on port 5433.", "fact", None, ["infra", "database"], None),
    ("Alice prefers squash merges.", "preference", "Merging", ["git"], "user"),
    ("Decided to use Redis for the session cache.", "decision", None, [], None),
    ("Deploy: run ops/deploy.sh, then check the dashboard.", "procedure", "Deploying", ["ops"], None),
    ("Ünïcode survives: naïve café, 東京, emoji 🚀.\n\nA second paragraph.", "note", None, [], None),
]


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A peer's own Python, reading what we wrote (a one-off subprocess: the test waits for it)."""
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
async def stored(service: MemoryService, alice: Principal) -> dict[str, datetime]:
    """The memories above, plus one forgotten and one replaced by a newer version (neither goes out)."""
    times = {}
    for i, (content, kind, title, tags, scope) in enumerate(LIVE):
        when = WHEN.replace(day=i + 1)
        await service.write(alice, content, kind=kind, title=title, tags=tags, scope=scope, occurred_at=when)
        times[content] = when
    gone = await service.write(alice, "A memory that was forgotten.")
    await service.forget(alice, [gone.memory.id])
    old = await service.write(alice, "The CI pipeline takes twelve minutes.", kind="fact")
    await service.write(alice, "The CI pipeline takes eight minutes now.", kind="fact", supersedes=[old.memory.id],
                        occurred_at=WHEN)
    times["The CI pipeline takes eight minutes now."] = WHEN
    return times


async def test_doobidoo_json_is_the_peers_export_format(database: Database, alice: Principal,
                                                        stored: dict[str, datetime]) -> None:
    out = io.StringIO()
    count = await export_to(MaintenanceRepository(database.admin), alice.user_id, "doobidoo-json", out=out)
    data = json.loads(out.getvalue())
    assert count == len(stored) == data["export_metadata"]["total_memories"]
    assert data["export_metadata"]["source_machine"] == "mcp-memory"
    got = {m["content"]: m for m in data["memories"]}
    assert set(got) == set(stored)  # the forgotten and the replaced stay behind
    for content, when in stored.items():
        m = got[content]
        assert m["content_hash"] == doobidoo_json.content_hash(content) and m["store"] == "default"
        assert m["created_at"] == when.timestamp()  # when it became true, which the peer keeps as created_at
    staging = got[LIVE[0][0]]
    assert (staging["memory_type"], staging["tags"]) == ("reference", ["infra", "database"])
    assert staging["metadata"]["mcp_memory_project_id"] == "proj-x"
    assert got[LIVE[1][0]]["memory_type"] == "preference_signal"
    assert "mcp_memory_project_id" not in got[LIVE[1][0]]["metadata"]  # a user-wide memory


@pytest.mark.skipif(not PEER_PYTHON.exists(), reason=f"doobidoo's mcp-memory-service is not installed at {PEER_DIR} "
                                                     "(../shared/peers/setup_doobidoo.sh installs it)")
async def test_doobidoo_json_round_trip_through_the_peer(service: MemoryService, database: Database, alice: Principal,
                                                         stored: dict[str, datetime], tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    maintenance = MaintenanceRepository(database.admin)
    with export.open("w", encoding="utf-8") as out:
        await export_to(maintenance, alice.user_id, "doobidoo-json", out=out)
    db = tmp_path / "sqlite_vec.db"
    env = {**os.environ, "HOME": str(PEER_DIR / "home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MCP_MEMORY_BASE_DIR": str(tmp_path / "base")}
    ran = _run([str(PEER_PYTHON), str(FIXTURES / "doobidoo" / "peer_import.py"), str(export), str(db),
                "--export", str(tmp_path / "peer-export.json")], env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    peer = json.loads(ran.stdout)
    assert (peer["imported"], peer["rejected"], peer["errors"]) == (len(stored), 0, 0)
    held = {m["content"]: m for m in peer["memories"]}
    assert set(held) == set(stored)
    for content, when in stored.items():
        assert held[content]["created_at"] == when.timestamp()
    assert held[LIVE[0][0]]["memory_type"] == "reference"
    assert set(held[LIVE[0][0]]["tags"]) == {"infra", "database", "source:mcp-memory"}  # the peer adds its source

    # ...and back: the peer's database, read by our importer, is the same memories
    back = {d.content: d for d in doobidoo.read(db)}
    assert set(back) == set(stored)
    kinds = {content: kind for content, kind, *_ in LIVE}
    for content, draft in back.items():
        assert draft.occurred_at == stored[content]
        assert draft.kind == kinds.get(content, "fact")
    bob = principal("bob", agent=None, project=None)
    report = await import_paths(service, maintenance, bob, [db], progress=False)
    assert report.created == len(stored)
    again = await import_paths(service, maintenance, alice, [db], progress=False, scope="project")
    assert again.created == 1  # only the user-wide one is new in the project (the same text elsewhere is not)
    # the peer's own export JSON (from any of its backends) reads the same
    assert detect_format(tmp_path / "peer-export.json") == "doobidoo-json"
    carol = principal("carol", agent=None, project=None)
    report = await import_paths(service, maintenance, carol, [tmp_path / "peer-export.json"], progress=False)
    assert report.created == len(stored)
    carols = {m.content: m for m in (await service.list(carol, limit=100)).memories}
    assert set(carols) == set(stored)
    assert all(carols[c].occurred_at == stored[c] and carols[c].kind == kinds.get(c, "fact") for c in stored)


async def test_doobidoo_json_read_back_by_our_importer(service: MemoryService, database: Database, alice: Principal,
                                                       stored: dict[str, datetime], tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    maintenance = MaintenanceRepository(database.admin)
    with export.open("w", encoding="utf-8") as out:
        await export_to(maintenance, alice.user_id, "doobidoo-json", out=out)
    assert detect_format(export) == "doobidoo-json"
    bob = principal("bob", agent=None, project=None)
    dry = await import_paths(service, maintenance, bob, [export], dry_run=True, progress=False)
    assert (dry.created, dry.unchanged) == (len(stored), 0)
    assert (await import_paths(service, maintenance, bob, [export], progress=False)).created == len(stored)
    back = {m.content: m for m in (await service.list(bob, limit=100)).memories}
    assert set(back) == set(stored)
    kinds = {content: kind for content, kind, *_ in LIVE}
    for content, memory in back.items():
        assert (memory.occurred_at, memory.kind) == (stored[content], kinds.get(content, "fact"))
        assert memory.metadata["source"] == "mcp-memory-service" and memory.metadata["mcp_memory_id"]
    assert back[LIVE[0][0]].tags == ["infra", "database"]
    assert (await import_paths(service, maintenance, bob, [export], progress=False)).created == 0
    broken = json.loads(export.read_text())
    broken["memories"][2]["created_at"] = "yesterday"
    export.write_text(json.dumps(broken))
    carol = principal("carol", agent=None, project=None)
    with pytest.raises(InvalidInput, match=r"memories\[2\] .*created_at 'yesterday' is not a time.*nothing was"):
        await import_paths(service, maintenance, carol, [export], progress=False)
    assert (await service.list(carol, limit=100)).memories == []


async def test_basic_memory_notes_read_back_by_our_importer(service: MemoryService, database: Database,
                                                            alice: Principal, stored: dict[str, datetime],
                                                            tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    maintenance = MaintenanceRepository(database.admin)
    assert await export_to(maintenance, alice.user_id, "basic-memory", folder=folder) == len(stored)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md"))
    assert "fact/The staging database runs PostgreSQL 16 on port.md" not in files  # eight words, then …
    assert "preference/Merging.md" in files and "procedure/Deploying.md" in files
    back = {d.content: d for d in basic_memory.read(folder)}
    assert set(back) == set(stored)
    for content, kind, title, tags, _ in LIVE:
        draft = back[content]
        assert (draft.kind, draft.tags, draft.occurred_at) == (kind, tags, stored[content])
        if title:
            assert draft.title == title
    with pytest.raises(InvalidInput, match="not an empty folder"):
        await export_to(maintenance, alice.user_id, "basic-memory", folder=folder)
    report = await import_paths(service, maintenance, alice, [folder], progress=False)
    assert report.created == 1  # the same texts are there already: only the user-wide one is new in the project


@pytest.mark.skipif(not BM_PYTHON, reason="basic-memory is not installed: set BASIC_MEMORY_PYTHON to a Python >= 3.12 "
                                          "with basic-memory==0.24.1")
async def test_basic_memory_notes_indexed_by_the_real_package(database: Database, alice: Principal,
                                                              stored: dict[str, datetime], tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    await export_to(MaintenanceRepository(database.admin), alice.user_id, "basic-memory", folder=folder)
    ran = _run([str(BM_PYTHON), str(FIXTURES / "basic_memory" / "peer_read.py"), str(folder)], dict(os.environ))
    assert ran.returncode == 0, ran.stderr[-2000:]
    peer = json.loads(ran.stdout)
    assert peer["cli"] == [f"exported: indexed and settled — {len(stored)} notes from {len(stored)} files"]
    notes = {n["content"]: n for n in peer["notes"].values()}
    assert set(notes) == set(stored) and all(n["indexed"] for n in notes.values())
    for content, kind, title, tags, _ in LIVE:
        note = notes[content]
        assert (note["type"], note["tags"], note["observations"], note["relations"]) == (kind, tags, [], [])
        assert datetime.fromisoformat(note["parsed_created"]) == stored[content]
        assert note["title"] == (title or note["title"]) and note["metadata"]["mcp_memory_kind"] == kind


def test_the_command_line_writes_both(db_url: str, tmp_path: Path) -> None:
    import sys
    cli = str(Path(sys.executable).with_name("mcp-memory"))
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "dora", "MCP_MEMORY_PROJECT": "none"}
    wrote = subprocess.run([cli, "import", str(FIXTURES / "basic_memory" / "project"), "--quiet"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert wrote.returncode == 0, wrote.stderr
    out = subprocess.run([cli, "export", "--to", "doobidoo-json", "-o", str(tmp_path / "peer.json")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr.strip() == "exported 15 memories of user dora", out.stderr
    assert json.loads((tmp_path / "peer.json").read_text())["export_metadata"]["total_memories"] == 15
    notes = subprocess.run([cli, "export", "--to", "basic-memory", str(tmp_path / "notes")], env=env,
                           capture_output=True, text=True, timeout=120)
    assert notes.returncode == 0 and len(list((tmp_path / "notes").rglob("*.md"))) == 15, notes.stderr
    again = subprocess.run([cli, "export", "--to", "basic-memory", str(tmp_path / "notes")], env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "not an empty folder" in again.stderr and "Traceback" not in again.stderr
    # where nothing can be written: one line saying why, for each format
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    for to in ("doobidoo-json", "basic-memory", "mcp-memory"):
        failed = subprocess.run([cli, "export", "--to", to, str(blocked / "out")], env=env, capture_output=True,
                                text=True, timeout=120)
        assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
        assert failed.stderr.startswith(f"error: {blocked / 'out'}: cannot be "), failed.stderr
