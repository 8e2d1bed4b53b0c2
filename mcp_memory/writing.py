"""Writing: memory_write and memory_write_many, their scope and what `related` shows of a write.
The rules of MemoryService that concern them (a part of that class, split off for size, as
searching.py and forgetting.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID, uuid4

from .errors import InvalidInput, PermissionDenied
from .graph import Said, Source
from .models import (
    Kind,
    NewMemory,
    Principal,
    RelatedMemory,
    ScopeLevel,
    WriteItem,
    WriteManyResult,
    WriteResult,
    WrittenItem,
)
from .related_versions import Near
from .repository.edges import Edge
from .retrieval.focus import forms_of
from .turn_vectors import embed_again, turns_after, turns_before
from .validation import content_hash, moment, request_fingerprint, text

if TYPE_CHECKING:
    from .config import Settings
    from .related_versions import RelatedVersions
    from .repository import MemoryRepository
    from .structure import Structure
    from .validation import Validator
    from .vectors import Vectors


class Decider(Protocol):
    """What a write tells once it committed (decisions/jobs.py's DecisionWorker): the new memory's
    id (decide it now in sync mode, or wake the workers), or None for a batch (wake them)."""

    async def settle(self, p: Principal, memory_id: UUID | None) -> None: ...


class Writing:
    """Mixed into MemoryService, whose attributes and helpers these methods use."""

    repo: MemoryRepository
    settings: Settings
    vectors: Vectors | None
    check: Validator
    structure: Structure
    versions: RelatedVersions
    decider: Decider | None

    if TYPE_CHECKING:  # defined by MemoryService
        @staticmethod
        def require(p: Principal, permission: str) -> None: ...
        async def _limit(self, p: Principal, action: str) -> None: ...
        def _changed(self, n: int) -> None: ...

    @staticmethod
    def write_scope(p: Principal, scope: ScopeLevel | None) -> tuple[str | None, str | None]:
        """(agent_id, project_id) for a new memory: always inside the session's own namespace,
        and for a credential limited to some agents / projects, inside those."""
        if p.agent_confined and not p.agent_id or p.project_confined and not p.project_id:
            raise PermissionDenied("this credential grants no agent or project to write as, so it may only read")
        if scope is None:
            scope = "project" if p.project_id else "user"
            if p.agent_confined:
                scope = "agent_project" if p.project_id else "agent"
        if scope in ("project", "agent_project") and not p.project_id:
            raise InvalidInput(f"scope '{scope}' needs a project, and this session has none "
                               "(set --project or MCP_MEMORY_PROJECT, or open a git repository)")
        if scope in ("agent", "agent_project") and not p.agent_id:
            raise InvalidInput(f"scope '{scope}' needs an agent, and this session has none "
                               "(set --agent or MCP_MEMORY_AGENT)")
        agent_id, project_id = {
            "user": (None, None),
            "project": (None, p.project_id),
            "agent": (p.agent_id, None),
            "agent_project": (p.agent_id, p.project_id),
        }[scope]
        if p.agent_confined and agent_id is None or p.project_confined and project_id is None:
            raise PermissionDenied(f"this credential is limited to its own agents and projects, so it cannot "
                                   f"write at scope '{scope}', which they share with others")
        return agent_id, project_id

    def _new(self, p: Principal, content: str, *, title: str | None = None, kind: Kind = "note",
             tags: list[str] | None = None, metadata: dict[str, Any] | None = None, importance: float = 0.5,
             confidence: float = 1.0, pinned: bool = False, priority: int = 0, scope: ScopeLevel | None = None,
             occurred_at: datetime | None = None, source: str | None = None) -> NewMemory:
        """A memory checked and normalized, every field, before anything is embedded or stored."""
        content = self.check.content(content)
        agent_id, project_id = self.write_scope(p, scope)
        metadata = self.check.metadata(metadata)
        return NewMemory(
            agent_id=agent_id, project_id=project_id, kind=kind, title=self.check.title(title), content=content,
            content_hash=content_hash(content, kind, metadata), tags=self.check.tags(tags), metadata=metadata,
            importance=importance, confidence=confidence, pinned=pinned, priority=priority,
            source=text("source", source) if source else p.client, occurred_at=moment("occurred_at", occurred_at))

    def _dated(self, new: NewMemory, said: Said) -> NewMemory:
        """`new` dated when its text says its keyed value became true (structure.py `began`), where
        the writer gave no `occurred_at`."""
        if new.occurred_at is not None or (began := self.structure.began(new.content, new.kind, said)) is None:
            return new
        return new.model_copy(update={"occurred_at": began})

    def _embedded(self, new: NewMemory, vector: list[float] | None) -> NewMemory:
        if vector is None or self.vectors is None:
            return new
        return new.model_copy(update={"embedding": vector, "embedding_model": self.vectors.model})

    async def write(self, p: Principal, content: str, *, title: str | None = None, kind: Kind = "note",
                    tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                    importance: float = 0.5, confidence: float = 1.0, pinned: bool = False, priority: int = 0,
                    scope: ScopeLevel | None = None, occurred_at: datetime | None = None,
                    source: str | None = None, idempotency_key: str | None = None,
                    supersedes: list[UUID] | None = None, about: list[str] | None = None,
                    key: str | None = None, request_id: str | None = None) -> WriteResult:
        self.require(p, "write")
        new = self._new(p, content, title=title, kind=kind, tags=tags, metadata=metadata, importance=importance,
                        confidence=confidence, pinned=pinned, priority=priority, scope=scope,
                        occurred_at=occurred_at, source=source)
        said = self.structure.said(new.content, new.kind, about, key)
        new = self._dated(new, said)
        said = await self.structure.ended(p, new.content, await self.structure.adopted(p, new.content, said))
        if idempotency_key is not None:
            text("idempotency_key", idempotency_key)
        await self._limit(p, "write")
        # What `related` and a question about its subject will compare the new memory by is embedded
        # with it, in one batch; an episode's with the turn before it.
        before = (await turns_before(self.repo, self.vectors, p, [new]))[0]
        vector = (await self.vectors.document(new.content, self._companions(new, said), before)
                  if self.vectors else None)
        new = self._embedded(new, vector)
        skip = set(supersedes or ())
        # What the new memory touches, for the agent to decide on (supersedes), does not depend on
        # it being stored: it is looked up on another connection while the insert runs (a write
        # 3-4 ms sooner at 1,000 memories). The insert may commit first, so the lookup leaves out
        # the new memory by the id it is about to get: found, it would be the nearest of all and
        # take the place of what the new one is compared with.
        new_id = uuid4()
        # Whom a writer or a model said it is about is read off the graph once the insert has stored
        # it (`by_graph`), among the widest nearest.
        told = said.told_about
        neighbours = (asyncio.ensure_future(self.versions.neighbours(p, vector, new.content, len(skip),
                                                                     exclude=new_id, kind=new.kind, wide=told))
                      if vector is not None and self.versions.applies(vector) else None)
        try:
            memory, created = await self.repo.insert(
                p, new, new_id, idempotency_key=idempotency_key,
                request_hash=(request_fingerprint(new, supersedes, about, key)
                              if idempotency_key is not None else None),
                supersedes=supersedes or (), request_id=request_id, said=said)
        except BaseException:
            if neighbours is not None:
                neighbours.cancel()
                await asyncio.gather(neighbours, return_exceptions=True)
            raise
        self._changed(int(created) + len(supersedes or ()) + len(memory.replaced or ()))
        if created and memory.kind == "episode":
            await self._turns_after_new(p, [memory.id])
        near = await neighbours if neighbours is not None else Near([], 0)
        if created:
            near = await self.versions.by_graph(p, memory.id, new.content, near, told)
        # A duplicate is the old memory itself, and what it touched was said when it was written.
        related = await self.versions.listed(new.content, near, skip) if created else []
        if memory.replaced:
            related = await self.structure.same_key_first(p, memory, vector, related)
        if created and self.decider is not None:
            await self.decider.settle(p, memory.id)
        return WriteResult(status="created" if created else "duplicate", memory=memory, related=related)

    def _companions(self, new: NewMemory, said: Said) -> list[str]:
        """The texts a write embeds beside its memory: what `related` compares it by, and what a
        question about its subjects will (retrieval/focus.py `forms_of`), each once."""
        companions = self.versions.companions(new.content, new.kind)
        return companions + [form for form in forms_of(new.content, new.kind, said.about, self.structure.lexicon)
                             if form not in companions]

    async def _turns_after_new(self, p: Principal, ids: list[UUID]) -> None:
        """A turn written before one already stored (dated earlier, or a batch out of order) is now
        the turn before that one, whose vector must hold it."""
        new = set(ids)
        after = [i for i in await turns_after(self.repo, self.vectors, p, ids) if i not in new]
        if after:
            await embed_again(self.repo, self.vectors, p, after, followers=False)

    def _given(self, embeddings: Sequence[list[float] | None] | None, count: int) -> list[list[float] | None]:
        """write_many's `embeddings`, checked: one per item, each of the model's dimension."""
        if embeddings is None:
            return [None] * count
        if len(embeddings) != count:
            raise InvalidInput(f"embeddings has {len(embeddings)} vectors for {count} items; nothing was written")
        model, dimension = (self.vectors.model, self.vectors.dimension) if self.vectors else (None, 0)
        for i, vector in enumerate(embeddings):
            if vector is not None and dimension and len(vector) != dimension:
                raise InvalidInput(f"embeddings[{i}] has {len(vector)} dimensions, {model}'s {dimension}; "
                                   "nothing was written")
        return list(embeddings)

    async def write_many(self, p: Principal, items: list[WriteItem], *, source: str | None = None,
                         request_id: str | None = None, edges: Sequence[Sequence[Edge]] = (),
                         said_by: Source = "writer",
                         embeddings: Sequence[list[float] | None] | None = None,
                         compared_forms: bool = True) -> WriteManyResult:
        """Many memories in one call: every item checked first (a bad one names its index and
        nothing is written), embedded in batches, inserted in one transaction, each deduplicated
        in its scope and audited. Fails open like `write`: without vectors if the embedder is down.
        `edges`: per item, its links to other memories, stored in the same transaction (extraction:
        derived_from its turns); `said_by`: who gave the items' about and key (extraction: model);
        `embeddings`: per item, its vector already made by the configured model (an import's,
        taken from a peer's file once checked: importing/peer_vectors.py), None to embed it;
        `compared_forms`: embed with them what a question about their subjects will compare them by
        (retrieval/focus.py `forms_of`), as `write` does; an import of many notes leaves it to the
        questions that come (up to FORMS_WRITTEN texts more a note would slow a large import as much)."""
        self.require(p, "write")
        if not items:
            raise InvalidInput("items is empty: pass at least one memory")
        if len(items) > self.settings.max_batch:
            raise InvalidInput(f"items has {len(items)} memories; at most {self.settings.max_batch} per call")
        given = self._given(embeddings, len(items))
        news, said = [], []
        for i, item in enumerate(items):
            try:
                news.append(self._new(p, **item.model_dump(exclude={"about", "key"}), source=source))
                one = self.structure.said(news[-1].content, news[-1].kind, item.about, item.key)
                news[-1] = self._dated(news[-1], one)
                said.append(replace(one, source=said_by) if one.source == "writer" else one)
            except (InvalidInput, PermissionDenied) as exc:
                raise type(exc)(f"items[{i}]: {exc}; nothing was written") from None
        said = await self.structure.apart(p, [(n.content, one) for n, one in zip(news, said, strict=True)])
        await self._limit(p, "write")
        if self.vectors is not None and self.vectors.embedder is not None:
            lexicon = self.structure.lexicon
            forms = list(dict.fromkeys(form for n, one in zip(news, said, strict=True)
                                       for form in forms_of(n.content, n.kind, one.about, lexicon))
                         ) if compared_forms else []
            vectors = await self.vectors.documents_given([n.content for n in news], given,
                                                         await turns_before(self.repo, self.vectors, p, news), forms)
            news = [self._embedded(n, v) for n, v in zip(news, vectors, strict=True)]
        written = await self.repo.insert_many(p, news, request_id=request_id, said=said, edges=edges)
        created = sum(c for _, c in written)
        self._changed(created)
        await self._turns_after_new(p, [m.id for m, c in written if c and m.kind == "episode"])
        if created and self.decider is not None:  # a batch never waits: the workers decide it
            await self.decider.settle(p, None)
        return WriteManyResult(created=created, duplicates=len(written) - created,
                               memories=[WrittenItem(id=m.id, status="created" if c else "duplicate")
                                         for m, c in written])

    async def related(self, p: Principal, memory_id: UUID, content: str, vector: list[float] | None, *,
                      skip: frozenset[UUID] | set[UUID] = frozenset(),
                      before: datetime | None = None, kind: str | None = None) -> list[RelatedMemory]:
        """What the memory `memory_id` (of `kind`) may replace (related_versions.py): the
        decisions' candidates, the same list a write shows."""
        return await self.versions.related(p, memory_id, content, vector, skip=skip, before=before, kind=kind)
