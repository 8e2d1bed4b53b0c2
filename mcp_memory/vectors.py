"""Turning memory text into vectors for the service: the embedding cache, failing open, the
start-up check of the model the database was built with, and the backfill."""

from __future__ import annotations

import logging
import sys
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TypeVar

import anyio
import numpy as np
from tqdm import tqdm

from .breaker import Breaker
from .config import EmbeddingSettings
from .embeddings import Embedder, QueryBatches, make_embedder, resolve_dimension
from .errors import ModelMismatch, Unavailable
from .repository.embeddings import EmbeddingRepository, text_hash
from .telemetry import metrics
from .telemetry.tracing import span

log = logging.getLogger(__name__)
T = TypeVar("T")


_EMBEDDERS: dict[tuple, Embedder | None] = {}


def embedder_from(settings: EmbeddingSettings) -> Embedder | None:
    """The configured embedder, one per configuration per process (a local model loads once).
    A provider that cannot be set up (package or key missing) is logged and left out: memories
    are then stored without vectors and found by full text until it is fixed and backfilled."""
    key = (settings.embedding_provider, settings.embedding_model, settings.embedding_dimension,
           settings.embedding_api_key, settings.embedding_base_url, settings.embedding_model_path,
           settings.embedding_model_sha256, settings.embedding_tokenizer_sha256)
    if key not in _EMBEDDERS:
        try:
            _EMBEDDERS[key] = make_embedder(settings.embedding_provider, settings.embedding_model,
                                            dimension=settings.embedding_dimension,
                                            api_key=settings.embedding_api_key, base_url=settings.embedding_base_url,
                                            model_path=settings.embedding_model_path,
                                            model_sha256=settings.embedding_model_sha256,
                                            tokenizer_sha256=settings.embedding_tokenizer_sha256)
        except Unavailable as exc:
            log.error("embeddings are off: %s (run `mcp-memory doctor`)", exc)
            return None
    return _EMBEDDERS[key]


def summed(own: Sequence[float], before: Sequence[float], weight: float) -> list[float]:
    """An episode's vector: its own text's plus `weight` times the turn before's, scaled back to
    length 1. A reply that says little alone ("Some fun ones like charades.") is found by what it
    answers (docs/benchmarks.md, "Episodes with the turn before them, built")."""
    vector = np.asarray(own, dtype=np.float64) + weight * np.asarray(before, dtype=np.float64)
    norm = float(np.linalg.norm(vector))
    return (vector / norm).tolist() if norm else list(own)


def _befores(befores: Sequence[str | None] | None, count: int) -> Sequence[str | None]:
    return befores if befores is not None else [None] * count


async def _after_turns(texts: Sequence[str], befores: Sequence[str | None] | None, weight: float,
                       embed: Callable[[list[str]], Awaitable[list[list[float]] | None]]) -> list[list[float]] | None:
    """`embed` of each text, summed for one with a turn before it (`befores`) with that turn's own
    vector (`summed`); one call for all. The turn before was embedded when it was written, so its
    vector is mostly the embedding cache's: an episode costs no second embedding."""
    befores = _befores(befores, len(texts))
    if weight <= 0:
        befores = [None] * len(texts)
    vectors = await embed([*texts, *(b for b in befores if b is not None)])
    if vectors is None:
        return None
    made = iter(vectors[len(texts):])
    return [summed(own, next(made), weight) if b is not None else own
            for own, b in zip(vectors[:len(texts)], befores, strict=True)]


