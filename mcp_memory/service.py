"""Business rules between the transports and the repository: validation and normalization,
permissions, write scope, cursors. Knows nothing of MCP. The one door to the repository for the
server, the console and capture; built complete by composition.py."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID, uuid4

from .config import Settings
from .cursors import Cursors
from .decisions.apply import accept as accept_suggested
from .decisions.apply import reembed as reembed_undone
from .decisions.apply import undo as undo_decision
from .decisions.overview import JobsView, Queue, queue_view
from .entities import Entities
from .errors import InvalidInput, NotFound, PermissionDenied
from .forgetting import Forgetting
from .graph import Source
from .lexicon import named as lexicon_named
from .models import (
    MOMENTS,
    GetResult,
    HistoryResult,
    Kind,
    ListOrder,
    Memory,
    MemoryFilter,
    MemoryPage,
    NewMemory,
    Principal,
    RelatedMemory,
    RestoreResult,
    ScopeLevel,
    UpdateResult,
    WriteItem,
    WriteManyResult,
    WriteResult,
    WrittenItem,
)
from .overview import Overview
from .permissions import require
from .related_versions import Near, RelatedVersions
from .repository import MemoryRepository, rate_limits
from .repository.decisions import DecisionRepository
from .repository.edges import Edge
from .repository.embeddings import EmbeddingRepository
from .repository.forget_tokens import ForgetTokenRepository
from .repository.jobs import JobRepository, enqueue_extraction
from .repository.maintenance import MaintenanceRepository
from .repository.secrets import cursor_secret
from .retrieval.rerank import Reranking
from .review import Review
from .searching import Recalled, Searching, asks
from .statistics import Statistics
from .structure import Structure
from .transcript_cursors import TranscriptCursors
from .validation import Validator, content_hash, moment, request_fingerprint, text
from .vectors import Vectors, embedder_from

if TYPE_CHECKING:
    from .db import Database

__all__ = ["Decider", "MemoryService", "Recalled", "asks", "memory_repository"]


class Decider(Protocol):
    """What a write tells once it committed (decisions/jobs.py's DecisionWorker): the new memory's
    id (decide it now in sync mode, or wake the workers), or None for a batch (wake them)."""

    async def settle(self, p: Principal, memory_id: UUID | None) -> None: ...


def memory_repository(pool: Any, settings: Settings) -> MemoryRepository:
    """The repository the settings ask for: with a decisions provider, each new memory gets a
    decision job in its write's transaction; with extraction too, a moment (a captured turn, a
    session's summary) gets none (its facts are extracted and decided; a summary replaces nothing)."""
    if settings.decisions_provider == "none":
        return MemoryRepository(pool)
    return MemoryRepository(pool, decision_attempts=settings.decisions_max_attempts,
                            undecided_kinds=MOMENTS if settings.extraction else frozenset())

class MemoryService(Forgetting, Searching):
    def __init__(self, repo: MemoryRepository, settings: Settings, vectors: Vectors | None = None,
                 statistics: Statistics | None = None, cursors: Cursors | None = None,
                 decider: Callable[[MemoryService], Decider] | None = None) -> None:
        """`decider`: what builds the decisions' worker for this service (composition.py), called
        once, last, with the service complete; None: writes settle nothing (no provider, or a
        process that leaves the decisions to the server's workers)."""
        if (repo.decision_attempts is None) != (settings.decisions_provider == "none"):
            raise ValueError("the repository was built for other decisions settings than the service's: "
                             "build it with memory_repository(pool, settings)")
        self.repo = repo
        self.tokens = ForgetTokenRepository(repo)
        self.settings = settings
        self.vectors = vectors
        self.check = Validator(settings)
        # Without the database's secret (a service built by hand in a benchmark), cursors still
        # work within this process but are not honoured by other replicas.
        self.cursors = cursors or Cursors(secrets.token_bytes(32))
        self.overview = Overview(repo, settings, vectors.model if vectors else None, self.list, self.cursors,
                                 self.check)
        self.versions = RelatedVersions(repo, settings, vectors)  # what a new memory may replace
        self.review = Review(repo, settings)  # what the review console shows beyond the tools
        self.lexicon = lexicon_named(settings.language)  # the language names, keys and questions are read in
        self.structure = Structure(repo, settings, self.lexicon, vectors)  # who and what a write says
        self.entities = Entities(repo, settings.snippet_chars, self.lexicon)  # profiles, and a person's edits
        self.transcripts = TranscriptCursors(repo)  # how much of each transcript capture stored
        self.queue = Queue(repo)  # the decision jobs, as `mcp-memory jobs` handles them
        # The opt-in reranker over a search's best hits (retrieval/rerank.py); None: off (default).
        self.reranking = Reranking.from_settings(settings)
        # Counts committed changes so planner statistics follow bursts (statistics.py); the
        # server runs its loop. None: nobody keeps them (a one-off command analyzes itself).
        self.statistics = statistics
        # Told after a write with the new memory's id (decisions/jobs.py: wake the workers, or
        # decide now in sync mode); None when this process runs no decisions workers.
        self.decider: Decider | None = decider(self) if decider is not None else None

    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        # The parts hold the service's settings: a replaced one (a benchmark's variant, a test's)
        # reaches them all, not only the service.
        self._settings = settings
        for part in ("check", "overview", "versions", "review", "structure"):
            if hasattr(self, part):
                getattr(self, part).settings = settings

    @classmethod
    async def open(cls, db: Database, settings: Settings, *, check_model: bool = True,
                   decider: Callable[[MemoryService], Decider] | None = None) -> MemoryService:
        """The service over a database with the configured embedder; `check_model` refuses a model
        the database was not built with (a re-embedding backfill skips it). Processes build it
        through composition.py, which adds the workers and what runs in the background."""
        vectors = Vectors(embedder_from(settings), EmbeddingRepository(db.pool, db.admin), settings)
        if check_model:
            await vectors.prepare()
        maintenance = MaintenanceRepository(db.admin)
        statistics = Statistics(maintenance.analyze_once, maintenance.planner_rows,
                                min_writes=settings.analyze_min_writes, fraction=settings.analyze_fraction)
        return cls(memory_repository(db.pool, settings), settings, vectors, statistics,
                   Cursors(await cursor_secret(db.admin)), decider)

    def _changed(self, n: int) -> None:
        if self.statistics is not None and n:
            self.statistics.wrote(n)

    require = staticmethod(require)

    async def _limit(self, p: Principal, action: str) -> None:
        """Rate limits bind remote principals; the local owner is trusted."""
        per_minute = {"write": self.settings.write_rate_per_minute,
                      "forget": self.settings.forget_rate_per_minute}[action]
        if p.rate_limited and per_minute > 0:
            await rate_limits.take(self.repo, p, action, per_minute)

    @staticmethod
    def _may_override_pin(p: Principal, force: bool) -> bool:
        if force and not p.can("admin"):
            raise PermissionDenied("force=true needs the 'admin' permission")
        return force

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

    # --- operations -----------------------------------------------------------------------

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
        said = await self.structure.ended(p, new.content, await self.structure.adopted(p, new.content, said))
        if idempotency_key is not None:
            text("idempotency_key", idempotency_key)
        await self._limit(p, "write")
        # What `related` will compare the new memory by is embedded with it, in one batch.
        vector = (await self.vectors.document(new.content, self.versions.companions(new.content, new.kind))
                  if self.vectors else None)
        new = self._embedded(new, vector)
        skip = set(supersedes or ())
        # What the new memory touches, for the agent to decide on (supersedes), does not depend on
        # it being stored: it is looked up on another connection while the insert runs (a write
        # 3-4 ms sooner at 1,000 memories). The insert may commit first, so the lookup leaves out
        # the new memory by the id it is about to get: found, it would be the nearest of all and
        # take the place of what the new one is compared with.
        new_id = uuid4()
        neighbours = (asyncio.ensure_future(self.versions.neighbours(p, vector, new.content, len(skip),
                                                                     exclude=new_id, kind=new.kind))
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
        near = await neighbours if neighbours is not None else Near([], 0)
        # A duplicate is the old memory itself, and what it touched was said when it was written.
        related = await self.versions.listed(new.content, near, skip) if created else []
        if memory.replaced:
            related = await self.structure.same_key_first(p, memory, vector, related)
        if created and self.decider is not None:
            await self.decider.settle(p, memory.id)
        return WriteResult(status="created" if created else "duplicate", memory=memory, related=related)

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
                         embeddings: Sequence[list[float] | None] | None = None) -> WriteManyResult:
        """Many memories in one call: every item checked first (a bad one names its index and
        nothing is written), embedded in batches, inserted in one transaction, each deduplicated
        in its scope and audited. Fails open like `write`: without vectors if the embedder is down.
        `edges`: per item, its links to other memories, stored in the same transaction (extraction:
        derived_from its turns); `said_by`: who gave the items' about and key (extraction: model);
        `embeddings`: per item, its vector already made by the configured model (an import's,
        taken from a peer's file once checked: importing/peer_vectors.py), None to embed it."""
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
                said.append(replace(one, source=said_by) if one.source == "writer" else one)
            except (InvalidInput, PermissionDenied) as exc:
                raise type(exc)(f"items[{i}]: {exc}; nothing was written") from None
        await self._limit(p, "write")
        if self.vectors is not None and self.vectors.embedder is not None:
            vectors = await self.vectors.documents_given([n.content for n in news], given)
            news = [self._embedded(n, v) for n, v in zip(news, vectors, strict=True)]
        written = await self.repo.insert_many(p, news, request_id=request_id, said=said, edges=edges)
        created = sum(c for _, c in written)
        self._changed(created)
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

    async def get(self, p: Principal, ids: list[UUID]) -> GetResult:
        self.require(p, "read")
        ids = list(dict.fromkeys(ids))
        found = await self.repo.get_many(p, ids)
        if not found:
            raise NotFound(f"no memory with id {', '.join(map(str, ids))} in this session's scope (a forgotten "
                           "one comes back with memory_restore, or memory_undo_decision if a decision forgot it)")
        seen = {m.id for m in found}
        structure = await self.repo.structure(p, list(seen))
        found = [m.model_copy(update={k: v or None for k, v in structure[m.id].items()}) if m.id in structure else m
                 for m in found]
        return GetResult(memories=found, not_found=[i for i in ids if i not in seen])

    async def get_one(self, p: Principal, memory_id: UUID) -> Memory:
        self.require(p, "read")
        found = await self.repo.peek_many(p, [memory_id])
        if not found:
            raise NotFound(f"no memory {memory_id} in this session's scope")
        return found[0]

    async def list(self, p: Principal, f: MemoryFilter | None = None, *, order: ListOrder = "recent",
                   limit: int = 20, cursor: str | None = None) -> MemoryPage:
        self.require(p, "read")
        f = self.check.filter(f)
        after = self.cursors.decode(cursor, order, f) if cursor else None
        memories, next_key = await self.repo.list(p, f, order, limit, after)
        return MemoryPage(memories=memories, next_cursor=self.cursors.encode(order, f, next_key) if next_key else None)

    async def update(self, p: Principal, memory_id: UUID, *, content: str | None = None,
                     title: str | None = None, kind: Kind | None = None, tags: list[str] | None = None,
                     metadata: dict[str, Any] | None = None, importance: float | None = None,
                     pinned: bool | None = None, priority: int | None = None,
                     occurred_at: datetime | None = None, reason: str | None = None,
                     if_version: int | None = None, force: bool = False,
                     request_id: str | None = None) -> UpdateResult:
        self.require(p, "write")
        reason = text("reason", reason) if reason is not None else None
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self.check.content(content)
            # A new text needs a new vector (none if the embedder is down: the backfill adds it).
            vector = await self.vectors.document(changes["content"]) if self.vectors else None
            changes["embedding"] = vector
            changes["embedding_model"] = self.vectors.model if vector is not None and self.vectors else None
        if title is not None:
            changes["title"] = self.check.title(title)
        if kind is not None:
            changes["kind"] = kind
        if tags is not None:
            changes["tags"] = self.check.tags(tags)
        if metadata is not None:
            changes["metadata"] = self.check.metadata(metadata)
        if importance is not None:
            changes["importance"] = importance
        if pinned is not None:
            changes["pinned"] = pinned
        if priority is not None:
            changes["priority"] = priority
        if occurred_at is not None:
            changes["occurred_at"] = moment("occurred_at", occurred_at)
        if not changes:
            raise InvalidInput("nothing to update: pass at least one field to change")
        await self._limit(p, "write")
        memory, changed = await self.repo.update(
            p, memory_id, changes, reason=reason, if_version=if_version,
            may_override_pin=self._may_override_pin(p, force), request_id=request_id, read_names=self.structure.read)
        self._changed(int(changed))
        related = (await self.related(p, memory.id, memory.content, changes["embedding"], kind=memory.kind)
                   if changed and "content" in changes else [])
        return UpdateResult(status="updated" if changed else "unchanged", memory=memory, related=related)

    async def restore(self, p: Principal, ids: list[UUID], *, reason: str | None = None,
                      request_id: str | None = None) -> RestoreResult:
        self.require(p, "write")
        reason = text("reason", reason) if reason is not None else None
        await self._limit(p, "write")
        ids = list(dict.fromkeys(ids))
        restored = await self.repo.restore(p, ids, reason=reason, request_id=request_id,
                                           may_restore_others=p.can("admin"))
        self._changed(len(restored))
        return RestoreResult(restored=restored)

    async def accept_suggestion(self, p: Principal, job: int, memory: UUID | None = None) -> dict[str, Any]:
        """Apply what the guard kept from a decision as a suggestion (all of it, or one memory). The
        CLI and the memory_accept_suggestion tool both come here."""
        return await accept_suggested(DecisionRepository(self.repo), JobRepository(self.repo), p, job, memory)

    async def jobs(self, p: Principal, limit: int = 20) -> JobsView:
        """The decision job queue of this principal's user: counts by status and the latest `limit`
        jobs (memory://jobs, `mcp-memory jobs`)."""
        return await queue_view(JobRepository(self.repo), p, limit)

    async def undo_decision(self, p: Principal, target: str) -> dict[str, Any]:
        """Reverse a model's decision, named by one of its history rows (seq) or by a memory it
        changed or was made about. The CLI and the console both come here."""
        decisions = DecisionRepository(self.repo)
        result = await undo_decision(decisions, JobRepository(self.repo), p, target)
        await reembed_undone(decisions, self.vectors, p, result.pop("rewritten"))
        return result

    @property
    def extracting(self) -> bool:
        """Captured sessions go to a model for their facts (decisions/extraction.py), not to triggers:
        an endpoint's, or a connected client's through sampling (the job waits for one)."""
        return self.settings.decisions_provider != "none" and self.settings.extraction

    async def enqueue_extraction(self, p: Principal, episodes: list[UUID], session_id: str | None) -> str | None:
        """One extraction job for a captured session delta; why not, when a cap stops it."""
        self.require(p, "write")
        s = self.settings
        async with self.repo.transaction(p) as conn:
            why = await enqueue_extraction(conn, p, episodes, session_id, max_attempts=s.decisions_max_attempts,
                                           per_session=s.extraction_per_session, per_day=s.extraction_per_day)
        if why is None and self.decider is not None:
            await self.decider.settle(p, None)  # wakes the workers
        return why

    async def history(self, p: Principal, memory_id: UUID, *, limit: int = 100) -> HistoryResult:
        self.require(p, "read")
        return HistoryResult(memory_id=memory_id, entries=await self.repo.history(p, memory_id, limit))
