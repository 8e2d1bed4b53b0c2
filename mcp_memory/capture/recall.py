"""What the hooks give the model: at session start the pinned core and the project's few most
recent memories; with each prompt the memories relevant to it, above a relevance floor and under
a character budget (nothing when nothing is relevant). Always delimited as data (context.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from .. import context
from ..config import Settings
from ..embeddings import conflict_similarity
from ..models import Memory, MemoryFilter, Principal, SearchHit
from ..repository.related import nearest
from ..retrieval import parse_query
from ..retrieval import search as hybrid_search
from ..service import MemoryService

log = logging.getLogger(__name__)

# Kinds worth bringing back at session start; episodes are the raw conversation.
DISTILLED = ["fact", "preference", "decision", "procedure", "identity", "note"]
MIN_PROMPT_WORDS = 2
SEARCH_RESERVE_S = 0.25  # kept for the searches when the prompt's vector is late


def _fit(memories: Sequence[Memory | SearchHit], budget: int) -> list[Memory | SearchHit]:
    kept, used = [], 0
    for m in memories:
        cost = len(context.render_memory(m)) + 1
        if used + cost > budget:
            break
        kept.append(m)
        used += cost
    return kept


async def session_context(service: MemoryService, settings: Settings, p: Principal, model: str | None = None) -> str:
    core = await service.overview.core(p, model)
    parts = [context.render_core(core)] if core.memories else []
    if settings.session_start_recent:
        f = MemoryFilter(kinds=DISTILLED, scope="project" if p.project_id else None)  # type: ignore[arg-type]
        page = await service.list(p, f, order="recent", limit=settings.session_start_recent + len(core.memories))
        pinned = {m.id for m in core.memories}
        recent = _fit([m for m in page.memories if m.id not in pinned][: settings.session_start_recent],
                      settings.recall_budget_chars)
        if recent:
            where = f"project {p.project_id}" if p.project_id else "you"
            parts.append(context.render(recent, f"Recent memories for {where} (newest first)."))
    return "\n\n".join(parts)


def recall_floor(settings: Settings, model: str | None) -> float:
    if settings.recall_min_similarity is not None:
        return settings.recall_min_similarity
    return max(0.0, conflict_similarity(model) - 0.3)


def worth_recalling(prompt: str) -> bool:
    """A slash command or a one-word reply ("yes", "continue") asks nothing to look up."""
    prompt = prompt.strip()
    return not prompt.startswith("/") and len(prompt.split()) >= MIN_PROMPT_WORDS


async def _vector(service: MemoryService, prompt: str, deadline: float | None) -> list[float] | None:
    """The prompt's vector, or None if the embedder is off or (loading the model in a cold hook
    process) would leave too little of the budget for the search: then full text alone recalls."""
    if service.vectors is None:
        return None
    if deadline is None:
        return await service.vectors.query(prompt)
    try:
        return await asyncio.wait_for(service.vectors.query(prompt),
                                      max(0.0, deadline - time.monotonic() - SEARCH_RESERVE_S))
    except TimeoutError:
        log.info("recall without the vector list: the embedder was not ready in time")
        return None


async def prompt_context(service: MemoryService, settings: Settings, p: Principal, prompt: str,
                         session_id: str | None = None, deadline: float | None = None) -> str:
    """`deadline` (time.monotonic) bounds the wait for the prompt's vector."""
    if settings.recall_limit == 0 or settings.recall_budget_chars == 0 or not worth_recalling(prompt):
        return ""
    service.require(p, "read")
    prompt = prompt.strip()[:1000]
    vectors = service.vectors
    vector = await _vector(service, prompt, deadline)
    # The service's search would wait for the vector again; the retrieval takes the one we have.
    model = vectors.model if vectors and vector is not None else None
    hits = await hybrid_search(service.repo, p, parse_query(prompt), None, limit=settings.recall_limit * 3,
                               settings=settings, explain=vector is None, vector=vector, model=model,
                               dimension=vectors.dimension if model and vectors else 0)
    if vector is not None and vectors is not None:
        # The fused score ranks; it says nothing absolute. Relevance is closeness of meaning.
        close = await nearest(service.repo, p, vector, model=vectors.model, dimension=vectors.dimension,
                              limit=max(50, settings.recall_limit * 10),
                              min_similarity=recall_floor(settings, vectors.model))
        relevant = {row["id"] for row, _ in close}
        hits = [h for h in hits if h.id in relevant]
    else:
        # No vector (embedder off, down or late): a hit must at least share words with the prompt.
        hits = [h for h in hits if h.explain and h.explain.get("fulltext") is not None]
    # This session's own turns are already in the model's context.
    own = f"session:{session_id}" if session_id else None
    hits = [h for h in hits if own not in h.tags][: settings.recall_limit]
    kept = _fit(hits, settings.recall_budget_chars)
    if not kept:
        return ""
    return context.render(kept, "Memories that may be relevant to this prompt (auto-recall).")
