"""The settings in sections (mcp_memory/config/): every setting in exactly one section, the parts
that read one section handed only it, and a part's code reading nothing of another section (a
static check, like tests/test_layers.py, so it cannot go stale)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel

from mcp_memory.composition import compose
from mcp_memory.config import (
    SECTION_MODELS,
    SECTIONS,
    DecisionSettings,
    EmbeddingSettings,
    IdentitySettings,
    OperationsSettings,
    RankingSettings,
    RerankSettings,
    ServerSettings,
    Settings,
    StorageSettings,
)
from mcp_memory.db import Database

from .chat_api import ChatAPI
from .test_decisions import decisions_settings

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_memory"

# The parts that read one section, and that section: what their code may read of the settings.
PARTS: dict[str, type[BaseModel]] = {
    "vectors.py": EmbeddingSettings,
    "retrieval/rerank.py": RerankSettings,
    "retrieval/statement.py": RankingSettings,
    "retention.py": OperationsSettings,
    "auth.py": IdentitySettings,
    "db/__init__.py": StorageSettings,
    "validation.py": ServerSettings,
    "overview.py": ServerSettings,
    **{f"decisions/{name}.py": DecisionSettings
       for name in ("__init__", "doctor", "guard", "jobs", "pace", "runtime", "second_look")},
}


def test_every_setting_is_in_exactly_one_section() -> None:
    names = [name for model in SECTION_MODELS.values() for name in model.model_fields]
    assert len(names) == len(set(names)) and set(names) == set(Settings.model_fields)
    assert all(intro for intro, _ in SECTIONS.values())   # each section says what it is for
    assert all(issubclass(Settings, model) for model in SECTION_MODELS.values())


def test_a_part_is_handed_its_section_and_nothing_else() -> None:
    settings = Settings(rrf_k=7, embedding_timeout_s=3.5)
    part = settings.part(EmbeddingSettings)
    assert type(part) is EmbeddingSettings and part.embedding_timeout_s == 3.5
    with pytest.raises(AttributeError):
        part.rrf_k  # type: ignore[attr-defined]  # noqa: B018
    assert settings.part(RankingSettings).rrf_k == 7


def reads_of_other_sections(source: str, section: type[BaseModel]) -> list[str]:
    """The settings a module's code reads (`settings.x`, `self.settings.x`, `s.x`) that its section
    does not hold, and every parameter typed as the whole Settings."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in Settings.model_fields \
                and node.attr not in section.model_fields:
            target = node.value
            named = isinstance(target, ast.Name) and target.id in ("settings", "s")
            held = isinstance(target, ast.Attribute) and target.attr == "settings"
            if named or held:
                found.append(f"line {node.lineno}: {node.attr}")
        if isinstance(node, ast.arg) and isinstance(node.annotation, ast.Name) and node.annotation.id == "Settings" \
                and node.arg == "settings":
            found.append(f"line {node.lineno}: a parameter typed Settings, not {section.__name__}")
    return found


def test_the_checker_sees_a_read_of_another_section() -> None:
    source = ("def f(settings: EmbeddingSettings) -> None:\n    return settings.embedding_timeout_s\n"
              "class P:\n    def g(self, settings: Settings) -> int:\n        return self.settings.rrf_k\n")
    assert reads_of_other_sections(source, EmbeddingSettings) == [
        "line 4: a parameter typed Settings, not EmbeddingSettings", "line 5: rrf_k"]


@pytest.mark.parametrize("module", sorted(PARTS))
def test_a_part_reads_only_its_own_section(module: str) -> None:
    assert reads_of_other_sections((PACKAGE / module).read_text(), PARTS[module]) == []


async def test_the_composition_root_hands_each_part_its_section(database: Database, settings: Settings,
                                                              chat: ChatAPI) -> None:
    house = await compose(database, decisions_settings(settings, chat.url), workers=True)
    assert house.worker is not None
    assert type(house.worker.settings) is DecisionSettings
    assert type(house.service.vectors.settings) is EmbeddingSettings
