"""The service's embedder behind a counter of the questions and texts it embeds (model runs, not
the caches' answers), for tests that say a search embeds a question or a text, or does not."""

from __future__ import annotations

from typing import Any

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.repository import MemoryRepository
from mcp_memory.repository.embeddings import EmbeddingRepository
from mcp_memory.service import MemoryService
from mcp_memory.vectors import Vectors


class CountingQueries:
    """The service's embedder, counting the questions (`asked`, and each call's in `query_calls`)
    and texts (`embedded`) it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model, self.dimension = inner, inner.model, inner.dimension
        self.asked: list[str] = []
        self.query_calls: list[list[str]] = []
        self.embedded: list[str] = []

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        self.asked.append(text)
        self.query_calls.append([text])
        return await self.inner.embed_query(text)

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        self.asked.extend(texts)
        self.query_calls.append(list(texts))
        return await self.inner.embed_queries(texts)


def counting_service(database: Database, service: MemoryService, settings: Settings
                     ) -> tuple[MemoryService, CountingQueries]:
    """A service on `database` whose embedder is `service`'s behind a `CountingQueries`, with a
    query cache of its own (empty)."""
    counting = CountingQueries(service.vectors.embedder)
    return MemoryService(MemoryRepository(database.pool), settings,
                         Vectors(counting, EmbeddingRepository(database.pool, database.admin), settings)), counting
