"""Confirm tokens for forgetting by query: issued by a preview for exactly its memories, consumed
once by execute in the same transaction as the forgetting."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from ..errors import Conflict, InvalidInput, NotFound
from ..models import Memory, Principal
from .memories import MemoryRepository

_UNKNOWN = "unknown forget token (mistyped, or issued to another session); run a preview to get one"


class ForgetTokenRepository:
    def __init__(self, memories: MemoryRepository) -> None:
        self.memories = memories

    async def issue(self, p: Principal, token_hash: str, versions: dict[UUID, int], *, query: str | None,
                    filters: dict[str, Any] | None, force: bool, ttl_s: int) -> datetime:
        async with self.memories.transaction(p) as conn:
            return await conn.fetchval(
                """INSERT INTO forget_tokens (user_id, token_hash, actor, agent_id, project_id, memory_ids,
                                              versions, query, filters, force, expires_at)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))
                   RETURNING expires_at""",
                p.user_id, token_hash, p.actor, p.agent_id, p.project_id, list(versions),
                list(versions.values()), query, filters, force, float(ttl_s))

    async def execute(self, p: Principal, token_hash: str, subset: Sequence[UUID] | None, *,
                      reason: str | None, may_override_pin: bool, request_id: str | None) -> list[Memory]:
        """Consume the token and forget its memories (or the given subset of them), all or nothing.
        Concurrent executes of one token serialize on its row: exactly one wins."""
        async with self.memories.transaction(p) as conn:
            token = await conn.fetchrow(
                "SELECT *, expires_at < now() AS expired FROM forget_tokens "
                "WHERE user_id = $1 AND token_hash = $2 FOR UPDATE",
                p.user_id, token_hash)
            if token is None or (token["actor"], token["agent_id"], token["project_id"]) != \
                    (p.actor, p.agent_id, p.project_id):
                raise NotFound(_UNKNOWN)
            if token["used_at"] is not None:
                raise Conflict("this forget token was already used; run a new preview")
            if token["expired"]:
                raise Conflict("this forget token has expired; run the preview again")
            versions = dict(zip(token["memory_ids"], token["versions"], strict=True))
            targets = list(dict.fromkeys(subset)) if subset else list(versions)
            outside = [i for i in targets if i not in versions]
            if outside:
                raise InvalidInput(f"id {', '.join(map(str, outside))} was not in this token's preview; "
                                   "nothing was forgotten")
            forgotten = await self.memories.soft_delete_in(
                conn, p, targets, reason=reason, may_override_pin=may_override_pin and token["force"],
                request_id=request_id, versions=versions)
            await conn.execute("UPDATE forget_tokens SET used_at = now() WHERE user_id = $1 AND token_hash = $2",
                               p.user_id, token_hash)
            return forgotten

    async def describe(self, p: Principal, token_hash: str) -> list[tuple[UUID, str | None, str]]:
        """(id, title, content) of a live token's memories, for a confirmation prompt; [] if the
        token is unknown, foreign, used or expired (execute then says which)."""
        async with self.memories.transaction(p) as conn:
            rows = await conn.fetch(
                """SELECT m.id, m.title, m.content
                   FROM forget_tokens t JOIN memories m ON m.user_id = t.user_id AND m.id = ANY(t.memory_ids)
                   WHERE t.user_id = $1 AND t.token_hash = $2 AND t.actor = $3
                     AND t.agent_id IS NOT DISTINCT FROM $4 AND t.project_id IS NOT DISTINCT FROM $5
                     AND t.used_at IS NULL AND t.expires_at > now() AND m.deleted_at IS NULL
                   ORDER BY m.occurred_at DESC""",
                p.user_id, token_hash, p.actor, p.agent_id, p.project_id)
        return [(r["id"], r["title"], r["content"]) for r in rows]
