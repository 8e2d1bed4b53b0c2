"""The graph room: who a memory is about (entities and mentions), which attribute it states (keyed
facts with validity) and how memories link (edges). Rules here are pure (names.py, keys.py) and
read a language as data (mcp_memory/lexicon); what they find is stored by the repository in the
memory's own transaction (repository/graph.py) and read back by retrieval and decisions. Imports
neither of them: they import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from uuid import UUID

from .keys import Key
from .name_forms import Name

Source = Literal["writer", "rules", "model"]


@dataclass(frozen=True)
class Said:
    """What a new memory says of the graph: the things it names (its subject first) and the
    attribute it states of its subject, and who said so."""

    names: list[Name] = field(default_factory=list)
    key: Key | None = None
    source: Source = "rules"
    # Whether a newer value of a one-at-a-time key replaces the older (a writer's key does; a key read
    # off the text by rules only when the graph_rules_keys setting says so).
    replaces: bool = True
    key_source: Source | None = None  # who said the key, when not who said the names
    # Values of a many-valued key the text says have ended ("no longer allergic to peanuts"): the
    # memories stating them, replaced by this one (structure.py `ended`).
    ends: tuple[UUID, ...] = ()
    # The key says what its subject is called ("name", the lexicon's `name_keys`): the one other
    # name the memory gives is theirs ("My wife's name is Sara.", about "my wife").
    names_subject: bool = False

    @property
    def key_said_by(self) -> Source:
        return self.key_source or self.source

    @property
    def about(self) -> list[Name]:
        return [n for n in self.names if n.role == "about"]

    @property
    def told_about(self) -> bool:
        """Whether a writer or a model said whom the memory is about: the mentions stored as theirs,
        not the rules' (repository/graph.py `record`; graph/subjects.py `Subjects.said`)."""
        return self.source != "rules" and any(n.given for n in self.about)


__all__ = ["Key", "Name", "Said", "Source"]
