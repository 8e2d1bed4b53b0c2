"""Every knob of the server, read once from the environment (prefix ``MCP_MEMORY_``).

The settings come in sections, each a model of its own with its fields and their checks (this
package's modules). `Settings` is all of them, as the environment gives them: the one object a
process reads at start-up, under the variables' flat names (`MCP_MEMORY_RRF_K`, never a nested
one). A part is handed only its own section, `settings.part(RankingSettings)`: what it reads of
another section is an AttributeError in the tests, not a silent coupling."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel
from pydantic_settings import BaseSettings, SettingsConfigDict

from .capture import CaptureSettings
from .console import ConsoleSettings
from .decisions import LEASE_MARGIN_S, MIN_TOKENS_PER_DAY, DecisionSettings
from .embeddings import EmbeddingSettings
from .identity import IdentitySettings
from .operations import OperationsSettings
from .ranking import RankingSettings
from .reranking import RerankSettings
from .server import ServerSettings
from .storage import StorageSettings, default_data_dir

__all__ = ["ADVANCED_SECTIONS", "ENV_PREFIX", "LEASE_MARGIN_S", "MIN_TOKENS_PER_DAY", "SECTIONS", "CaptureSettings",
           "ConsoleSettings", "DecisionSettings", "EmbeddingSettings", "IdentitySettings", "OperationsSettings",
           "RankingSettings", "RerankSettings", "ServerSettings", "Settings", "StorageSettings", "default_data_dir"]

ENV_PREFIX = "MCP_MEMORY_"

# The sections in the order the configuration reference lists them (docs/configuration.md), each
# introduced there by its model's docstring.
SECTION_MODELS: dict[str, type[BaseModel]] = {
    "server": ServerSettings, "identity": IdentitySettings, "storage": StorageSettings,
    "embeddings": EmbeddingSettings, "reranking": RerankSettings, "decisions": DecisionSettings,
    "capture": CaptureSettings, "console": ConsoleSettings, "operations": OperationsSettings,
    "ranking": RankingSettings,
}
ADVANCED_SECTIONS = frozenset({"ranking"})

Part = TypeVar("Part", bound=BaseModel)


class Settings(ServerSettings, IdentitySettings, StorageSettings, EmbeddingSettings, RerankSettings,
               DecisionSettings, CaptureSettings, ConsoleSettings, OperationsSettings, RankingSettings,
               BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    def part(self, section: type[Part]) -> Part:
        """This process's values of one section, as that section's own model: what a part that
        reads only it is handed. Built from values already checked, so not checked again (a model
        file's digests are not computed twice)."""
        return section.model_construct(**{name: getattr(self, name) for name in section.model_fields})


def _intro(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


# Each section's introduction and its settings, for the configuration reference.
SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (_intro(model), tuple(model.model_fields)) for name, model in SECTION_MODELS.items()}
