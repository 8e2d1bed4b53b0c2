"""Business rules between the transports and the repository: validation and normalization,
permissions, write scope, cursors. Knows nothing of MCP. The one door to the repository for the
server, the console, capture and the command line; built complete by composition.py."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from .activity import Activity
from .config import EmbeddingSettings, RerankSettings, Settings
from .cursors import Cursors
from .decisions.apply import accept as accept_suggested
from .decisions.apply import embed_turns_after
from .decisions.apply import reembed as reembed_undone
from .decisions.apply import undo as undo_decision
from .decisions.overview import JobsView, Queue, queue_view
from .entities import Entities, key_given
from .errors import InvalidInput, NotFound, PermissionDenied
from .forgetting import Forgetting
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
    Principal,
    RestoreResult,
    UpdateResult,
)
from .overview import Overview
from .permissions import require
from .related_versions import RelatedVersions
from .repository import MemoryRepository, rate_limits
from .repository.decisions import DecisionRepository
from .repository.embeddings import EmbeddingRepository
from .repository.forget_tokens import ForgetTokenRepository
from .repository.jobs import JobRepository, enqueue_extraction
from .repository.maintenance import MaintenanceRepository
from .repository.secrets import cursor_secret
from .retrieval.broad_names import Speakers
from .retrieval.rerank import Reranking
from .review import Review
from .searching import Recalled, Searching, asks
from .statistics import Statistics
from .structure import Structure
from .transcript_cursors import TranscriptCursors
from .turn_vectors import embed_again, turn_before_stored, turns_after
from .validation import Validator, moment, text
from .vectors import Vectors, embedder_from
from .writing import Decider, Writing

if TYPE_CHECKING:
    from .db import Database

__all__ = ["Decider", "MemoryService", "Recalled", "asks", "memory_repository"]


def memory_repository(pool: Any, settings: Settings) -> MemoryRepository:
    """The repository the settings ask for: with a decisions provider, each new memory gets a
    decision job in its write's transaction; with extraction too, a moment (a captured turn, a
    session's summary) gets none (its facts are extracted and decided; a summary replaces nothing)."""
    if settings.decisions_provider == "none":
        return MemoryRepository(pool)
    return MemoryRepository(pool, decision_attempts=settings.decisions_max_attempts,
                            undecided_kinds=MOMENTS if settings.extraction else frozenset())

