"""Workers that turn queued jobs into applied decisions.

A job is claimed (FOR UPDATE SKIP LOCKED, with a lease), its memory's candidates are found, the
provider is asked outside any transaction, and the decision is applied together with the job's
completion (apply.py). A failure gives the job back with exponential backoff, and after
`decisions_max_attempts` buries it as a dead letter; a worker that dies leaves a lease that runs
out, and the job is taken again. Per-user budgets (calls per minute, tokens per day) make a job
wait, never fail. `settle` is what a write calls: in async mode it only wakes the workers; in
sync / auto mode it decides that memory's job now, within the time budget."""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any
from uuid import UUID

import anyio
import asyncpg
import numpy as np

from ..config import DecisionSettings
from ..models import MOMENTS, Principal
from ..repository import edges
from ..repository import jobs as queue
from ..repository.decisions import DecisionRepository
from ..repository.jobs import Job, JobRepository
from ..telemetry.tracing import span
from ..turn_vectors import turn_before_stored
from . import apply as applying
from . import extraction, guard, second_look
from .pace import Pace
from .protocol import Candidate, DecisionError, DecisionProvider, DecisionRequest, NotReachable

if TYPE_CHECKING:
    from ..service import MemoryService
    from ..statistics import Statistics

log = logging.getLogger(__name__)

AUTO_COOLDOWN_S = 60  # auto mode: after a decision overran the budget, writes go async this long
MAX_BACKOFF_S = 3600
# Why a queued job waits (memory_jobs.waiting), by prefix: what releases it looks for these.
WAIT_CLIENT = "waiting for a client"
WAIT_PROVIDER = "waiting for the provider"
WAIT_BUDGET = "waiting for the budget"
MAX_UNSERVABLE = 10_000
NOT_EMBEDDED_RECHECK_S = 60.0


