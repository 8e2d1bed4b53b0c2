"""stdio identity: explicit settings win, then the client's roots, then the git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_memory.auth import local_principal
from mcp_memory.config import Settings
from mcp_memory.errors import InvalidInput


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop-api"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


def test_explicit_settings_win(repo: Path) -> None:
    p = local_principal(Settings(user="u1", agent="bot", project="p1"), client_name="claude-code",
                        roots=[repo], cwd=repo)
    assert (p.user_id, p.agent_id, p.project_id) == ("u1", "bot", "p1")
    assert p.client == "claude-code" and p.actor == "local:u1" and p.can("admin")


def test_defaults_come_from_client_and_workspace(repo: Path, tmp_path: Path) -> None:
    p = local_principal(Settings(user="u1"), client_name="claude-code", cwd=repo / "src" / "deep")
    assert (p.agent_id, p.project_id) == ("claude-code", "shop-api")
    other = tmp_path / "web"
    (other / ".git").mkdir(parents=True)
    from_roots = local_principal(Settings(user="u1"), roots=[other / "sub"], cwd=repo)
    assert from_roots.project_id == "web"
    plain = tmp_path / "plain-folder"
    plain.mkdir()
    assert local_principal(Settings(user="u1"), roots=[plain], cwd=repo).project_id == "plain-folder"


def test_no_project_outside_a_repository(tmp_path: Path) -> None:
    p = local_principal(Settings(user="u1"), cwd=tmp_path)
    assert p.project_id is None and p.agent_id is None


def test_project_none_turns_projects_off(repo: Path) -> None:
    assert local_principal(Settings(user="u1", project="none"), cwd=repo).project_id is None


def test_bad_identifiers_are_refused() -> None:
    with pytest.raises(InvalidInput, match="user must be"):
        local_principal(Settings(user="bad\nname"))
    with pytest.raises(InvalidInput, match="project must be"):
        local_principal(Settings(user="ok", project="x" * 200))
