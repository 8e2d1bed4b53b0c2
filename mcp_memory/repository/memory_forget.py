"""Forgetting (a soft delete: the row stays, marked) and restoring memories, all or nothing, with
their history rows in the same transaction. Only the retention sweep (maintenance.py) removes rows."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from ..errors import Conflict, PermissionDenied
from ..models import Memory, Principal
from .memory_rows import _ids_text, to_memory
from .memory_store import MemoryStore, history


class MemoryForget(MemoryStore):
    async def soft_delete(self, p: Principal, ids: Sequence[UUID], *, reason: str | None,
                          may_override_pin: bool, request_id: str | None = None) -> list[Memory]:
        """All or nothing: every id must be live and visible, else nothing changes."""
        async with self.writing(p) as conn:
            return await self.soft_delete_in(conn, p, ids, reason=reason, may_override_pin=may_override_pin,
                                             request_id=request_id)

    async def soft_delete_in(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], *,
                             reason: str | None, may_override_pin: bool, request_id: str | None,
                             versions: dict[UUID, int] | None = None) -> list[Memory]:
        """soft_delete inside the caller's transaction. With `versions`, every memory must still
        be at the version the caller saw."""
        rows = await self._lock_own(conn, p, ids, deleted=False, verb="forget", missing=(
            "no live memory with id {ids} in this session's scope (already forgotten? see memory_restore); "
            "nothing was forgotten"))
        if versions is not None:
            changed = [r["id"] for r in rows if r["version"] != versions[r["id"]]]
            if changed:
                raise Conflict(f"memory {_ids_text(changed)} changed since the preview; preview again. "
                               "Nothing was forgotten")
        pinned = [r["id"] for r in rows if r["pinned"]]
        if pinned and not may_override_pin:
            raise PermissionDenied(f"memory {_ids_text(pinned)} is pinned: forgetting it needs force=true "
                                   "from an admin; nothing was forgotten")
        deleted = await conn.fetch(
            """UPDATE memories SET deleted_at = now(), deleted_reason = $3
               WHERE user_id = $1 AND id = ANY($2::uuid[]) RETURNING *""",
            p.user_id, list(ids), reason)
        await history(conn, p, [(r["id"], "DELETE", None, {"deleted_at": r["deleted_at"]})
                                for r in deleted], reason, request_id)
        return [to_memory(r) for r in deleted]

    async def restore(self, p: Principal, ids: Sequence[UUID], *, reason: str | None,
                      may_restore_others: bool, request_id: str | None = None) -> list[Memory]:
        """All or nothing. Undoing someone else's forget (another key, the retention sweep) is an
        admin's call."""
        async with self.writing(p) as conn:
            rows = await self._lock_own(conn, p, ids, deleted=True, verb="restore", missing=(
                "no forgotten memory with id {ids} in this session's scope; nothing was restored"))
            if not may_restore_others:
                by = await conn.fetch(
                    """SELECT DISTINCT ON (memory_id) memory_id, actor FROM memory_history
                       WHERE user_id = $1 AND memory_id = ANY($2::uuid[]) AND event = 'DELETE'
                       ORDER BY memory_id, seq DESC""", p.user_id, list(ids))
                others = sorted(r["memory_id"] for r in by if r["actor"] != p.actor)
                if others:
                    raise PermissionDenied(f"memory {_ids_text(others)} was forgotten by another principal; "
                                           "restoring it needs the 'admin' permission; nothing was restored")
            try:
                restored = await conn.fetch(
                    """UPDATE memories SET deleted_at = NULL, deleted_reason = NULL
                       WHERE user_id = $1 AND id = ANY($2::uuid[]) RETURNING *""",
                    p.user_id, list(ids))
            except asyncpg.UniqueViolationError:
                raise Conflict("an identical memory was written since this one was forgotten, so restoring "
                               "it would duplicate it; nothing was restored") from None
            old = {r["id"]: r["deleted_at"] for r in rows}
            await history(conn, p, [(r["id"], "RESTORE", {"deleted_at": old[r["id"]]}, {"deleted_at": None})
                                    for r in restored], reason, request_id)
            return [to_memory(r) for r in restored]
