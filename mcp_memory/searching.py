"""Searching: memory_search's search, and the same search for auto-recall (capture/recall.py) with
what recall judges its hits by. The rules of MemoryService that concern it (a part of that class,
split off for size, as forgetting.py)."""

from __future__ import annotations

import asyncio
import re
from functools import partial
from types import EllipsisType
from typing import TYPE_CHECKING, NamedTuple
from uuid import UUID

from .activity import Activity
from .errors import InvalidInput
from .models import Memory, MemoryFilter, Principal, SearchHit, SearchReading, SearchResult
from .repository.maintenance import MaintenanceRepository
from .repository.related import similarities
from .retrieval import ParsedQuery, intent_of, parse_query, then
from .retrieval import search as hybrid_search
from .retrieval.broad_names import Speakers, without_names
from .retrieval.common_words import others_allowed
from .retrieval.focus import question_beside
from .retrieval.statement import QUESTION
from .retrieval.summaries import covering, sources_of
from .validation import text

if TYPE_CHECKING:
    from .config import Settings
    from .lexicon import Lexicon
    from .repository import MemoryRepository
    from .retrieval.rerank import Reranking
    from .validation import Validator
    from .vectors import Vectors


_ASKS = re.compile(QUESTION)


def asks(text: str) -> bool:
    """Whether a text asks something (a question mark in most scripts): the same rule the search
    statement applies when an episode that asks passes half its score to its reply."""
    return _ASKS.search(text) is not None


class Recalled(NamedTuple):
    """What auto-recall's search found (MemoryService.recall_search)."""

    hits: list[SearchHit]
    memories: dict[UUID, Memory]  # each hit's memory (live and visible), for recall's groups and words
    cosine: dict[UUID, float] | None  # each hit's cosine to the query; None without the query's vector
    # Each raw turn among the hits that a session summary among them sums up, to that summary.
    summarised: dict[UUID, UUID] = {}


