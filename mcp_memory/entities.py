"""What the store knows of entities, for people and agents to read: the most named ones, and one
entity's profile (each keyed attribute's current value with its earlier values and their dates, the
entities it appears with). The service's `entities` part; the resources memory://entities serve it."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from .errors import NotFound
from .graph.names import canonical
from .models import (
    AttributeValues,
    EntityBrief,
    EntityList,
    EntityProfile,
    FactValue,
    Principal,
    RelatedEntity,
    ScopeInfo,
)
from .permissions import require
from .repository import MemoryRepository
from .repository.graph import entity_rows, facts_of, neighbours_of


def entity_uri(entity_id: UUID) -> str:
    return f"memory://entities/{entity_id}"


def _brief(row: asyncpg.Record) -> EntityBrief:
    return EntityBrief(id=row["id"], uri=entity_uri(row["id"]),
                       name="the user" if row["kind"] == "user" else row["name"], kind=row["kind"],
                       memories=row["memories"], scope=ScopeInfo.of(row["agent_id"], row["project_id"]))


def attributes_of(facts: list[asyncpg.Record], snippet_chars: int) -> list[AttributeValues]:
    """Facts (newest valid first) grouped by attribute: a one-at-a-time attribute's newest value is
    current and each earlier one held until the next; a many-valued one's values are all current."""
    grouped: dict[str, list[asyncpg.Record]] = {}
    for row in facts:
        grouped.setdefault(row["attribute"], []).append(row)
    found = []
    for attribute, rows in grouped.items():
        single = all(r["single"] for r in rows)
        values = [FactValue(memory=r["id"], snippet=r["content"][:snippet_chars], valid_from=r["valid_from"],
                            valid_until=newer["valid_from"] if single and newer is not None else None)
                  for newer, r in zip([None, *rows], rows, strict=False)]
        found.append(AttributeValues(attribute=attribute, single=single, current=values[:1] if single else values,
                                     earlier=values[1:] if single else []))
    return sorted(found, key=lambda a: a.attribute)


class Entities:
    def __init__(self, repo: MemoryRepository, snippet_chars: int) -> None:
        self.repo = repo
        self.snippet_chars = snippet_chars

    async def list(self, p: Principal, limit: int = 100) -> EntityList:
        require(p, "read")
        async with self.repo.reading(p) as conn:
            rows = await entity_rows(conn, p, limit=max(1, min(limit, 500)))
        return EntityList(entities=[_brief(r) for r in rows])

    async def profile(self, p: Principal, ref: str) -> EntityProfile:
        """One entity by id or by name ('Greta Ibarra', 'me' for the user)."""
        require(p, "read")
        try:
            by_id, name = UUID(ref), None
        except ValueError:
            by_id, name = None, canonical(ref)
            name = "(user)" if name in ("me", "the user", "user") else name
        async with self.repo.reading(p) as conn:
            rows = await entity_rows(conn, p, entity=by_id, name=name, limit=1)
            if not rows:
                raise NotFound(f"no entity {ref!r} in this session's scope (memory://entities lists them)")
            facts = await facts_of(conn, p, [rows[0]["id"]], None)
            near = await neighbours_of(conn, p, rows[0]["id"])
        return EntityProfile(entity=_brief(rows[0]), attributes=attributes_of(list(facts), self.snippet_chars),
                             related=[RelatedEntity(id=r["id"], name="the user" if r["kind"] == "user" else r["name"],
                                                    shared=r["shared"]) for r in near])
