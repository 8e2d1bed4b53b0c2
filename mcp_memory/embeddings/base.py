"""What every embedding provider offers, and the error callers fail open on.

An :class:`Embedder` turns memory text into vectors for pgvector. Documents (memories) and queries
go through different calls because some models embed them differently (e5's ``passage:`` /
``query:`` prefixes, Voyage's ``input_type``). Vectors come back L2-normalised, so cosine
similarity, inner product and Euclidean distance rank alike.

Nothing here loads a model: local providers load on their first call, in a worker thread, so
importing this package or constructing an embedder never delays the MCP handshake.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from mcp_memory.errors import Unavailable


class EmbeddingError(Unavailable):
    """The embedder could not produce vectors (model missing, service down, bad answer).

    A subclass of :class:`~mcp_memory.errors.Unavailable`: a write stores the memory without an
    embedding and a search falls back to full text and trigram, instead of failing the call.
    """


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model.

    ``model`` names the vectors' space (what the database records next to them); ``dimension``
    is their length. A provider whose dimension is discovered from the service's first answer
    (``openai-compatible`` or an unknown Voyage model, when none is configured) reports 0 until
    then: :func:`resolve_dimension` asks it.
    """

    model: str
    dimension: int

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One unit vector per text, in order; batched internally."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The unit vector of a search query."""
        ...


@runtime_checkable
class QueryBatches(Protocol):
    """An embedder that embeds several search queries in one call: a question and the same
    question without its subject (retrieval/focus.py) cost one run of a local model, not two."""

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """One unit vector per query, in order."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """An embedder that can say how many tokens its tokenizer makes of each text, before any cut
    (special tokens included): what tells a text another tokenizer cut short (importing/peer_vectors.py)."""

    async def count_tokens(self, texts: list[str]) -> list[int]:
        ...


async def resolve_dimension(embedder: Embedder) -> int:
    """The embedder's dimension, embedding one probe query if it is not known yet."""
    if embedder.dimension:
        return embedder.dimension
    vector = await embedder.embed_query("dimension probe")
    return embedder.dimension or len(vector)


def batched(items: Sequence[str], size: int) -> list[Sequence[str]]:
    """Consecutive slices of at most ``size`` items."""
    if size < 1:
        raise ValueError("batch size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items), size)]


def normalize_rows(vectors: list[list[float]]) -> list[list[float]]:
    """L2-normalise each vector (a zero vector stays zero)."""
    out: list[list[float]] = []
    for vector in vectors:
        norm = math.sqrt(math.fsum(x * x for x in vector))
        out.append([x / norm for x in vector] if norm > 0 else list(vector))
    return out


class RemoteEmbedder:
    """What the API-backed embedders (OpenAI and compatible servers, Voyage) share: connection
    settings, a client created on first use, batching, and the check of every answer."""

    model: str
    dimension: int

    def _configure(self, model: str, dimension: int | None, *, api_key: str | None, base_url: str | None,
                   batch_size: int, timeout: float, max_retries: int) -> None:
        self.model = model
        self.dimension = dimension or 0
        self.batch_size = batch_size
        self._dimension_configured = dimension is not None
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._max_retries = max_retries
        self._client: Any = None

    async def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        """One batch; `input_type` is "document" or "query"."""
        raise NotImplementedError

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batched(texts, self.batch_size):
            out.extend(await self._embed(list(batch), "document"))
        return out

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([text], "query"))[0]

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batched(texts, self.batch_size):
            out.extend(await self._embed(list(batch), "query"))
        return out

    def _accept(self, vectors: list[list[float]], count: int, source: str) -> list[list[float]]:
        """A service's answer, checked and normalised: one vector per text, all of one length,
        and that length the embedder's dimension (learned from the first answer when none was
        configured)."""
        if len(vectors) != count:
            raise EmbeddingError(f"{source}: {len(vectors)} vectors for {count} texts")
        lengths = {len(v) for v in vectors}
        if len(lengths) != 1 or 0 in lengths:
            raise EmbeddingError(f"{source}: vectors of lengths {sorted(lengths)}")
        (length,) = lengths
        if not self.dimension:
            self.dimension = length
        elif length != self.dimension:
            how = "configured" if self._dimension_configured else "first seen"
            raise EmbeddingError(f"{source}: model {self.model} returned {length} dimensions, {how} {self.dimension}")
        return normalize_rows(vectors)
