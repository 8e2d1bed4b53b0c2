"""What the store knows of entities, for people and agents to read: the most named ones, one
entity's profile (each keyed attribute's current value with its earlier values and their dates, the
entities it appears with), and for the console an entity's page (its memories newest first, what was
merged into it, the edits that touched it). And a person's corrections, each recorded and undoable:
merge one entity into another, split it off again, fix or remove a memory's key. The service's
`entities` part; the resources memory://entities and the console's entity pages serve it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from .errors import Conflict, InvalidInput, NotFound
from .graph.keys import Key, key_of
from .graph.name_forms import classified
from .graph.names import entity_name, writer_names
from .graph.validity import Held, at, held
from .lexicon import Lexicon
from .lexicon.english import ENGLISH
from .limits import MAX_KEY_WORDS_CHARS, MAX_REASON_CHARS
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
from .repository import MemoryRepository, about_edits, key_edits
from .repository import entity_edits as edits
from .repository import entity_pages as pages
from .repository.deadlocks import again_if_stopped
from .repository.graph_reads import entities_named, entity_rows, facts_of, neighbours_of
from .validation import text

MAX_TIMELINE = 500
MAX_EDITS_SHOWN = 50


def entity_uri(entity_id: UUID) -> str:
    return f"memory://entities/{entity_id}"


def _name(row: asyncpg.Record) -> str:
    return entity_name(row["kind"], row["name"])


def _brief(row: asyncpg.Record) -> EntityBrief:
    return EntityBrief(id=row["id"], uri=entity_uri(row["id"]), name=_name(row), kind=row["kind"],
                       memories=row["memories"], scope=ScopeInfo.of(row["agent_id"], row["project_id"]))


def attributes_of(facts: list[asyncpg.Record], snippet_chars: int, now: datetime) -> list[AttributeValues]:
    """Facts (newest valid first) grouped by attribute: a one-at-a-time attribute's values holding
    at `now` are current and each earlier one held until the next moment (graph/validity.py), and
    those dated later are upcoming; a many-valued one's values are all current but those a later
    memory said had ended."""
    grouped: dict[str, list[asyncpg.Record]] = {}
    for row in facts:
        grouped.setdefault(row["attribute"], []).append(row)
    found = []
    for attribute, rows in grouped.items():
        single = all(r["single"] for r in rows)
        standing = at(held(rows, single), now)
        found.append(AttributeValues(attribute=attribute, single=single,
                                     current=_shown(standing.holding, snippet_chars),
                                     earlier=_shown(standing.ended, snippet_chars),
                                     upcoming=_shown(standing.upcoming, snippet_chars)))
    return sorted(found, key=lambda a: a.attribute)


def _shown(values: list[Held], snippet_chars: int) -> list[FactValue]:
    return [FactValue(memory=v.row["id"], snippet=v.row["content"][:snippet_chars], valid_from=v.row["valid_from"],
                      valid_until=v.until) for v in values]


class EntityDetail(BaseModel):
    id: UUID
    name: str
    kind: Literal["user", "named"]
    canonical: str
    aliases: list[str]
    scope: ScopeInfo
    memories: int
    created_at: datetime
    merged_into: UUID | None = None
    merged_into_name: str | None = None


class TimelineEntry(BaseModel):
    """One live memory naming the entity."""

    memory: UUID
    title: str | None
    snippet: str
    kind: str
    occurred_at: datetime
    role: Literal["about", "mentioned"]
    key: str | None
    superseded_by: UUID | None
    pinned: bool
    scope: ScopeInfo


class MergedEntity(BaseModel):
    id: UUID
    name: str
    scope: ScopeInfo
    edit: UUID | None = None  # the live merge that took it in (None: made where this session cannot see)
    merged_at: datetime | None = None


class EntityEdit(BaseModel):
    """A person's correction of the graph, as recorded (entity_edits)."""

    id: UUID
    kind: Literal["merge", "split", "key", "about"]
    summary: str
    entity: UUID
    other: UUID | None = None
    memory: UUID | None = None
    entities: list[UUID]
    actor: str
    client: str | None = None
    reason: str | None = None
    created_at: datetime
    undone_at: datetime | None = None
    undone_by: str | None = None


