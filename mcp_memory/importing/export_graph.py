"""The graph an export carries (format version 2), checked as it is read: the user's entities, each
memory's mentions, keyed facts and edges, and the edits a person made. A file edited by hand is
refused naming the line when a row is malformed or points at an entity the file does not hold."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from ..errors import InvalidInput
from ..validation import text


def _storable(value: str) -> str:
    try:
        return text("it", value)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


Source = Literal["writer", "rules", "model"]
# What PostgreSQL can store (validation.text: no NUL, valid Unicode), as a write's names and keys.
Storable = Annotated[str, AfterValidator(_storable)]
Text = Annotated[Storable, Field(min_length=1, max_length=1000)]


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class Entity(_Row):
    id: UUID
    agent_id: str | None = None
    project_id: str | None = None
    kind: Literal["user", "named"]
    name: Text
    canonical: Text
    aliases: list[Text] = []
    merged_into: UUID | None = None
    created_at: datetime
    updated_at: datetime


# A memory's graph rows are kept for every memory of the file until it is written: slots, not a
# model's dict each (a million memories hold ~5 million mentions).
@dataclass(frozen=True, slots=True)
class Mention:
    entity: UUID
    role: Literal["about", "mentioned"]
    source: Source
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Fact:
    entity: UUID
    attribute: Text
    key_words: Storable
    single: bool
    source: Source
    created_at: datetime
    ended: bool = False


@dataclass(frozen=True, slots=True)
class Edge:
    to: UUID
    kind: Literal["derived_from", "contradicts", "extends", "supports", "similar"]
    source: Source
    created_at: datetime
    agent_id: str | None = None
    project_id: str | None = None


@dataclass(frozen=True, slots=True)
class Graph:
    mentions: tuple[Mention, ...] = ()
    facts: tuple[Fact, ...] = ()
    edges: tuple[Edge, ...] = ()


class Edit(_Row):
    id: UUID
    agent_id: str | None = None
    project_id: str | None = None
    kind: Literal["merge", "split", "key", "about"]
    entity_id: UUID
    other_id: UUID | None = None
    memory_id: UUID | None = None
    entity_ids: list[UUID]
    rows: dict[str, Any] | list[Any]
    reason: str | None = None
    actor: str
    client: str | None = None
    created_at: datetime
    undone_at: datetime | None = None
    undone_by: str | None = None


_GRAPH = TypeAdapter(Graph | None)


class Reader:
    """Reads a file's graph lines in order: entities come before the memories naming them."""

    def __init__(self) -> None:
        self.entities: list[dict[str, Any]] = []
        self.edits: list[dict[str, Any]] = []
        self._known: dict[UUID, tuple[str | None, str | None]] = {}  # entity -> its namespace

    def entity(self, given: Any, number: int) -> None:
        e = _checked(Entity, given, number, "entity")
        if e.merged_into is not None and e.merged_into not in self._known:
            raise InvalidInput(f"line {number}: entity {e.id} is merged into {e.merged_into}, which no line "
                               "before it holds")
        self._known[e.id] = (e.agent_id, e.project_id)
        self.entities.append(e.model_dump())

    def graph(self, given: Any, memory: dict[str, Any], number: int) -> Graph | None:
        """A memory's graph (None: not read in the store it came from, so read here); every entity
        it names must be of a namespace that holds the memory's (`memory`: its agent and project)."""
        try:
            graph = _GRAPH.validate_python(given)
        except ValidationError as exc:
            raise InvalidInput(f"line {number}: graph: {_first(exc)}") from None
        if graph is None:
            return None
        named = {m.entity for m in graph.mentions}
        for entity in named | {f.entity for f in graph.facts}:
            if entity not in self._known:
                raise InvalidInput(f"line {number}: graph names entity {entity}, which no line before it holds")
            agent, project = self._known[entity]
            if (agent is not None and agent != memory["agent_id"]
                    or project is not None and project != memory["project_id"]):
                raise InvalidInput(f"line {number}: graph names entity {entity} of another agent or project than the "
                                   "memory's")
        if any(f.entity not in named for f in graph.facts):
            raise InvalidInput(f"line {number}: graph: a fact's entity must be one of the memory's mentions")
        return graph

    def edit(self, given: Any, number: int) -> None:
        e = _checked(Edit, given, number, "edit")
        if any(i not in self._known for i in (e.entity_id, e.other_id, *e.entity_ids) if i is not None):
            raise InvalidInput(f"line {number}: edit {e.id} touches an entity no line before it holds")
        self.edits.append(e.model_dump())


def _checked(model: type[_Row], given: Any, number: int, what: str) -> Any:
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        raise InvalidInput(f"line {number}: {what}: {_first(exc)}") from None


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
