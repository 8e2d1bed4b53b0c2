"""An opt-in reranker over the best hits of a search: a second model reads the query beside each
hit's text and scores how well it answers; the hits are put in its order. Off by default
(`MCP_MEMORY_RERANK_PROVIDER=none`).

- ``voyage``: Voyage AI's rerank API through the official ``voyageai`` SDK (``AsyncClient.rerank``,
  the ``voyage`` extra), ``POST {base}/rerank`` with ``{"query", "documents", "model"}``.
- ``tei``: Hugging Face text-embeddings-inference, ``POST {base_url}/rerank`` with
  ``{"query", "texts"}``, answering ``[{"index", "score"}, ...]``.
- ``cohere-compatible``: the Cohere / Jina shape many servers speak (vLLM, Infinity, llama.cpp's
  server, Jina, Cohere), ``POST {base_url}/rerank`` with ``{"model", "query", "documents"}``,
  answering ``{"results": [{"index", "relevance_score"}, ...]}``.

A reranker never fails a search: past `rerank_timeout_s`, on an HTTP error, an SDK error or an
answer that does not score every hit, one warning line is logged and the hits keep the order the
search gave them. After a few failures in a row a circuit breaker skips the reranker at once and
probes it now and then (breaker.py), so a dead endpoint is not waited on for every search.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Sequence
from typing import Any, Protocol

import anyio

from ..breaker import Breaker
from ..config import RerankSettings
from ..models import Principal, SearchHit
from ..repository import MemoryRepository

log = logging.getLogger(__name__)

DEFAULT_VOYAGE_MODEL = "rerank-2.5"
# Each hit is sent as its title and text, cut to this many characters (a captured turn may hold
# 8,000; the reranker's own model reads at most its context, and a bounded request answers sooner).
DOCUMENT_CHARS = 4000
# After this many failures in a row the reranker is skipped; it is probed again after 1 s, then
# 1.5x longer after each failed probe, up to the cooldown (the breaker the embedder uses).
BREAKER_FAILURES = 3
BREAKER_COOLDOWN_S = 30.0
# At most this much of an error answer's body goes into the warning line.
ERROR_BODY_CHARS = 200


class RerankError(Exception):
    """A reranker that gave no usable answer; the message is the warning line's reason."""


class Reranker(Protocol):
    """Scores `documents` for `query`: one float per document, in the documents' order, higher
    is more relevant (the scale is the model's own)."""

    #: For log lines: the provider and where it runs.
    where: str

    async def rerank(self, query: str, documents: list[str]) -> list[float]: ...


def scores_from(answer: Any, count: int, where: str) -> list[float]:
    """One score per document from a rerank answer: TEI's list of ``{"index", "score"}``, or an
    object whose ``results`` (Cohere, Jina, vLLM) or ``data`` (Voyage) lists
    ``{"index", "relevance_score"}``. Anything else, or an answer that does not score every
    document exactly once with a finite number, is a RerankError."""
    items = answer
    if isinstance(answer, dict):
        items = answer.get("results", answer.get("data"))
    if not isinstance(items, list):
        raise RerankError(f"{where} answered no list of scores")
    scores: list[float | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            raise RerankError(f"{where} answered a score that is not an object")
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count
                or scores[index] is not None):
            raise RerankError(f"{where} answered an index out of place: {index!r} of {count} documents")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankError(f"{where} answered a score that is not a number: {score!r}")
        scores[index] = float(score)
    missing = sum(s is None for s in scores)
    if missing:
        raise RerankError(f"{where} scored {count - missing} of {count} documents")
    return [s for s in scores if s is not None]