class MemoryEntity(BaseModel):
    """An entity one memory names: its subject (about) or another name in it (mentioned)."""

    id: UUID
    name: str
    role: Literal["about", "mentioned"]
    key: str | None = None


class EntityPage(BaseModel):
    entity: EntityDetail
    attributes: list[AttributeValues]
    superseded: dict[UUID, UUID]  # a memory an attribute lists -> the memory marked as replacing it
    related: list[RelatedEntity]
    timeline: list[TimelineEntry]
    more: bool  # more memories name it than the timeline shows
    merged: list[MergedEntity]
    edits: list[EntityEdit]


def _summary(row: asyncpg.Record) -> str:
    r: dict[str, Any] = row["rows"]
    if row["kind"] == "merge":
        moved = len(r["mentions_moved"]) + len(r["mentions_dropped"])
        return (f"merged {r['source']['name']} into {r['target']['name']}: {moved} mention(s) and "
                f"{len(r['facts_moved']) + len(r['facts_dropped'])} keyed fact(s) moved"
                + (f"; known also as {', '.join(r['aliases_added'])}" if r["aliases_added"] else ""))
    if row["kind"] == "split":
        gone = f" ({r['rows_gone']} gone since: purged or read again)" if r["rows_gone"] else ""
        return f"split {r['source']['name']} off {r['target']['name']} again: {r['rows_back']} row(s) back{gone}"
    if row["kind"] == "about":
        facts = f", its keyed {r['facts'][0]['attribute']} with it" if r["facts"] else ""
        return f"memory {row['memory_id']}: about {', '.join(r['names'])} now{facts}"
    before = sorted({f["attribute"] for f in r["before"]})
    after = r["after"]
    return (f"memory {row['memory_id']}: key {', '.join(before)} → {after['attribute']}" if after else
            f"memory {row['memory_id']}: key {', '.join(before)} removed")


def _edit(row: asyncpg.Record) -> EntityEdit:
    return EntityEdit(id=row["id"], kind=row["kind"], summary=_summary(row), entity=row["entity_id"],
                      other=row["other_id"], memory=row["memory_id"], entities=list(row["entity_ids"]),
                      actor=row["actor"], client=row["client"], reason=row["reason"], created_at=row["created_at"],
                      undone_at=row["undone_at"], undone_by=row["undone_by"])


def _reason(reason: str | None) -> str | None:
    if reason is None or not reason.strip():
        return None
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"reason: at most {MAX_REASON_CHARS} characters, got {len(reason)}; nothing was changed")
    return text("reason", reason.strip())


def key_given(key: str, lexicon: Lexicon) -> Key:
    """A person's or an agent's key for a fix, in a few words ('job title'); a bad one names the
    argument and changes nothing."""
    if not key.strip() or len(key) > MAX_KEY_WORDS_CHARS:
        raise InvalidInput(f"key: the attribute in 1-{MAX_KEY_WORDS_CHARS} characters ('job title'); "
                           "nothing was changed")
    parsed = key_of(text("key", key), lexicon)
    if parsed is None:
        raise InvalidInput(f"key {key!r} names no attribute: say which, in a few words ('home city'); "
                           "nothing was changed")
    return parsed


