"""Importing Claude Code's CLAUDE.md files: the user's into the user's namespace, a project's into
the project our server derives for its folder."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import import_paths
from mcp_memory.importing import claude_md
from mcp_memory.importing.files import detect_format
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

from .conftest import principal

USER_MD = """# Global preferences
- Answer in British English.
- Never run `git push --force`.
@~/.claude/extra-rules.md
"""

PROJECT_MD = """# Acme API

The service is a FastAPI app; the entry point is `app/main.py`.

## Commands
- Run tests with `make test`
- Lint with `ruff check .`
@docs/conventions.md

## Style
```
@not-an-import-inside-a-fence
```
"""

PROJECT_WRITTEN = datetime(2024, 1, 2, 9, 30, tzinfo=UTC)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    user = home / ".claude" / "CLAUDE.md"
    user.write_text(USER_MD)
    repo = tmp_path / "code" / "acme-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "services").mkdir()
    project = repo / "CLAUDE.md"
    project.write_text(PROJECT_MD)
    return user, project


def test_sections_become_procedures_and_import_lines_stay_out(files: tuple[Path, Path]) -> None:
    drafts = claude_md.read(PROJECT_MD, files[1])
    assert [(d.title, d.content) for d in drafts] == [
        ("Acme API", "The service is a FastAPI app; the entry point is `app/main.py`."),
        ("Acme API › Commands", "Run tests with `make test`"),
        ("Acme API › Commands", "Lint with `ruff check .`"),
        ("Acme API › Style", "```\n@not-an-import-inside-a-fence\n```"),
    ]
    assert all(d.kind == "procedure" and d.tags == ["claude-md"] and d.metadata["source"] == "claude-md"
               for d in drafts)


def test_detection_and_placement(files: tuple[Path, Path], tmp_path: Path) -> None:
    user, project = files
    assert detect_format(user) == detect_format(project) == "claude-md"
    local = project.parent / "services" / "CLAUDE.local.md"
    local.write_text("- uses port 8080\n")
    assert detect_format(local) == "claude-md"
    assert detect_format(project, "markdown") == "markdown"  # --from wins
    alice = principal()
    assert claude_md.placement(user, alice, None, False) == (alice, "user")
    moved, scope = claude_md.placement(local, alice, None, False)
    assert (moved.project_id, moved.user_id, scope) == ("acme-api", "alice", "project")  # the git repository's name
    inner = project.parent / ".claude" / "CLAUDE.md"
    inner.parent.mkdir()
    inner.write_text("- x\n")
    assert claude_md.placement(inner, alice, None, False)[0].project_id == "acme-api"
    loose = tmp_path / "notes" / "CLAUDE.md"  # no repository: the folder's name
    loose.parent.mkdir()
    loose.write_text("- y\n")
    assert claude_md.placement(loose, alice, None, False)[0].project_id == "notes"
    assert claude_md.placement(project, alice, None, True) == (alice, None)  # --project named one
    assert claude_md.placement(project, alice, "agent", False) == (alice, "agent")


async def test_import_into_the_right_namespaces_dry_run_and_twice(
        service: MemoryService, database: Database, alice: Principal, files: tuple[Path, Path]) -> None:
    user, project = files
    maintenance = MaintenanceRepository(database.admin)
    dry = await import_paths(service, maintenance, alice, [user, project], dry_run=True, progress=False)
    assert (dry.created, dry.unchanged) == (6, 0)
    assert dry.planned == {"procedure in user": 2, "procedure in project acme-api": 4}
    assert (await service.list(principal(project="acme-api"), limit=50)).memories == []

    os.utime(project, (PROJECT_WRITTEN.timestamp(), PROJECT_WRITTEN.timestamp()))
    first = await import_paths(service, maintenance, alice, [user, project], progress=False)
    assert (first.created, first.unchanged) == (6, 0)
    in_acme = (await service.list(principal(project="acme-api"), limit=50)).memories
    # each keeps where it came from and is dated by its file's last write
    from_project = [m for m in in_acme if m.scope.level == "project"]
    assert {m.occurred_at for m in from_project} == {PROJECT_WRITTEN}
    assert {m.metadata["original_path"] for m in from_project} == {str(project.resolve())}
    assert {m.metadata["original_path"] for m in in_acme if m.scope.level == "user"} == {str(user.resolve())}
    assert {(m.scope.level, m.scope.project_id) for m in in_acme} == {("user", None), ("project", "acme-api")}
    assert {m.content for m in in_acme if m.scope.level == "project"} == {
        "The service is a FastAPI app; the entry point is `app/main.py`.", "Run tests with `make test`",
        "Lint with `ruff check .`", "```\n@not-an-import-inside-a-fence\n```"}
    in_proj_x = (await service.list(alice, limit=50)).memories  # the importer's own project got none
    assert {m.content for m in in_proj_x} == {"Answer in British English.", "Never run `git push --force`."}

    second = await import_paths(service, maintenance, alice, [user, project], progress=False)
    assert (second.created, second.unchanged) == (0, 6)

    named = await import_paths(service, maintenance, alice, [project], progress=False, project_given=True)
    assert named.created == 4 and named.planned == {"procedure in project proj-x": 4}


async def test_a_section_it_cannot_take_refuses_the_import_naming_it(
        service: MemoryService, database: Database, alice: Principal, files: tuple[Path, Path]) -> None:
    user, project = files
    project.write_text(PROJECT_MD + "\n## Glossary\n" + "A long line of terms. " * 2000 + "\n")
    with pytest.raises(InvalidInput, match=r"CLAUDE.md: item 5 \(Acme API › Glossary\): content has 43999 characters, "
                                           r"more than the limit of 32000.*; nothing was imported"):
        await import_paths(service, MaintenanceRepository(database.admin), alice, [user, project], progress=False)
    # the user's file, read first and fine, was not written either
    assert (await service.list(principal(project="acme-api"), limit=50)).memories == []