class DecisionWorker:
    def __init__(self, admin: asyncpg.Pool, service: MemoryService, provider: DecisionProvider,
                 settings: DecisionSettings, name: str | None = None, *, statistics: Statistics | None = None) -> None:
        """`statistics`: what counts committed changes for the planner (statistics.py), the service's
        own (composition.py passes it); None: the decisions' changes are not counted."""
        self.admin = admin
        self.service = service
        self.statistics = statistics
        self.provider = provider
        self.settings = settings
        self.repo = DecisionRepository(service.repo)
        self.jobs = JobRepository(service.repo)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._wake = anyio.Event()
        self._async_until = 0.0
        self.processed = 0
        # The endpoint could not be reached: until then, jobs wait without asking it again.
        self._down_until = 0.0
        self._down_why = ""
        self._clients: set[str] = set()  # users a sampling client connected for since the last claim
        # Jobs this process had no client for: left to another server's workers (whose client may read
        # them) instead of being taken and put back here first, until a client connects here.
        self._unservable: set[int] = set()
        # A provider that asks connected clients (sampling: server/sampling.py's sessions, built
        # before the database and so before this worker) tells it when one connects, so the jobs
        # waiting for a client are taken at once.
        sessions = getattr(provider, "sessions", None)
        if sessions is not None:
            sessions.subscribe(self.client_available)

    def lease(self) -> float:
        """How long a claimed job stays this worker's: its model calls at the provider's pace."""
        pace: Pace = getattr(self.provider, "pace", None) or Pace(self.settings)
        return pace.lease()

    # --- the loop -------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def client_available(self, user_id: str) -> None:
        """A client that can answer for this user connected: its waiting jobs are due now."""
        self._clients.add(user_id)
        self._unservable.clear()
        self.wake()

    async def run_forever(self) -> None:
        async with anyio.create_task_group() as tg:
            for i in range(self.settings.decisions_workers):
                tg.start_soon(self._loop, f"{self.name}/{i}")

    async def _loop(self, worker: str) -> None:
        while True:
            try:
                busy = await self.run_once(worker)
            except Exception:  # the database went away for a moment: keep serving
                log.warning("decision worker %s: claiming failed", worker, exc_info=True)
                busy = False
            if not busy:
                with anyio.move_on_after(self.settings.decisions_poll_s):
                    await self._wake.wait()
                    self._wake = anyio.Event()

    async def run_once(self, worker: str | None = None) -> bool:
        """Claim and process one due job; False when none was due."""
        worker = worker or self.name
        while self._clients:
            await queue.release(self.admin, WAIT_CLIENT, self._clients.pop())
        job = await queue.claim(self.admin, worker, self.lease(), sorted(self._unservable))
        if job is None:
            return False
        await self.process(job, worker)
        return True

    # --- one job --------------------------------------------------------------------------

    async def process(self, job: Job, worker: str) -> str:
        """Decide and apply one claimed job; returns its new status."""
        if job.attempts > job.max_attempts:  # taken again after its workers kept dying
            await queue.bury_exhausted(self.admin, job, worker)
            return "dead"
        try:
            return await self._process(job, worker)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the attempt did not happen: give it back
                await queue.interrupted(self.admin, job, worker)
            raise
        except NotReachable as exc:
            return await self._wait(job, worker, exc)
        except DecisionError as exc:
            return await self._failed(job, worker, f"{exc.kind}: {exc}", final=exc.final, tokens=exc.tokens)
        except Exception as exc:
            if job.attempts <= 1:  # a bug or a broken answer: the trace once, not on every retry
                log.exception("decision job %s failed", job.id)
            else:
                log.warning("decision job %s failed again: %s: %s", job.id, type(exc).__name__, exc)
            return await self._failed(job, worker, f"error: {type(exc).__name__}: {exc}", final=False)

    async def _process(self, job: Job, worker: str) -> str:
        if job.kind == "extract":
            return await extraction.run(self, job, worker)
        p = job.acting_as()
        subject = await self.repo.subject(p, job.memory_id)
        if subject is None or subject["deleted_at"] is not None:
            return await self._finish_without_model(job, worker, "the memory was forgotten before its decision")
        candidates = await self._candidates(p, job, subject)
        if candidates is None:
            # The embedder is down or the backfill has not reached it: not the job's fault either.
            await queue.defer(self.admin, job, worker, NOT_EMBEDDED_RECHECK_S,
                              "waiting for its vector: the memory is decided once it is embedded")
            return "queued"
        if not candidates:
            return await self._finish_without_model(job, worker, "no close memory to decide about")
        waiting = await self._over_budget(job)
        if waiting:
            seconds, why = waiting
            await queue.defer(self.admin, job, worker, seconds, why)
            return "queued"
        if time.monotonic() < self._down_until:
            raise NotReachable(self._down_why, recheck_s=self._down_until - time.monotonic())
        request = DecisionRequest(user_id=p.user_id, memory_id=job.memory_id, content=subject["content"],
                                  kind=subject["kind"], occurred_at=subject["occurred_at"], candidates=candidates,
                                  agent_id=subject["agent_id"], project_id=subject["project_id"])
        await queue.called(self.admin, job)
        with span("model.decide", **{"mcp_memory.provider": self.provider.name,
                                     "mcp_memory.model": self.provider.model,
                                     "mcp_memory.candidates": len(candidates)}):
            answer = await self.provider.decide(request)
        if self._down_until:  # it answers again: what waited for it is due now
            self._down_until = 0.0
            await queue.release(self.admin, WAIT_PROVIDER)
        targets = answer.decision.targets(candidates)
        verdict = None
        if self.settings.decisions_guard and answer.decision.action != "ADD" and targets:
            texts = {c.id: c.content for c in candidates}
            stored = await self.repo.subjects(p, [job.memory_id, *texts])
            verdict = await guard.check(subject["content"], [(t, texts[t]) for t in targets], self.service.vectors,
                                        floor=guard.floor_for(self.settings), among=list(texts.items()),
                                        stored=stored, new_id=job.memory_id)
            if verdict.by_closeness and second_look.enabled(self.settings):
                with span("model.second_look", **{"mcp_memory.provider": self.provider.name,
                                                  "mcp_memory.targets": len(verdict.by_closeness)}):
                    spent = await second_look.review(self.provider, request, verdict)
                answer = answer.model_copy(update={"tokens": answer.tokens + spent})
            targets = verdict.allowed
        merged, refused = await self._merged(p, job.memory_id, answer.decision.text, subject["content"]) \
            if targets else (None, None)
        result = await applying.apply(self.repo, job, worker, answer, targets, [c.id for c in candidates],
                                      merged=merged, merge_refused=refused, verdict=verdict)
        if result is None:
            log.info("decision job %s was taken by another worker or cancelled; nothing applied", job.id)
            return "lost"
        self.processed += 1
        if self.statistics is not None and result["applied"]:
            self.statistics.wrote(len(result["applied"]))
        await applying.embed_turns_after(self.repo, self.service.vectors, p, result["action"], result["applied"],
                                         [job.memory_id] if result.get("merged") else [])
        return "done"

    async def _merged(self, p: Principal, memory_id: UUID, text: str | None,
                      current: str) -> tuple[applying.Merged | None, str | None]:
        """The merged text an UPDATE carries, as any write would store it: checked against the
        content limit, secrets redacted, embedded outside any transaction (an episode's with the turn
        before it, turn_vectors.py; without a vector if the embedder is down: the backfill adds it).
        (None, why) when it cannot be stored."""
        from ..capture.redact import redact
        from ..errors import InvalidInput
        from ..validation import content_hash

        if text is None or not text.strip() or text.strip() == current.strip():
            return None, None
        try:
            content = self.service.check.content(text)
        except InvalidInput as exc:
            return None, f"merged text not stored: {exc}"
        content, kinds = redact(content)
        if kinds:
            log.info("decision's merged text: redacted %s", ", ".join(kinds))
        vectors = self.service.vectors
        before = await turn_before_stored(self.service.repo, vectors, p, memory_id)
        vector = await vectors.document(content, before=before) if vectors is not None else None
        return applying.Merged(content=content, content_hash=content_hash(content), embedding=vector,
                               embedding_model=vectors.model if vector is not None and vectors else None), None

    async def _finish_without_model(self, job: Job, worker: str, why: str) -> str:
        from .protocol import Answer, Decision

        answer = Answer(decision=Decision(action="ADD", reason=why), provider="none", model="none")
        result = await applying.apply(self.repo, job, worker, answer, [], [])
        return "done" if result is not None else "lost"

    async def _candidates(self, p: Principal, job: Job, subject: Any) -> list[Candidate] | None:
        """The live memories closest to the new one that a decision could still change the
        link of; None if the memory is not embedded (yet)."""
        vectors = self.service.vectors
        if vectors is None:
            return []
        if subject["embedding"] is None or subject["embedding_model"] != vectors.model:
            return None
        stored = subject["embedding"]  # pgvector's Vector, or an array on a pool without its codec
        vector = stored.to_list() if hasattr(stored, "to_list") else np.asarray(stored, dtype=np.float32).tolist()
        # Only older memories: a memory is decided against what was there before it, so two
        # versions of a fact are never each asked to replace the other. Looked for as such (not
        # filtered after the nearest were taken), so the rows written before it in its own batch
        # are candidates, as they would be had they been written one by one. What it was derived
        # from (an extracted fact's turns) it restates, never replaces: no candidate either.
        async with self.service.repo.reading(p) as conn:
            sources = {to for _, to, _ in (await edges.linked(conn, p, [job.memory_id], "derived_from")
                                           ).get(job.memory_id, [])}
        # A fact read from a session restates what its turns (and its summary) said at their moment:
        # none of them is a candidate, whichever the model named as its sources (the local model
        # names them loosely: "Assistant: Will do: no peanuts." was superseded by "The user is
        # allergic to peanuts."): neither the turns its extraction read nor, where the session has
        # an id, its earlier turns. Turns of other sessions stay candidates: a later session's fact
        # may replace what an earlier one said.
        session, read = await self._read_from(p, subject["metadata"])
        related = await self.service.related(p, job.memory_id, subject["content"], vector,
                                             skip=set(job.explicit) | sources | read, before=subject["created_at"],
                                             kind=subject["kind"])
        fresh = [r for r in related if r.superseded_by is None]
        if not fresh:
            return []
        rows = {m.id: m for m in await self.service.repo.peek_many(p, [r.id for r in fresh])
                if m.created_at < subject["created_at"]
                and not (session and m.kind in MOMENTS and m.metadata.get("session_id") == session)}
        return [Candidate(label=str(i), id=r.id, content=rows[r.id].content, kind=r.kind, age=r.age,
                          similarity=r.similarity, pinned=rows[r.id].pinned, agent_id=rows[r.id].scope.agent_id,
                          project_id=rows[r.id].scope.project_id)
                for i, r in enumerate([r for r in fresh if r.id in rows], 1)]

    async def _read_from(self, p: Principal, metadata: dict[str, Any] | None) -> tuple[str | None, set[UUID]]:
        """The session an extracted fact was read from (its `session_id`, if the session has one)
        and the turns its extraction read; (None, empty) for any other memory."""
        meta = metadata or {}
        extraction = meta.get("extraction_job")
        if not isinstance(extraction, int):
            return None, set()
        read = await self.jobs.get(p, extraction)
        return meta.get("session_id"), set(read.sources) if read is not None else set()

    async def _over_budget(self, job: Job) -> tuple[float, str] | None:
        per_minute, per_day = self.settings.decisions_per_minute, self.settings.decisions_tokens_per_day
        if job.unbudgeted or (not per_minute and not per_day):
            return None
        calls, tokens = await queue.spent(self.admin, job.user_id, job.id)
        lift = " (`mcp-memory jobs retry --waiting` lifts it)"
        if per_minute and calls >= per_minute:
            return 60.0, f"{WAIT_BUDGET}: {per_minute} model calls per minute for this user are spent{lift}"
        if per_day and tokens >= per_day:
            return 3600.0, f"{WAIT_BUDGET}: {per_day} tokens per day for this user are spent{lift}"
        return None

    async def _wait(self, job: Job, worker: str, exc: NotReachable) -> str:
        """The provider cannot be reached now: the job waits, its attempt uncounted."""
        why = str(exc)
        if self.settings.decisions_provider != "sampling":
            if self._down_until <= time.monotonic():  # it just went down: the other jobs wait for it too
                self._down_until = time.monotonic() + exc.recheck_s
                self._down_why = why if why.startswith(WAIT_PROVIDER) else f"{WAIT_PROVIDER}: {why}"
                log.warning("decisions: %s; jobs wait and are taken when it answers", why)
            why = self._down_why
        elif len(self._unservable) < MAX_UNSERVABLE:
            self._unservable.add(job.id)
        await queue.defer(self.admin, job, worker, exc.recheck_s, why)
        return "queued"

    async def _failed(self, job: Job, worker: str, error: str, *, final: bool, tokens: int = 0) -> str:
        backoff = None if final else min(MAX_BACKOFF_S, self.settings.decisions_retry_base_s * 2 ** (job.attempts - 1))
        status = await queue.fail(self.admin, job, worker, error, retry_in_s=backoff, tokens=tokens)
        if status == "dead":  # a final failure the user should see, and can retry
            log.warning("decision job %s is a dead letter after %d attempts: %s (`mcp-memory jobs retry %s`)",
                        job.id, job.attempts, error, job.id)
        else:
            log.info("decision job %s: %s -> %s", job.id, error, status or "taken by another worker")
        return status or "lost"

    # --- what a write calls ---------------------------------------------------------------

    async def settle(self, p: Principal, memory_id: UUID | None) -> None:
        """After a write committed its memory and job (None: a batch, which never waits). Never
        raises: a write never fails because of a model."""
        mode = self.settings.decisions_mode
        if memory_id is None or mode == "async" or (mode == "auto" and time.monotonic() < self._async_until):
            self.wake()
            return
        started = time.monotonic()
        try:
            with anyio.move_on_after(self.settings.decisions_sync_budget_s) as scope:
                job = await queue.claim_one(self.admin, p.user_id, memory_id, self.name, self.lease())
                if job is not None:
                    await self.process(job, self.name)
            if scope.cancelled_caught:
                log.info("decision for %s ran over %.1f s; the workers finish it", memory_id,
                         time.monotonic() - started)
                if mode == "auto":
                    self._async_until = time.monotonic() + AUTO_COOLDOWN_S
                self.wake()
        except Exception:
            log.warning("deciding memory %s now failed; the workers retry it", memory_id, exc_info=True)
            self.wake()