class MemoryService(Writing, Forgetting, Searching):
    def __init__(self, repo: MemoryRepository, settings: Settings, vectors: Vectors | None = None,
                 statistics: Statistics | None = None, cursors: Cursors | None = None,
                 decider: Callable[[MemoryService], Decider] | None = None, *,
                 maintenance: MaintenanceRepository | None = None) -> None:
        """`decider`: what builds the decisions' worker for this service (composition.py), called
        once, last, with the service complete; None: writes settle nothing (no provider, or a
        process that leaves the decisions to the server's workers). `maintenance`: the owner's
        pool's repository `whole_store` hands out; None: a service built by hand has no door there."""
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
        self.reranking = Reranking.from_settings(settings.part(RerankSettings))
        self.activity = Activity()  # its searches running, which the pages' warm-up makes way for
        self.speakers = Speakers()  # the names its searches left out of the question's vector
        # Counts committed changes so planner statistics follow bursts (statistics.py); the
        # server runs its loop. None: nobody keeps them (a one-off command analyzes itself).
        self.statistics = statistics
        # Told after a write with the new memory's id (decisions/jobs.py: wake the workers, or
        # decide now in sync mode); None when this process runs no decisions workers.
        self.decider: Decider | None = decider(self) if decider is not None else None
        self._maintenance = maintenance

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
        embeddings = settings.part(EmbeddingSettings)
        vectors = Vectors(embedder_from(embeddings), EmbeddingRepository(db.pool, db.admin), embeddings)
        if check_model:
            await vectors.prepare(index_memory_mb=settings.import_index_memory_mb)
        maintenance = MaintenanceRepository(db.admin)
        statistics = Statistics(maintenance.analyze_once, maintenance.planner_rows,
                                min_writes=settings.analyze_min_writes, fraction=settings.analyze_fraction)
        return cls(memory_repository(db.pool, settings), settings, vectors, statistics,
                   Cursors(await cursor_secret(db.admin)), decider, maintenance=maintenance)

    def whole_store(self) -> MaintenanceRepository:
        """The door `mcp-memory import` and `export` take to a user's whole store (importers.py,
        exporting/; each call names its user): they copy memories in and out verbatim, the
        forgotten ones and their history too, ids kept, which no session's write or read may. It is
        on the owner's pool (Database.admin), so row-level security does not narrow it: only the
        command line, which holds the owner's credentials anyway, opens it; no tool reaches it."""
        if self._maintenance is None:
            raise RuntimeError("this service was built without the owner's pool: "
                               "open it with MemoryService.open (composition.py) to import or export")
        return self._maintenance

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

    # --- operations -----------------------------------------------------------------------

    async def get(self, p: Principal, ids: list[UUID]) -> GetResult:
        self.require(p, "read")
        ids = list(dict.fromkeys(ids))
        found = await self.repo.get_many(p, ids)
        if not found:
            raise NotFound(f"no memory with id {', '.join(map(str, ids))} in this session's scope (a forgotten "
                           "one comes back with memory_restore, or memory_undo_decision if a decision forgot it)")
        seen = {m.id for m in found}
        return GetResult(memories=await self._structured(p, found), not_found=[i for i in ids if i not in seen])

    async def _structured(self, p: Principal, memories: list[Memory]) -> list[Memory]:
        """`memories` with whom each is about, its key, mentions and edges, as memory_get shows them:
        an update or a restore returning a keyed fact with `about` and `key` empty read as if the
        change had dropped them."""
        structure = await self.repo.structure(p, [m.id for m in memories]) if memories else {}
        return [m.model_copy(update={k: v or None for k, v in structure[m.id].items()}) if m.id in structure else m
                for m in memories]

    async def get_one(self, p: Principal, memory_id: UUID, *, structured: bool = True) -> Memory:
        """One memory, its access not counted; `structured` as for `list`."""
        self.require(p, "read")
        found = await self.repo.peek_many(p, [memory_id])
        if not found:
            raise NotFound(f"no memory {memory_id} in this session's scope")
        return (await self._structured(p, found))[0] if structured else found[0]

    async def list(self, p: Principal, f: MemoryFilter | None = None, *, order: ListOrder = "recent",
                   limit: int = 20, cursor: str | None = None, structured: bool = True) -> MemoryPage:
        """A page of memories; `structured` (the tool, the console) adds what the graph holds of each
        (`_structured`), which the hooks' and summaries' own reads leave out."""
        self.require(p, "read")
        f = self.check.filter(f)
        after = self.cursors.decode(cursor, order, f) if cursor else None
        memories, next_key = await self.repo.list(p, f, order, limit, after)
        if structured:
            memories = await self._structured(p, memories)
        return MemoryPage(memories=memories, next_cursor=self.cursors.encode(order, f, next_key) if next_key else None)

    async def update(self, p: Principal, memory_id: UUID, *, content: str | None = None,
                     title: str | None = None, kind: Kind | None = None, tags: list[str] | None = None,
                     metadata: dict[str, Any] | None = None, importance: float | None = None,
                     pinned: bool | None = None, priority: int | None = None,
                     occurred_at: datetime | None = None, reason: str | None = None,
                     if_version: int | None = None, force: bool = False,
                     request_id: str | None = None, key: str | None = None,
                     about: list[str] | None = None) -> UpdateResult:
        self.require(p, "write")
        reason = text("reason", reason) if reason is not None else None
        refiled = key_given(key, self.structure.lexicon) if key is not None else None
        subjects = self.structure.about_given(about) if about is not None else None
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self.check.content(content)
            # A new text needs a new vector (none if the embedder is down: the backfill adds it);
            # an episode's with the turn before it.
            vector = await self.vectors.document(changes["content"], before=await turn_before_stored(
                self.repo, self.vectors, p, memory_id, kind)) if self.vectors else None
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
        if not changes and refiled is None and subjects is None:
            raise InvalidInput("nothing to update: pass at least one field to change")
        await self._limit(p, "write")
        # A turn moved, or no longer a turn, leaves the one after it where it was: that one held it,
        # and must not.
        placed = {"occurred_at", "kind"} & changes.keys()
        moved_from = await turns_after(self.repo, self.vectors, p, [memory_id]) if placed else []
        memory, changed = await self.repo.update(
            p, memory_id, changes, reason=reason, if_version=if_version,
            may_override_pin=self._may_override_pin(p, force), request_id=request_id, read_names=self.structure.read,
            key=refiled, about=subjects)
        self._changed(int(changed))
        turn = "kind" in changes or memory.kind == "episode" and bool({"content", "occurred_at"} & changes.keys())
        if changed and turn and self.vectors is not None and self.vectors.turn_minutes > 0:
            # The episode after it holds its old text (or, moved or made a turn, it follows another
            # turn, or it stands alone).
            await embed_again(self.repo, self.vectors, p, [memory.id], itself=bool(placed))
            await embed_again(self.repo, self.vectors, p, moved_from, followers=False)
        related = (await self.related(p, memory.id, memory.content, changes["embedding"], kind=memory.kind)
                   if changed and "content" in changes else [])
        [memory] = await self._structured(p, [memory])
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
        if self.vectors is not None and self.vectors.turn_minutes > 0:
            # A restored turn and the one after it hold their turns before again, as when written (it
            # may have held one forgotten with it).
            await embed_again(self.repo, self.vectors, p, [m.id for m in restored if m.kind == "episode"])
        return RestoreResult(restored=await self._structured(p, restored))

    async def accept_suggestion(self, p: Principal, job: int, memory: UUID | None = None) -> dict[str, Any]:
        """Apply what the guard kept from a decision as a suggestion (all of it, or one memory). The
        CLI and the memory_accept_suggestion tool both come here."""
        decisions = DecisionRepository(self.repo)
        result = await accept_suggested(decisions, JobRepository(self.repo), p, job, memory)
        await embed_turns_after(decisions, self.vectors, p, result["action"], result["accepted"])
        return result

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