class Vectors:
    """The embedder behind a cache, failing open: with the model down a memory is stored
    without a vector (found by full text until the backfill embeds it) and a search runs
    without its vector list."""

    def __init__(self, embedder: Embedder | None, repo: EmbeddingRepository, settings: EmbeddingSettings) -> None:
        self.embedder = embedder
        self.repo = repo
        self.settings = settings
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        # A hanging embedder must not make every write wait out the timeout: after a few
        # failures writes store without a vector at once, and when a probe succeeds again the
        # memories stored meanwhile are embedded in the background (heal_forever).
        self.breaker = Breaker(threshold=settings.embedding_breaker_failures,
                               cooldown_s=settings.embedding_breaker_cooldown_s)
        self._healed = anyio.Event()
        self._opened = anyio.Event()  # wakes heal_forever to schedule its probes

    async def _guarded(self, call: Callable[[], Awaitable[T]], what: str, timeout_s: float | None = None) -> T | None:
        """`call` unless the breaker is open; None on failure or timeout (fail open)."""
        if not self.breaker.allows():
            metrics.EMBEDDER_CALLS.labels("skipped").inc()
            return None
        started = time.monotonic()
        try:
            with span("embedder", **{"mcp_memory.embedding.model": self.model}), \
                    anyio.fail_after(timeout_s or self.settings.embedding_timeout_s):
                result = await call()
        except (Unavailable, TimeoutError, OSError) as exc:
            metrics.EMBEDDER_CALLS.labels("failed").inc()
            metrics.EMBEDDER_SECONDS.observe(time.monotonic() - started)
            self.breaker.failed()
            if self.breaker.open:
                self._opened.set()
            log.warning("%s (the embedder is failing%s): %s", what,
                        "; skipping it for a while" if self.breaker.open else "", str(exc) or type(exc).__name__)
            return None
        metrics.EMBEDDER_CALLS.labels("ok").inc()
        metrics.EMBEDDER_SECONDS.observe(time.monotonic() - started)
        if self.breaker.succeeded():
            log.info("the embedder answers again: embedding what was stored without a vector")
            self._healed.set()
        return result

    async def probe(self, timeout_s: float | None = None) -> bool:
        """Ask the embedder for one vector (through the breaker): True when it answered."""
        embedder = self.embedder
        if embedder is None:
            return False
        return await self._guarded(partial(embedder.embed_query, "health check"), "probing the embedder",
                                   timeout_s) is not None

    async def heal_forever(self) -> None:
        """Each time the embedder comes back, embed the memories stored without a vector. With
        the breaker open and no calls to probe it, probe it here, when the breaker lets the
        next probe go (about a second after it opened, then backing off up to its cooldown):
        healing must not wait for traffic that may never come."""
        while True:
            wait = min(self.breaker.next_probe_in(), self.breaker.cooldown_s)
            if not self._opened.is_set():
                with anyio.move_on_after(wait + 0.01):
                    async with anyio.create_task_group() as tg:  # whichever comes first
                        tg.start_soon(_cancel_when, self._healed, tg.cancel_scope)
                        tg.start_soon(_cancel_when, self._opened, tg.cancel_scope)
            self._opened = anyio.Event()
            if not self._healed.is_set():
                if self.embedder is None or not self.breaker.open or self.breaker.next_probe_in() > 0:
                    continue
                if not await self.probe():
                    continue
            self._healed = anyio.Event()
            try:
                done = await self.backfill(reembed=False, progress=False)
                log.info("embedded %d memories stored while the embedder was down", done)
            except Exception:  # the next healing tries again; `mcp-memory backfill` too
                log.warning("background backfill failed", exc_info=True)

    @property
    def turn_minutes(self) -> float:
        """An episode's vector holds the turn before it when that one occurred at most this many
        minutes earlier (0: none does, with the weight 0 or no embedder)."""
        on = self.settings.embedding_turn_weight > 0 and self.embedder is not None
        return self.settings.embedding_turn_minutes if on else 0.0

    @property
    def turn_weight(self) -> float:
        return self.settings.embedding_turn_weight

    @property
    def turns(self) -> tuple[float, float]:
        """What an episode's vector holds of the turn before it: (weight, minutes); (0, 0) for none."""
        return (self.turn_weight, self.turn_minutes) if self.turn_minutes > 0 else (0.0, 0.0)

    @property
    def model(self) -> str | None:
        return self.embedder.model if self.embedder else None

    @property
    def dimension(self) -> int:
        return self.embedder.dimension if self.embedder else 0

    async def documents(self, texts: Sequence[str], befores: Sequence[str | None] | None = None) -> list[list[float]]:
        """Vectors for texts (each with the turn before it, where `befores` gives one), from the
        cache where it has them. Raises on embedder failure."""
        assert self.embedder is not None
        embedder = self.embedder
        vectors = await _after_turns(texts, befores, self.turn_weight,
                                     lambda all_: self._cached(all_, embedder.embed_documents))
        assert vectors is not None
        return vectors

    async def _cached(self, texts: Sequence[str],
                      embed: Callable[[list[str]], Awaitable[list[list[float]] | None]]) -> list[list[float]] | None:
        """Vectors from the cache, `embed` for the rest (None from it: None)."""
        assert self.embedder is not None
        hashes = [text_hash(t) for t in texts]
        known = await self.repo.cached(self.embedder.model, hashes)
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
        if missing:
            fresh = await embed(list(missing.values()))
            if fresh is None:
                return None
            new = dict(zip(missing, fresh, strict=True))
            await self.repo.remember(self.embedder.model, new)
            known.update(new)
        return [known[h] for h in hashes]

    async def _documents_guarded(self, texts: Sequence[str], what: str) -> list[list[float]] | None:
        """Only the embedder's own failures count against it: the cache is the database, and a
        database outage fails the write anyway (it must not open the breaker for later)."""
        assert self.embedder is not None
        embedder = self.embedder

        async def embed(missing: list[str]) -> list[list[float]] | None:
            return await self._guarded(lambda: embedder.embed_documents(missing), what)

        return await self._cached(texts, embed)

    async def document(self, text: str, companions: Sequence[str] = (), before: str | None = None
                       ) -> list[float] | None:
        """One memory's vector (an episode's with `before`, the turn before it), or None if the
        embedder is off, down or slow (fail open). `companions`, texts soon needed with it, are
        embedded in the same batch and cached."""
        if self.embedder is None:
            return None

        async def embed(texts: list[str]) -> list[list[float]] | None:
            vectors = await self._documents_guarded([*texts, *companions], "storing without a vector")
            return vectors[:len(texts)] if vectors else None

        vectors = await _after_turns([text], [before], self.turn_weight, embed)
        return vectors[0] if vectors else None

    async def documents_or_none(self, texts: Sequence[str], batch: int = 32,
                                befores: Sequence[str | None] | None = None) -> list[list[float]] | None:
        """Vectors for many texts in batches (each with the turn before it, where `befores` gives
        one), or None if the embedder is off, down or slow (fail open: the backfill adds them)."""
        if self.embedder is None:
            return None
        return await _after_turns(texts, befores, self.turn_weight, partial(
            self._batched, batch=batch, what=f"storing {len(texts)} memories without vectors"))

    async def _batched(self, texts: Sequence[str], batch: int, what: str) -> list[list[float]] | None:
        # Batches of texts of like length: a batch is padded to its longest text.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            vectors = await self._documents_guarded([texts[i] for i in chunk], what)
            if vectors is None:
                return None
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = vector
        return out

    async def documents_given(self, texts: Sequence[str], given: Sequence[list[float] | None],
                              befores: Sequence[str | None] | None = None,
                              companions: Sequence[str] = ()) -> list[list[float] | None]:
        """Vectors for texts, the `given` ones (the model's already: an import's, checked) as they
        are and never cached, the rest from the cache or embedded (with the turn before them, where
        `befores` gives one); None for those when the embedder is off, down or slow (fail open).
        `companions`, texts soon needed with them, are embedded in the same batches and cached."""
        todo = [i for i, vector in enumerate(given) if vector is None]
        befores = _befores(befores, len(texts))
        made = (await self.documents_or_none([*(texts[i] for i in todo), *companions],
                                             befores=[*(befores[i] for i in todo), *(None for _ in companions)])
                if todo or companions else [])
        made = made[:len(todo)] if made is not None else None
        out = list(given)
        for i, vector in zip(todo, made or [None] * len(todo), strict=True):
            out[i] = vector
        # A given vector is of the text alone (a peer's): the turn before is added as to one made here.
        held = [i for i, vector in enumerate(given) if vector is not None and befores[i] is not None]
        if held and self.turn_weight > 0:
            turns = await self.documents_or_none([befores[i] or "" for i in held])
            for n, i in enumerate(held):  # the model down: none, for the backfill to make as it should be
                out[i] = summed(given[i] or [], turns[n], self.turn_weight) if turns is not None else None
        return out

    async def query(self, text: str, beside: Sequence[str] = ()) -> list[float] | None:
        """A question's vector, from the query cache where it is there, or None if the embedder is
        off, down or slow (fail open). `beside`: questions soon asked with it (the question without
        its subject, retrieval/focus.py), embedded in the same call where the embedder takes several
        (`QueryBatches`: two short texts in one run of the local model cost ~3 ms less than in two)
        and cached."""
        if self.embedder is None:
            return None
        if text in self._queries:
            self._queries.move_to_end(text)
            return self._queries[text]
        embedder = self.embedder
        texts = [text, *dict.fromkeys(t for t in beside if t != text and t not in self._queries)]
        if len(texts) > 1 and isinstance(embedder, QueryBatches):
            vectors = await self._guarded(lambda: embedder.embed_queries(texts), "searching without the vector list")
        else:
            texts = texts[:1]
            vector = await self._guarded(lambda: embedder.embed_query(text), "searching without the vector list")
            vectors = None if vector is None else [vector]
        if vectors is None:
            return None
        for asked, vector in zip(texts, vectors, strict=True):
            self._queries[asked] = vector
        while len(self._queries) > self.settings.query_cache_entries:
            self._queries.popitem(last=False)
        return vectors[0]

    async def prepare(self, *, index_memory_mb: int = 0) -> None:
        """At start-up: refuse model files that are not the ones pinned (or the ones the user's
        digests name: ModelFileError, a ModelMismatch) and a model the database was not built
        with, and make sure the model's index exists, built where it is missing with
        `index_memory_mb` of working memory (0: the server's). A local model then loads in the
        background; its files were hashed here, once."""
        if self.embedder is None:
            return
        verify = getattr(self.embedder, "verify", None)  # local models: their files' SHA-256
        if verify is not None:
            await anyio.to_thread.run_sync(verify)
        dimension = await resolve_dimension(self.embedder)
        built = await self.repo.built_with()
        if built and (built["model"], built["dimension"]) != (self.embedder.model, dimension):
            if await self.repo.rows_with_other_models(self.embedder.model):
                raise ModelMismatch(
                    f"the database was built with embedding model {built['model']} ({built['dimension']} "
                    f"dimensions) but {self.embedder.model} ({dimension}) is configured. Run "
                    f"`mcp-memory backfill --reembed` to switch, or set MCP_MEMORY_EMBEDDING_MODEL="
                    f"{built['model']}")
        if built != {"model": self.embedder.model, "dimension": dimension}:
            await self.repo.record_model(self.embedder.model, dimension)
        await self.repo.ensure_index(self.embedder.model, dimension, index_memory_mb, replacing=lambda: log.warning(
            "building the vector index again in half precision, once (about 6 minutes a million memories on 2 "
            "cores with a few GB of MCP_MEMORY_IMPORT_INDEX_MEMORY_MB): writes wait for it, searches read every "
            "row until it is built"))

    @asynccontextmanager
    async def loading(self, rows: int, at_least: int, *, memory_mb: int = 0,
                      progress: bool = True) -> AsyncIterator[None]:
        """Around a load of `rows` memories: into a store that holds none, and at least `at_least`
        of them, the vector index is built once after the rows instead of taking each on the way in
        (its insertion was 1.4 ms of a batched row's ~3.4 even in a small store). A search meanwhile
        reads every row, correctly; a load killed midway leaves the index to the next start
        (`prepare`), one that fails to the `finally` here. `memory_mb`: the build's working memory."""
        dropped, dimension = False, 0
        if self.embedder is not None and at_least and rows >= at_least:
            dimension = await resolve_dimension(self.embedder)
            dropped = await self.repo.drop_index_of_empty_store(self.embedder.model, dimension)
        try:
            yield
        finally:
            if dropped and self.embedder is not None:
                if progress:
                    print(f"building the vector index of {self.embedder.model} ...", file=sys.stderr)
                await self.repo.ensure_index(self.embedder.model, dimension, memory_mb)

    async def backfill(self, *, reembed: bool, batch_size: int = 64, progress: bool = True,
                       episodes: bool = False) -> int:
        """Embed every live memory that has no vector (or, with `reembed`, one from another
        model; with `episodes`, every episode, after the turn rule changed), batch by batch: each
        batch commits, so it can stop and resume, and search keeps working throughout. Returns how
        many memories it embedded."""
        if self.embedder is None:
            raise Unavailable("no embedding provider is configured (MCP_MEMORY_EMBEDDING_PROVIDER=none)")
        model = self.embedder.model
        dimension = await resolve_dimension(self.embedder)
        if reembed:
            await self.repo.record_model(model, dimension)
        await self.repo.ensure_index(model, dimension)
        total = await self.repo.pending(model, reembed, episodes)
        done, after = 0, None
        with tqdm(total=total, desc=f"embedding with {model}", unit="memory", file=sys.stderr,
                  disable=not progress) as bar:
            while rows := await self.repo.next_batch(model, reembed, after, batch_size, self.turn_minutes, episodes):
                vectors = await self.documents([r["content"] for r in rows], [r["before"] for r in rows])
                await self.repo.store(model, [(r["user_id"], r["id"], v) for r, v in zip(rows, vectors, strict=True)])
                metrics.BACKFILLED.inc(len(rows))
                after = rows[-1]["id"]
                done += len(rows)
                bar.update(len(rows))
        return done


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
