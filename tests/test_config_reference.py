"""docs/configuration.md is generated from Settings: it must be what the generator writes now,
name every setting once with a description, and give env names the server really reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_memory import config_reference
from mcp_memory.config import ADVANCED_SECTIONS, SECTIONS, Settings

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_the_page_is_what_the_code_generates() -> None:
    assert PAGE.read_text() == config_reference.render(), (
        "docs/configuration.md and mcp_memory/config/ disagree: run python -m mcp_memory.config_reference")


def test_every_setting_is_in_one_section_with_a_description() -> None:
    assert config_reference.unplaced() == []
    assert [name for name, f in Settings.model_fields.items() if not (f.description or "").strip()] == []


def test_advanced_sections_come_last() -> None:
    headings = [line[3:] for line in config_reference.render().splitlines() if line.startswith("## ")]
    assert sorted(headings) == sorted(SECTIONS)
    assert set(headings[-len(ADVANCED_SECTIONS):]) == ADVANCED_SECTIONS


def test_check_fails_on_a_stale_page_and_passes_on_a_fresh_one(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(config_reference.render().replace("MCP_MEMORY_RECALL_LIMIT", "MCP_MEMORY_RECALL_MAX"))
    assert config_reference.main(["--check", str(page)]) == 1
    assert config_reference.main([str(page)]) == 0
    assert config_reference.main(["--check", str(page)]) == 0


@pytest.mark.parametrize("name", ["recall_limit", "decisions_provider", "capture_exclude_projects", "no_auth"])
def test_the_documented_env_name_sets_the_setting(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    values = {"recall_limit": ("7", 7), "decisions_provider": ("sampling", "sampling"),
              "capture_exclude_projects": ('["a", "b"]', ["a", "b"]), "no_auth": ("true", True)}
    text, expected = values[name]
    monkeypatch.setenv(config_reference.env_name(name), text)
    assert getattr(Settings(), name) == expected
