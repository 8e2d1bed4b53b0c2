"""Forgetting, by ids at once or by query and filters through preview -> token -> execute: the
rules of MemoryService that concern it (a part of that class, split off for size)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from .errors import InvalidInput, PermissionDenied
from .models import ForgetCandidate, ForgetResult, ForgottenItem, Memory, MemoryFilter, Principal, SearchHit
from .retrieval import parse_query
from .turn_vectors import embed_again
from .validation import text, token_hash

if TYPE_CHECKING:
    from .config import Settings
    from .lexicon import Lexicon
    from .repository import MemoryRepository
    from .repository.forget_tokens import ForgetTokenRepository
    from .validation import Validator
    from .vectors import Vectors


class Forgetting:
    """Mixed into MemoryService, whose attributes and helpers these methods use."""

    repo: MemoryRepository
    tokens: ForgetTokenRepository
    settings: Settings
    check: Validator
    lexicon: Lexicon
    vectors: Vectors | None

    if TYPE_CHECKING:  # defined by MemoryService
        @staticmethod
        def require(p: Principal, permission: str) -> None: ...
        @staticmethod
        def _may_override_pin(p: Principal, force: bool) -> bool: ...
        async def _limit(self, p: Principal, action: str) -> None: ...
        def _changed(self, n: int) -> None: ...
        async def _search(self, p: Principal, parsed: Any, f: MemoryFilter | None, *, limit: int,
                          explain: bool = False, min_similarity: float | None = None) -> list[SearchHit]: ...

    async def forget(self, p: Principal, ids: list[UUID], *, reason: str | None = None, force: bool = False,
                     request_id: str | None = None) -> ForgetResult:
        """Forget these ids now (softly), all or none."""
        self.require(p, "forget")
        reason = text("reason", reason) if reason is not None else None
        await self._limit(p, "forget")
        gone = await self.repo.soft_delete(p, list(dict.fromkeys(ids)), reason=reason,
                                           may_override_pin=self._may_override_pin(p, force),
                                           request_id=request_id)
        self._changed(len(gone))
        return await self._forgotten(p, gone)

    async def _forgotten(self, p: Principal, gone: list[Memory]) -> ForgetResult:
        # The turn after a forgotten one held its text; it now holds the turn before that one.
        await embed_again(self.repo, self.vectors, p, [m.id for m in gone if m.kind == "episode"], itself=False)
        chars = self.settings.snippet_chars
        deleted_at = min(m.deleted_at for m in gone if m.deleted_at)
        return ForgetResult(
            mode="executed",
            forgotten=[ForgottenItem(id=m.id, title=m.title, snippet=m.content[:chars]) for m in gone],
            restorable_until=deleted_at + timedelta(days=self.settings.purge_after_days),
        )

    async def forget_preview(self, p: Principal, *, query: str | None = None, f: MemoryFilter | None = None,
                             ids: list[UUID] | None = None, limit: int = 10,
                             force: bool = False) -> ForgetResult:
        """What a forget would remove, and a single-use token bound to this principal and exactly
        those memories at their current versions."""
        self.require(p, "forget")
        force = self._may_override_pin(p, force)
        if limit > self.settings.forget_max_batch and not p.can("admin"):
            raise PermissionDenied(f"a preview may cover at most {self.settings.forget_max_batch} memories; "
                                   "narrow the query or filters, or ask an admin")
        f = self.check.filter(f)
        query = text("query", query).strip() if query else None
        if ids and (query or (f is not None and f.model_dump(exclude_none=True))):
            raise InvalidInput("preview either ids or a query / filters, not both")
        if ids:
            matches = await self.repo.peek_many(p, list(dict.fromkeys(ids)))
            scores: dict[UUID, float | None] = {}
        elif query:
            # Only what matches: words in common, or a vector close enough, never mere neighbours.
            hits = await self._search(p, parse_query(query, self.lexicon), f, limit=limit + 1,
                                      min_similarity=self.settings.forget_min_similarity)
            matches = await self.repo.peek_many(p, [h.id for h in hits])
            scores = {h.id: h.score for h in hits}
        elif f is not None and f.model_dump(exclude_none=True):
            matches, _ = await self.repo.list(p, f, "recent", limit + 1)
            scores = {}
        else:
            raise InvalidInput("say what to forget: ids, a query, or filters (kinds, tags, since, until, scope)")
        skipped = [m for m in matches if m.pinned and not force]
        chosen = [m for m in matches if not (m.pinned and not force)]
        more = len(chosen) > limit
        chosen = chosen[:limit]
        if not chosen:
            return ForgetResult(mode="preview", skipped_pinned=len(skipped))
        token = "fgt_" + secrets.token_urlsafe(24)
        expires_at = await self.tokens.issue(
            p, token_hash(token), {m.id: m.version for m in chosen}, query=query,
            filters=f.model_dump(mode="json", exclude_none=True) if f else None, force=force,
            ttl_s=self.settings.forget_token_ttl_s)
        chars = self.settings.snippet_chars
        return ForgetResult(
            mode="preview", token=token, expires_at=expires_at, skipped_pinned=len(skipped), more=more,
            candidates=[ForgetCandidate(id=m.id, title=m.title, snippet=m.content[:chars], score=scores.get(m.id),
                                        scope=m.scope, age=m.age) for m in chosen])

    async def forget_execute(self, p: Principal, token: str, *, ids: list[UUID] | None = None,
                             reason: str | None = None, request_id: str | None = None) -> ForgetResult:
        """Forget exactly the previewed memories (or a subset), consuming the token."""
        self.require(p, "forget")
        reason = text("reason", reason) if reason is not None else None
        await self._limit(p, "forget")
        gone = await self.tokens.execute(p, token_hash(text("token", token).strip()), ids, reason=reason,
                                         may_override_pin=p.can("admin"), request_id=request_id)
        self._changed(len(gone))
        return await self._forgotten(p, gone)

    async def describe_forget(self, p: Principal, token: str, limit: int = 5) -> str | None:
        """A human summary of what executing `token` would forget; None if it cannot be executed."""
        rows = await self.tokens.describe(p, token_hash(text("token", token).strip()))
        if not rows:
            return None
        lines = [f"- {(title + ': ') if title else ''}{content[:80]}" for _, title, content in rows[:limit]]
        if len(rows) > limit:
            lines.append(f"- … and {len(rows) - limit} more")
        return f"Forget {len(rows)} memor{'y' if len(rows) == 1 else 'ies'}? They stay restorable for " \
               f"{self.settings.purge_after_days} days.\n" + "\n".join(lines)
