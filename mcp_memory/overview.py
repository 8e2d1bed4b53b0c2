"""Read-only views of a session's memories for resources and prompts: counts, the pinned core
under a budget, browse pages under a size cap, and completion values. Knows nothing of MCP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from uuid import UUID

from . import context, cursors
from .config import ServerSettings
from .cursors import Cursors
from .models import BriefPage, CoreMemories, MemoryBrief, MemoryFilter, MemoryPage, Principal, Stats
from .permissions import require
from .repository import MemoryRepository
from .repository.jobs import JobRepository
from .repository.overview import OverviewRepository
from .validation import Validator

# MemoryService.list: a page of memories in keyset order.
Lister = Callable[..., Awaitable[MemoryPage]]

CORE_SCAN = 200  # pinned memories considered; more than any budget holds


class Overview:
    def __init__(self, repo: MemoryRepository, settings: ServerSettings, embedding_model: str | None, lister: Lister,
                 signer: Cursors, check: Validator) -> None:
        self.repo = OverviewRepository(repo)
        self.settings = settings
        self.embedding_model = embedding_model
        self.list = lister
        self.cursors = signer
        self.check = check

    async def stats(self, p: Principal, top_tags: int = 10) -> Stats:
        require(p, "read")
        stats = await self.repo.stats(p, max(top_tags, 0))
        stats.embedding_model = self.embedding_model
        stats.jobs = await JobRepository(self.repo.memories).counts(p)
        return stats

    async def core(self, p: Principal, model: str | None = None) -> CoreMemories:
        """Pinned memories in priority order, cut at whole memories to the model's budget."""
        require(p, "read")
        budget = context.budget_for(model, self.settings.core_budget_chars, self.settings.core_budgets)
        pinned = await self.repo.pinned(p, CORE_SCAN)
        kept, used = context.fit(pinned, budget)
        return CoreMemories(model=model, budget_chars=budget, used_chars=used, memories=kept,
                            omitted=len(pinned) - len(kept))

    async def browse(self, p: Principal, f: MemoryFilter | None = None, cursor: str | None = None) -> BriefPage:
        """A page of briefs, newest first: at most resource_page_size of them and no more than
        resource_page_chars of JSON (at least one, so paging always moves on)."""
        page = await self.list(p, f, order="recent", limit=self.settings.resource_page_size, cursor=cursor)
        briefs: list[MemoryBrief] = []
        size = 0
        for m in page.memories:
            brief = MemoryBrief.of(m, self.settings.snippet_chars)
            size += len(brief.model_dump_json())
            if briefs and size > self.settings.resource_page_chars:
                last = page.memories[len(briefs) - 1]
                return BriefPage(memories=briefs, next_cursor=self.cursors.encode(
                    "recent", self.check.filter(f), cursors.sort_key("recent", last)))
            briefs.append(brief)
        return BriefPage(memories=briefs, next_cursor=page.next_cursor)

    async def tags(self, p: Principal, prefix: str, limit: int = 20) -> list[str]:
        require(p, "read")
        return [tag for tag, _ in await self.repo.tags(p, prefix, limit)]

    async def ids(self, p: Principal, prefix: str, limit: int = 20) -> list[UUID]:
        require(p, "read")
        return await self.repo.ids(p, prefix, limit)