class Entities:
    def __init__(self, repo: MemoryRepository, snippet_chars: int, lexicon: Lexicon = ENGLISH) -> None:
        self.repo = repo
        self.snippet_chars = snippet_chars
        self.lexicon = lexicon  # the words a fixed key is read in

    async def list(self, p: Principal, limit: int = 100) -> EntityList:
        require(p, "read")
        async with self.repo.reading(p) as conn:
            rows = await entity_rows(conn, p, limit=max(1, min(limit, 500)))
        return EntityList(entities=[_brief(r) for r in rows])

    async def profile(self, p: Principal, ref: str) -> EntityProfile:
        """One entity by id or by name ('Greta Ibarra', 'me' for the user)."""
        require(p, "read")
        try:
            by_id: UUID | None = UUID(ref)
        except ValueError:
            by_id = None
        async with self.repo.reading(p) as conn:
            if by_id is None:  # a name, resolved as a write resolves it ("Odalys": Odalys Pellegrini)
                names = classified(writer_names([ref], self.lexicon.user_names), self.lexicon)
                by_id = next(iter(await entities_named(conn, p, names, keyed=False)), None) if names else None
            rows = await entity_rows(conn, p, entity=by_id, limit=1) if by_id is not None else []
            if not rows:
                raise NotFound(f"no entity {ref!r} in this session's scope (memory://entities lists them)")
            facts = await facts_of(conn, p, [rows[0]["id"]], None)
            near = await neighbours_of(conn, p, rows[0]["id"])
        return EntityProfile(entity=_brief(rows[0]),
                             attributes=attributes_of(list(facts), self.snippet_chars, datetime.now(UTC)),
                             related=[RelatedEntity(id=r["id"], name=_name(r), shared=r["shared"]) for r in near])

    # --- the console's pages ----------------------------------------------------------------

    async def page(self, p: Principal, entity_id: UUID, limit: int = 100) -> EntityPage:
        """An entity's page: its profile, the memories naming it newest first (up to `limit`), what
        was merged into it and the edits that touched it. A merged entity shows what it went into."""
        require(p, "read")
        limit = max(1, min(limit, MAX_TIMELINE))
        async with self.repo.reading(p) as conn:
            row = await pages.entity(conn, p, entity_id)
            if row is None:
                raise NotFound(f"no entity {entity_id} in this session's scope")
            live = row["merged_into"] is None
            facts = list(await facts_of(conn, p, [entity_id], None)) if live else []
            near = await neighbours_of(conn, p, entity_id) if live else []
            named = await pages.timeline(conn, p, entity_id, limit + 1)
            merged = await pages.merged_in(conn, p, entity_id)
            done = await pages.edits_of(conn, p, entity_id, MAX_EDITS_SHOWN)
        detail = EntityDetail(id=row["id"], name=_name(row), kind=row["kind"], canonical=row["canonical"],
                              aliases=list(row["aliases"]), scope=ScopeInfo.of(row["agent_id"], row["project_id"]),
                              memories=row["memories"], created_at=row["created_at"], merged_into=row["merged_into"],
                              merged_into_name=None if row["into_kind"] is None else
                              entity_name(row["into_kind"], row["into_name"]))
        timeline = [TimelineEntry(memory=r["id"], title=r["title"], snippet=r["content"][:self.snippet_chars],
                                  kind=r["kind"], occurred_at=r["occurred_at"], role=r["role"], key=r["attribute"],
                                  superseded_by=r["superseded_by"], pinned=r["pinned"],
                                  scope=ScopeInfo.of(r["agent_id"], r["project_id"])) for r in named[:limit]]
        return EntityPage(
            entity=detail, attributes=attributes_of(facts, self.snippet_chars, datetime.now(UTC)),
            superseded={r["id"]: r["superseded_by"] for r in facts if r["superseded_by"] is not None},
            related=[RelatedEntity(id=r["id"], name=_name(r), shared=r["shared"]) for r in near],
            timeline=timeline, more=len(named) > limit,
            merged=[MergedEntity(id=r["id"], name=_name(r), scope=ScopeInfo.of(r["agent_id"], r["project_id"]),
                                 edit=r["edit"], merged_at=r["merged_at"]) for r in merged],
            edits=[_edit(r) for r in done])

    async def of_memory(self, p: Principal, memory_id: UUID) -> list[MemoryEntity]:
        """The entities one memory names, its subject(s) first (none for a memory out of scope)."""
        require(p, "read")
        async with self.repo.reading(p) as conn:
            rows = await pages.named_by(conn, p, memory_id)
        return [MemoryEntity(id=r["id"], name=_name(r), role=r["role"], key=r["attribute"]) for r in rows]

    async def merge_candidates(self, p: Principal, entity_id: UUID) -> tuple[list[EntityBrief], list[EntityBrief]]:
        """The live entities that may be merged into this one (their namespace is within its), and
        those it may be merged into (theirs contains its), most named first."""
        require(p, "read")
        listed = (await self.list(p, 500)).entities
        this = next((e for e in listed if e.id == entity_id), None)
        if this is None:
            return [], []

        def ns(e: EntityBrief) -> dict[str, str | None]:
            return {"agent_id": e.scope.agent_id, "project_id": e.scope.project_id}

        def takes(into: EntityBrief, source: EntityBrief) -> bool:  # the user's entity goes into no other
            return edits.contains(ns(into), ns(source)) and not (source.kind == "user" and into.kind != "user")

        others = [e for e in listed if e.id != entity_id]
        return [e for e in others if takes(this, e)], [e for e in others if takes(e, this)]

    # --- edits ------------------------------------------------------------------------------

    async def merge(self, p: Principal, into: UUID, source: UUID, *, reason: str | None = None) -> EntityEdit:
        """`source` merged into `into` (recorded; `split` or `undo` brings it back)."""
        require(p, "write")
        why = _reason(reason)
        async with self.repo.transaction(p) as conn:
            return _edit(await edits.merge(conn, p, into, source, why))

    async def split(self, p: Principal, merged: UUID, *, reason: str | None = None) -> EntityEdit:
        """The entity `merged` split off what it was merged into: its merge undone exactly."""
        require(p, "write")
        why = _reason(reason)
        async with self.repo.transaction(p) as conn:
            row = await pages.entity(conn, p, merged)
            if row is None:
                raise NotFound(f"no entity {merged} in this session's scope; nothing was changed")
            found = [r for r in await pages.merged_in(conn, p, row["merged_into"]) if r["id"] == merged] \
                if row["merged_into"] is not None else []
            if not found:
                raise Conflict(f"{_name(row)!r} is not merged into another entity; nothing was changed")
            if found[0]["edit"] is None:
                raise NotFound(f"the merge of {_name(row)!r} was made where this session cannot see it; split it "
                               "from there; nothing was changed")
            return await self._undo(conn, p, found[0]["edit"], why)

    async def fix_key(self, p: Principal, memory_id: UUID, key: str | None, *,
                      reason: str | None = None) -> EntityEdit:
        """The attribute `memory_id`'s keyed fact is filed under, as `key` says in a few words ('job
        title'); None removes it. Which value is current follows from the facts, and which memory
        replaces which follows the values in order of valid time (repository/fact_order.py): the
        employer before "Head of Design", filed under title now, is no longer replaced by it."""
        require(p, "write")
        why = _reason(reason)
        parsed = key_given(key, self.lexicon) if key is not None else None

        async def fix(conn: asyncpg.Connection) -> EntityEdit:
            return _edit(await key_edits.fix_key(conn, p, memory_id, parsed, why))

        return await self._again_if_stopped(p, fix)

    async def undo(self, p: Principal, edit_id: UUID, *, reason: str | None = None) -> EntityEdit:
        """An edit undone: a merge is split again, a key fix put back, a split merged again. Only
        while no later edit touches the same entities (undo that first). Returns the edit that
        records it (the split, the new merge, or the key fix now marked undone)."""
        require(p, "write")
        why = _reason(reason)
        return await self._again_if_stopped(p, lambda conn: self._undo(conn, p, edit_id, why))

    async def _again_if_stopped(self, p: Principal,
                                work: Callable[[asyncpg.Connection], Awaitable[EntityEdit]]) -> EntityEdit:
        """`work` in a transaction of its own, again where PostgreSQL stopped it to break a deadlock
        (repository/deadlocks.py): a key fix and its undo lock the attribute's values after the
        memory's facts, a write of the same subject the other way round (repository/fact_order.py)."""
        async def once() -> EntityEdit:
            async with self.repo.transaction(p) as conn:
                return await work(conn)

        return await again_if_stopped(once)

    async def _undo(self, conn: asyncpg.Connection, p: Principal, edit_id: UUID, why: str | None) -> EntityEdit:
        edit = await edits.edit_row(conn, p, edit_id, lock=True)
        if edit["undone_at"] is not None:
            raise Conflict(f"this edit was already undone ({edit['undone_at']:%Y-%m-%d %H:%M UTC} by "
                           f"{edit['undone_by']}); nothing was changed")
        if edit["kind"] == "split":  # merged again, as a new merge of the same two
            again = await edits.merge(conn, p, edit["entity_id"], edit["other_id"], why)
            await edits.mark_undone(conn, p, edit["id"])
            return _edit(again)
        await edits.lock_entities(conn, p, edit["entity_ids"])  # no merge of them slips in meanwhile
        await edits.later(conn, p, edit)
        if edit["kind"] == "merge":
            return _edit(await edits.split(conn, p, edit, why))
        undo = about_edits.undo_about if edit["kind"] == "about" else key_edits.undo_key
        await undo(conn, p, edit)
        return _edit(await edits.edit_row(conn, p, edit_id))