class VoyageReranker:
    """Voyage AI's rerank API through the ``voyageai`` SDK's async client (imported on first use).
    The key comes from `api_key`, ``VOYAGE_API_KEY`` or ``VOYAGE_API_KEY_PATH``; no retries (the
    search's bound leaves no room for them)."""

    def __init__(self, model: str | None = None, *, api_key: str | None = None, base_url: str | None = None,
                 timeout_s: float = 2.0) -> None:
        self.model = (model or DEFAULT_VOYAGE_MODEL).strip()
        self._api_key, self._base_url, self._timeout_s = api_key, base_url, timeout_s
        self._client: Any = None
        self.where = f"voyage rerank ({self.model} at {base_url or 'the Voyage API'})"
        # The SDK (with langchain-core and aiohttp) takes a second or more to import on a loaded machine:
        # imported here, at start, not inside the first search's time bound (where it timed out, and
        # blocked the event loop). Missing, the first search says so.
        with contextlib.suppress(ImportError):
            import voyageai  # noqa: F401

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import voyageai
            except ImportError:
                raise RerankError("the voyage reranker needs the voyageai package: "
                                  "pip install 'mcp-memory[voyage]'") from None
            if not (self._api_key or os.environ.get("VOYAGE_API_KEY") or os.environ.get("VOYAGE_API_KEY_PATH")):
                raise RerankError("the voyage reranker needs an API key: set MCP_MEMORY_RERANK_API_KEY "
                                  "or VOYAGE_API_KEY")
            self._client = voyageai.AsyncClient(api_key=self._api_key, max_retries=0, timeout=self._timeout_s,
                                                base_url=self._base_url)
        return self._client

    async def rerank(self, query: str, documents: list[str]) -> list[float]:
        client = self._get_client()
        from voyageai import error as voyage_error

        try:
            result = await client.rerank(query, documents, model=self.model, truncation=True)
        except voyage_error.VoyageError as exc:
            status = getattr(exc, "http_status", None)
            detail = f"HTTP {status}" if status else type(exc).__name__
            message = str(getattr(exc, "user_message", None) or exc)[:ERROR_BODY_CHARS]
            raise RerankError(f"{self.where}: {detail}: {message}") from exc
        except (KeyError, AttributeError, TypeError, IndexError) as exc:  # an answer of another shape
            raise RerankError(f"{self.where} answered no list of scores ({type(exc).__name__})") from exc
        return scores_from([{"index": r.index, "relevance_score": r.relevance_score} for r in result.results],
                           len(documents), self.where)