class Searching:
    """Mixed into MemoryService, whose attributes and helpers these methods use."""

    repo: MemoryRepository
    settings: Settings
    vectors: Vectors | None
    _maintenance: MaintenanceRepository | None
    check: Validator
    lexicon: Lexicon
    reranking: Reranking | None
    activity: Activity
    speakers: Speakers

    if TYPE_CHECKING:  # defined by MemoryService
        @staticmethod
        def require(p: Principal, permission: str) -> None: ...

    async def search(self, p: Principal, query: str, f: MemoryFilter | None = None, *, limit: int = 10,
                     explain: bool = False) -> SearchResult:
        self.require(p, "read")
        query = text("query", query).strip()
        if not query:
            raise InvalidInput("query is empty: say what to look for")
        parsed = parse_query(query, self.lexicon)
        reading = SearchReading() if explain else None
        hits = await self._search(p, parsed, self.check.filter(f), limit=limit, explain=explain, reading=reading)
        return SearchResult(query=query, hits=hits, intent=intent_of(parsed) if explain else None,
                            reading=reading if reading is not None and (reading.words_left_out
                                                                       or reading.names_left_out_of_vector) else None)

    async def recall_search(self, p: Principal, query: str, *, limit: int,
                            vector_wait: float | None = None) -> Recalled:
        """memory_search's search for auto-recall (capture/recall.py), never reranked (its budget is
        1.5 s): the hits, their memories, and each hit's cosine to the query computed exactly (what
        recall's relevance floor reads; None without the query's vector). `vector_wait`: seconds
        the query's vector may take (a cold model), after which full text alone searches."""
        self.require(p, "read")
        parsed = parse_query(query, self.lexicon)
        vector = await self._query_vector(parsed, vector_wait)
        hits = await self._search(p, parsed, None, limit=limit, explain=True, vector=vector, reranked=False)
        memories = {m.id: m for m in await self.repo.peek_many(p, [h.id for h in hits])} if hits else {}
        cosine = (await similarities(self.repo, p, list(memories), vector, model=self.vectors.model,
                                     dimension=self.vectors.dimension)
                  if vector is not None and self.vectors is not None and self.vectors.model else None)
        summarised: dict[UUID, UUID] = {}
        if any(m.kind == "session_summary" for m in memories.values()):
            rows = [{"id": i, "kind": m.kind} for i, m in memories.items()]
            async with self.repo.reading(p) as conn:
                summarised = covering(hits, await sources_of(conn, p, rows))
        return Recalled(hits, memories, cosine, summarised)

    async def _alone(self, p: Principal) -> bool:
        """Whether the store is nearly all `p`'s user's (retrieval/common_words.py `others_allowed`),
        by the owner's pool (MaintenanceRepository), asked once a minute; False without that door
        (a service built by hand)."""
        maintenance, allowed = self._maintenance, others_allowed(self.settings.fulltext_common_rows)
        if maintenance is None:
            return False

        async def alone() -> float:
            return float(await maintenance.others_hold_at_most(p.user_id, allowed))
        return bool(await self.repo.counted(("alone", p.user_id, allowed), alone))

    async def _query_vector(self, parsed: ParsedQuery, wait: float | None = None,
                            said: str | None = None, beside: str | None = None) -> list[float] | None:
        """The vector of what a query searches for (its words about time steer the ranking: the
        meaning searched for is the rest), or of `said` (the same without some names, broad_names.py);
        None without an embedder or past `wait` seconds. `beside`: a question the search will ask
        later, embedded with it (`Vectors.query`)."""
        if self.vectors is None or not parsed.text:
            return None
        query = self.vectors.query(said or parsed.text, beside=[beside] if beside else ())
        if wait is None:
            return await query
        try:
            return await asyncio.wait_for(query, max(0.0, wait))
        except TimeoutError:
            return None

    async def _search(self, p: Principal, parsed: ParsedQuery, f: MemoryFilter | None, *, limit: int,
                      explain: bool = False, min_similarity: float | None = None,
                      vector: list[float] | None | EllipsisType = ..., reranked: bool = True,
                      reading: SearchReading | None = None) -> list[SearchHit]:
        """`vector`: the query's, when the caller has it already (None: search without one);
        `reading`: told how the search read the store."""
        with self.activity.search():  # the pages' warm-up waits for a quiet moment (db/warmup.py)
            unnamed: list[str] = []
            if vector is ...:
                unnamed = self.speakers.likely(p, parsed.subject) if min_similarity is None else []
                said = without_names(parsed.text, unnamed) if unnamed else None
                if said is None:
                    unnamed = []
                # The present's focus (and a span's, retrieval/then.py) compares the subject's memories
                # with the question without its subject (retrieval/focus.py): one run of the model for both.
                beside = (then.question_beside(parsed) or question_beside(parsed)
                          if self.settings.present_focus and min_similarity is None else None)
                vector = await self._query_vector(parsed, said=said, beside=beside)
            # A listing by similarity (a forget preview) is what matches, not an order: never reranked.
            rerank = self.reranking if min_similarity is None and reranked else None
            hits = await hybrid_search(self.repo, p, parsed, f, limit=rerank.candidates(limit) if rerank else limit,
                                       settings=self.settings, explain=explain,
                                       vector=vector, model=self.vectors.model if self.vectors else None,
                                       dimension=self.vectors.dimension if self.vectors else 0,
                                       min_similarity=min_similarity, vectors=self.vectors, lexicon=self.lexicon,
                                       reading=reading, alone=partial(self._alone, p), unnamed=unnamed,
                                       told=partial(self.speakers.tell, p, parsed.subject))
            if rerank is None:
                return hits
            # The reranker sees the question as asked (time words kept) and only these hits: memories
            # this principal's own search found, so never text it could not read. It fails open: on a
            # timeout or an error the hits keep their order.
            return await rerank.apply(self.repo, p, parsed.asked or parsed.text, hits, limit=limit, explain=explain)
