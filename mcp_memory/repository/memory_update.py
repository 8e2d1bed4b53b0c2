"""Changing a live memory's fields: only those that differ, with the version check, the pin guard
and one history row in the same transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from ..errors import Conflict, NotFound, PermissionDenied
from ..graph.keys import Key
from ..graph.name_forms import Name
from ..models import Memory, Principal
from ..validation import content_hash
from . import about_edits, graph, key_edits
from .deadlocks import again_if_stopped
from .memory_rows import TRACKED, _own, _same, _snapshot, to_memory
from .memory_store import MemoryStore, history
from .sql import Sql

_DERIVED = ("embedding", "embedding_model")  # follow the content; never compared, never in history


class MemoryUpdate(MemoryStore):
    async def update(self, p: Principal, memory_id: UUID, changes: dict[str, Any], *, reason: str | None,
                     if_version: int | None, may_override_pin: bool, request_id: str | None = None,
                     read_names: Callable[[str, str], list[Name]] | None = None,
                     key: Key | None = None, about: Sequence[Name] | None = None) -> tuple[Memory, bool]:
        """Apply the fields that differ; returns (memory, changed). A new text, kind or metadata gets
        its content hash from the memory as it will be (a turn's copy is known by its session and
        place too: validation.content_hash), read under the row's lock. A new text's names
        (`read_names(content, kind)`; None: left as they are) replace those read from the old one,
        and a new occurred_at moves its keyed facts' valid_from, and their attribute's links with it.
        The row is locked before the attribute's values and the names, a write of the same subject
        takes them the other way round: where PostgreSQL stops one of the two to break the wait, the
        update goes again from its start (nothing of it was kept). A `key` files its keyed facts
        under that attribute in the same transaction, as a person's key fix on the console does
        (key_edits.py: recorded, undoable); one the fix refuses leaves the fields unchanged too.
        `about` (a writer's names) files the memory about them instead, before any `key` (about_edits.py,
        recorded and undoable the same way)."""
        return await again_if_stopped(lambda: self._update(
            p, memory_id, changes, reason=reason, if_version=if_version, may_override_pin=may_override_pin,
            request_id=request_id, read_names=read_names, key=key, about=about))

    async def _update(self, p: Principal, memory_id: UUID, changes: dict[str, Any], *, reason: str | None,
                      if_version: int | None, may_override_pin: bool, request_id: str | None,
                      read_names: Callable[[str, str], list[Name]] | None, key: Key | None,
                      about: Sequence[Name] | None) -> tuple[Memory, bool]:
        async with self.writing(p) as conn:
            rows = await self._fetch(conn, p, [memory_id], deleted=False, lock=True)
            if not rows:
                raise NotFound(f"no memory {memory_id} in this session's scope")
            row = rows[0]
            _own(p, rows, "update")
            if if_version is not None and row["version"] != if_version:
                raise Conflict(f"memory {memory_id} is at version {row['version']}, not {if_version}: "
                               "someone changed it since you read it; re-read and retry")
            diff = {k: v for k, v in changes.items() if k not in _DERIVED and not _same(row[k], v)}
            if not diff:
                if key is None and about is None:
                    return to_memory(row), False
                await self._refile(conn, p, memory_id, key, about, reason)
                return to_memory(row), True
            if {"content", "kind", "metadata"} & diff.keys():
                after = {k: diff.get(k, row[k]) for k in ("content", "kind", "metadata")}
                known = content_hash(after["content"], after["kind"], after["metadata"])
                if known != row["content_hash"]:
                    diff["content_hash"] = known
            if "content" in diff:
                diff.update({k: changes.get(k) for k in _DERIVED})
                if diff["embedding"] is not None:
                    diff["embedding"] = np.asarray(diff["embedding"], dtype=np.float32)
            guarded = {"content", "title"} & diff.keys() or diff.get("pinned") is False
            if row["pinned"] and guarded and not may_override_pin:
                raise PermissionDenied(f"memory {memory_id} is pinned: changing its text or unpinning it "
                                       "needs force=true from an admin")
            q = Sql()
            sets = [f"{col} = {q.arg(val)}" for col, val in diff.items()]
            where = f"user_id = {q.arg(p.user_id)} AND id = {q.arg(memory_id)}"
            try:
                updated = await conn.fetchrow(
                    f"""UPDATE memories SET {", ".join(sets)}, version = version + 1, updated_at = now()
                        WHERE {where} RETURNING *""", *q.args)
            except asyncpg.UniqueViolationError:
                raise Conflict("another live memory in this scope already has this content; "
                               "update or forget that one instead") from None
            tracked = [k for k in diff if k in TRACKED]
            event = "UPDATE"
            if tracked == ["pinned"]:
                event = "PIN" if diff["pinned"] else "UNPIN"
            await history(conn, p, [(memory_id, event, _snapshot(row, tracked), _snapshot(updated, tracked))],
                          reason, request_id)
            names = read_names(updated["content"], updated["kind"]) if read_names and "content" in diff else None
            await graph.restate(conn, p, updated, names)
            await self._refile(conn, p, memory_id, key, about, reason)
            return to_memory(updated), True

    @staticmethod
    async def _refile(conn: asyncpg.Connection, p: Principal, memory_id: UUID, key: Key | None,
                      about: Sequence[Name] | None, reason: str | None) -> None:
        """Whom the memory is about, then the attribute its keyed facts state, as given."""
        if about is not None:
            await about_edits.fix_about(conn, p, memory_id, about, reason)
        if key is not None:
            await key_edits.fix_key(conn, p, memory_id, key, reason)