class HTTPReranker:
    """``POST {base_url}/rerank`` over httpx: TEI's request (`style` "tei") or the Cohere / Jina one
    ("cohere-compatible"); either answer shape is read. `api_key`, when set, is sent as a bearer
    token to this endpoint only."""

    def __init__(self, base_url: str, *, style: str = "tei", model: str | None = None,
                 api_key: str | None = None, timeout_s: float = 2.0) -> None:
        if style not in ("tei", "cohere-compatible"):
            raise ValueError(f"unknown rerank request style {style!r}")
        self.url = base_url.rstrip("/") + "/rerank"
        self.style, self.model, self._api_key, self._timeout_s = style, model, api_key, timeout_s
        self._client: Any = None
        self.where = f"{style} rerank at {self.url}"

    def _body(self, query: str, documents: list[str]) -> dict[str, Any]:
        if self.style == "tei":
            # TEI answers 413 for a text past the model's length unless asked to truncate.
            return {"query": query, "texts": documents, "truncate": True}
        return {**({"model": self.model} if self.model else {}), "query": query, "documents": documents}

    async def rerank(self, query: str, documents: list[str]) -> list[float]:
        import httpx2

        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx2.AsyncClient(timeout=self._timeout_s, headers=headers)
        try:
            response = await self._client.post(self.url, json=self._body(query, documents))
        except httpx2.TimeoutException as exc:
            raise RerankError(f"{self.where} timed out") from exc
        except httpx2.HTTPError as exc:
            raise RerankError(f"{self.where}: cannot reach it: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            body = " ".join(response.text.split())[:ERROR_BODY_CHARS]
            raise RerankError(f"{self.where}: HTTP {response.status_code}: {body}")
        try:
            answer = response.json()
        except ValueError as exc:
            raise RerankError(f"{self.where} answered no JSON") from exc
        return scores_from(answer, len(documents), self.where)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def reranker_from(settings: RerankSettings) -> Reranker | None:
    """The configured reranker; None when reranking is off (the default)."""
    provider = settings.rerank_provider
    if provider == "none":
        return None
    if provider == "voyage":
        return VoyageReranker(settings.rerank_model, api_key=settings.rerank_api_key,
                              base_url=settings.rerank_base_url, timeout_s=settings.rerank_timeout_s)
    if not settings.rerank_base_url:  # the settings refuse this at start-up; a hand-built one may not
        raise ValueError(f"MCP_MEMORY_RERANK_BASE_URL: the {provider} reranker needs the endpoint's URL")
    return HTTPReranker(settings.rerank_base_url, style=provider, model=settings.rerank_model,
                        api_key=settings.rerank_api_key, timeout_s=settings.rerank_timeout_s)


class Reranking:
    """The search's last stage when a reranker is configured: how many hits to ask the search
    for, and those hits in the reranker's order, or in their own when it fails."""

    def __init__(self, reranker: Reranker, *, top_n: int, timeout_s: float) -> None:
        self.reranker, self.top_n, self.timeout_s = reranker, top_n, timeout_s
        self.breaker = Breaker(threshold=BREAKER_FAILURES, cooldown_s=BREAKER_COOLDOWN_S, name="reranker")

    @classmethod
    def from_settings(cls, settings: RerankSettings) -> Reranking | None:
        reranker = reranker_from(settings)
        if reranker is None:
            return None
        return cls(reranker, top_n=settings.rerank_top_n, timeout_s=settings.rerank_timeout_s)

    def candidates(self, limit: int) -> int:
        """How many hits the search should find for `limit` to be chosen from."""
        return max(limit, self.top_n)

    async def _scores(self, query: str, documents: list[str]) -> list[float] | None:
        """The reranker's scores, or None (logged) when it fails, times out or is being skipped."""
        if not self.breaker.allows():
            return None
        try:
            with anyio.fail_after(self.timeout_s):
                scores = await self.reranker.rerank(query, documents)
            if len(scores) != len(documents):
                raise RerankError(f"{self.reranker.where} scored {len(scores)} of {len(documents)} documents")
        except Exception as exc:  # noqa: BLE001 - a reranker never fails a search
            self.breaker.failed()
            reason = (f"{self.reranker.where} gave no answer within {self.timeout_s:g} s"
                      if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__)
            log.warning("search results kept in their own order (the reranker failed%s): %s",
                        "; skipping it for a while" if self.breaker.open else "", reason)
            return None
        except BaseException:
            if self.breaker.open:  # a cancelled probe must not leave the breaker waiting on it
                self.breaker.failed()
            raise
        if self.breaker.succeeded():
            log.info("the reranker answers again: %s", self.reranker.where)
        return scores

    async def apply(self, repo: MemoryRepository, p: Principal, query: str, hits: list[SearchHit], *,
                    limit: int, explain: bool = False) -> list[SearchHit]:
        """The first `top_n` of `hits` in the reranker's order (ties keep theirs), the rest after
        them, cut to `limit`. Each hit keeps the score of the place it holds (the search's scores,
        best first, as reorder.placed_scores does); with `explain`, its `rerank` entry is the
        reranker's score (null: not reranked)."""
        head, tail = hits[:self.top_n], hits[self.top_n:]
        query = query.strip()
        if len(head) < 2 or not query:
            return self._explained(hits[:limit], {}, explain)
        # `hits` are what this principal's search found: memories it may read, visible under its
        # scope and row-level security, so the reranker is sent nothing the principal could not read.
        # The full text of those cut in their snippet is read the same way (peek_many, under `p`).
        cut = [h.id for h in head if h.truncated]
        full = {m.id: m.content for m in await repo.peek_many(p, cut)} if cut else {}
        documents = [_document(h, full.get(h.id)) for h in head]
        scores = await self._scores(query, documents)
        if scores is None:
            return self._explained(hits[:limit], {}, explain)
        order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: ties keep the search's order
        places = sorted((h.score for h in head), reverse=True)
        ranked = [head[i].model_copy(update={"score": place}) for i, place in zip(order, places, strict=True)]
        by_id = {h.id: scores[i] for i, h in enumerate(head)}
        return self._explained([*ranked, *tail][:limit], by_id, explain)

    @staticmethod
    def _explained(hits: Sequence[SearchHit], scores: dict[Any, float], explain: bool) -> list[SearchHit]:
        if not explain:
            return list(hits)
        return [h.model_copy(update={"explain": {**(h.explain or {}), "rerank": (
            round(scores[h.id], 6) if h.id in scores else None)}}) for h in hits]


def _document(hit: SearchHit, content: str | None) -> str:
    text = content if content is not None else hit.snippet
    return (f"{hit.title}\n{text}" if hit.title else text)[:DOCUMENT_CHARS]
