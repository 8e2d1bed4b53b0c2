"""Memories: create, read, update, forget, restore, history. Every method takes the caller's
Principal and sees only what it may see; every mutation writes its history row in the same
transaction."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import numpy as np

from ..errors import Conflict, NotFound, PermissionDenied
from ..models import (
    HistoryEntry,
    ListOrder,
    Memory,
    MemoryFilter,
    NewMemory,
    Principal,
    ScopeInfo,
    human_age,
    memory_uri,
)
from . import jobs
from .sql import Sql, filtered, local_transaction, visible

# Fields whose old and new values the history keeps.
TRACKED = ("kind", "title", "content", "tags", "metadata", "importance", "confidence", "pinned",
           "priority", "source", "occurred_at", "agent_id", "project_id", "superseded_by")


def to_memory(row: asyncpg.Record, now: datetime | None = None) -> Memory:
    return Memory(
        id=row["id"],
        uri=memory_uri(row["id"]),
        kind=row["kind"],
        title=row["title"],
        content=row["content"],
        tags=list(row["tags"]),
        metadata=row["metadata"],
        importance=round(row["importance"], 4),
        confidence=round(row["confidence"], 4),
        pinned=row["pinned"],
        priority=row["priority"],
        source=row["source"],
        scope=ScopeInfo.of(row["agent_id"], row["project_id"]),
        occurred_at=row["occurred_at"],
        age=human_age(row["occurred_at"], now),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
        access_count=row["access_count"],
        last_accessed=row["last_accessed"],
        deleted_at=row["deleted_at"],
        deleted_reason=row["deleted_reason"],
        superseded_by=row["superseded_by"],
    )


def _snapshot(row: asyncpg.Record | dict[str, Any], fields: Iterable[str] = TRACKED) -> dict[str, Any]:
    return {k: row[k] for k in fields}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float | int):
        return math.isclose(a, b, abs_tol=1e-6)  # real columns round-trip inexactly
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return a == b


def _ids_text(ids: Iterable[UUID]) -> str:
    return ", ".join(str(i) for i in ids)


def _own(p: Principal, rows: Iterable[asyncpg.Record], verb: str) -> None:
    """A credential limited to some agents / projects reads what they share with others but
    changes only what is theirs."""
    shared = [r["id"] for r in rows if (p.agent_confined and r["agent_id"] is None)
              or (p.project_confined and r["project_id"] is None)]
    if shared:
        raise PermissionDenied(f"memory {_ids_text(shared)} is shared beyond this credential's agents and "
                               f"projects; it cannot {verb} it. Nothing was changed")


_INSERT_COLUMNS = ("id", "user_id", "agent_id", "project_id", "kind", "title", "content", "content_hash",
                   "tags", "metadata", "importance", "confidence", "pinned", "priority", "source", "embedding",
                   "embedding_model")
_DERIVED = ("embedding", "embedding_model")  # follow the content; never compared, never in history


class MemoryRepository:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        # Set when a decisions provider is configured: each new memory gets a decision job in
        # its write's transaction, tried this many times (decisions/jobs.py).
        self.decision_attempts: int | None = None

    async def _enqueue(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID],
                       explicit: Sequence[UUID] = ()) -> None:
        if self.decision_attempts is not None:
            await jobs.enqueue(conn, p, ids, explicit=explicit, max_attempts=self.decision_attempts)

    @asynccontextmanager
    async def transaction(self, p: Principal, **gucs: str) -> AsyncIterator[asyncpg.Connection]:
        """One short transaction tagged with the caller's user (row-level security keys on it);
        `gucs` are further transaction-local settings (`hnsw__ef_search` sets hnsw.ef_search)."""
        settings = {f"mcp_memory.{name}": value or "" for name, value in
                    (("user_id", p.user_id), ("agent_id", p.agent_id), ("project_id", p.project_id))}
        settings |= {name.replace("__", "."): value for name, value in gucs.items()}
        async with local_transaction(self.pool, settings) as conn:
            yield conn

    async def _history(self, conn: asyncpg.Connection, p: Principal, rows: Sequence[tuple[UUID, str, Any, Any]],
                       reason: str | None, request_id: str | None) -> None:
        await conn.executemany(
            """INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, client, request_id, reason)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
            [(p.user_id, mid, event, old, new, p.actor, p.client, request_id, reason)
             for mid, event, old, new in rows],
        )

    # --- writes -------------------------------------------------------------------------------

    async def insert(self, p: Principal, new: NewMemory, *, idempotency_key: str | None = None,
                     request_hash: str | None = None, supersedes: Sequence[UUID] = (),
                     request_id: str | None = None) -> tuple[Memory, bool]:
        """Store a memory; returns (memory, created). An identical live text in the same scope,
        or an idempotency key seen before with the same request (`request_hash`), returns the
        existing memory instead; the key with another request is a conflict. `supersedes` marks
        older memories as replaced by this one, in the same transaction."""
        new_id = uuid4()
        async with self.transaction(p) as conn:
            if idempotency_key is not None:
                claimed = await conn.fetchval(
                    """INSERT INTO idempotency_keys (user_id, key, memory_id, request_hash) VALUES ($1, $2, $3, $4)
                       ON CONFLICT DO NOTHING RETURNING memory_id""",
                    p.user_id, idempotency_key, new_id, request_hash)
                if claimed is None:
                    earlier = await conn.fetchrow(
                        "SELECT memory_id, request_hash FROM idempotency_keys WHERE user_id = $1 AND key = $2",
                        p.user_id, idempotency_key)
                    if earlier["request_hash"] is not None and earlier["request_hash"] != request_hash:
                        raise Conflict("idempotency_key was already used for a different request (other content or "
                                       "fields); a key names one request, so use a new key. Nothing was written")
                    row = await self._fetch(conn, p, [earlier["memory_id"]], deleted=None)
                    if not row:
                        raise Conflict("idempotency_key was already used for a memory outside this "
                                       "session's scope; use a new key")
                    return to_memory(row[0]), False
            row, existing = await self._insert_row(conn, p, new, new_id)
            if row is None:
                if existing is None:
                    raise Conflict("an identical memory was being written and forgotten at the same time; retry")
                row = existing
                if idempotency_key is not None:
                    await conn.execute(
                        "UPDATE idempotency_keys SET memory_id = $3 WHERE user_id = $1 AND key = $2",
                        p.user_id, idempotency_key, row["id"])
                await self._supersede(conn, p, row["id"], supersedes, request_id)
                return to_memory(row), False
            await self._history(conn, p, [(row["id"], "ADD", None, _snapshot(row))], None, request_id)
            await self._supersede(conn, p, row["id"], supersedes, request_id)
            await self._enqueue(conn, p, [row["id"]], supersedes)
            return to_memory(row), True

    async def _insert_row(self, conn: asyncpg.Connection, p: Principal, new: NewMemory,
                          new_id: UUID) -> tuple[asyncpg.Record | None, asyncpg.Record | None]:
        """(the inserted row, None), or (None, the live twin with the same text in the scope)."""
        values = {"id": new_id, "user_id": p.user_id, **new.model_dump(exclude={"occurred_at"})}
        if new.embedding is not None:
            values["embedding"] = np.asarray(new.embedding, dtype=np.float32)
        q = Sql()
        cols = list(_INSERT_COLUMNS)
        placeholders = [q.arg(values[c]) for c in cols]
        cols.append("occurred_at")
        placeholders.append(f"coalesce({q.arg(new.occurred_at)}::timestamptz, now())")
        existing = None
        for _ in range(3):  # the twin we collided with may be forgotten before we read it: try again
            row = await conn.fetchrow(
                f"""INSERT INTO memories ({", ".join(cols)}) VALUES ({", ".join(placeholders)})
                    ON CONFLICT (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), content_hash)
                    WHERE deleted_at IS NULL DO NOTHING RETURNING *""",
                *q.args)
            if row is not None:
                break
            existing = await conn.fetchrow(
                """SELECT * FROM memories WHERE user_id = $1 AND agent_id IS NOT DISTINCT FROM $2
                   AND project_id IS NOT DISTINCT FROM $3 AND content_hash = $4 AND deleted_at IS NULL""",
                p.user_id, new.agent_id, new.project_id, new.content_hash)
            if existing is not None:
                break
        return row, existing

    async def insert_many(self, p: Principal, news: Sequence[NewMemory],
                          request_id: str | None = None) -> list[tuple[Memory, bool]]:
        """Store memories in one transaction, all or none: (memory, created) for each, in order; a
        text already live in its scope (or earlier in the batch) returns that memory."""
        rows: list[tuple[asyncpg.Record, bool]] = []
        async with self.transaction(p) as conn:
            for new in news:
                row, existing = await self._insert_row(conn, p, new, uuid4())
                if row is None and existing is None:
                    raise Conflict("an identical memory was being written and forgotten at the same time; retry")
                rows.append((row, True) if row is not None else (existing, False))
            await self._history(conn, p, [(r["id"], "ADD", None, _snapshot(r)) for r, created in rows if created],
                                None, request_id)
            await self._enqueue(conn, p, [r["id"] for r, created in rows if created])
        return [(to_memory(r), created) for r, created in rows]

    async def _supersede(self, conn: asyncpg.Connection, p: Principal, successor: UUID,
                         older: Sequence[UUID], request_id: str | None) -> None:
        older = [i for i in dict.fromkeys(older)]
        if not older:
            return
        if successor in older:
            raise Conflict("a memory cannot supersede itself")
        rows = await self._fetch(conn, p, older, deleted=False, lock=True)
        missing = set(older) - {r["id"] for r in rows}
        if missing:
            raise NotFound(f"supersedes names no live memory {_ids_text(sorted(missing))} in this session's "
                           "scope; nothing was written")
        _own(p, rows, "supersede")
        await conn.execute("UPDATE memories SET superseded_by = $3, updated_at = now(), version = version + 1 "
                           "WHERE user_id = $1 AND id = ANY($2::uuid[])", p.user_id, older, successor)
        await self._history(conn, p, [(r["id"], "UPDATE", {"superseded_by": r["superseded_by"]},
                                       {"superseded_by": successor}) for r in rows],
                            f"superseded by {successor}", request_id)

    async def update(self, p: Principal, memory_id: UUID, changes: dict[str, Any], *, reason: str | None,
                     if_version: int | None, may_override_pin: bool,
                     request_id: str | None = None) -> tuple[Memory, bool]:
        """Apply the fields that differ; returns (memory, changed)."""
        async with self.transaction(p) as conn:
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
                return to_memory(row), False
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
            await self._history(conn, p, [(memory_id, event, _snapshot(row, tracked), _snapshot(updated, tracked))],
                                reason, request_id)
            return to_memory(updated), True

    async def soft_delete(self, p: Principal, ids: Sequence[UUID], *, reason: str | None,
                          may_override_pin: bool, request_id: str | None = None) -> list[Memory]:
        """All or nothing: every id must be live and visible, else nothing changes."""
        async with self.transaction(p) as conn:
            return await self.soft_delete_in(conn, p, ids, reason=reason, may_override_pin=may_override_pin,
                                             request_id=request_id)

    async def soft_delete_in(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], *,
                             reason: str | None, may_override_pin: bool, request_id: str | None,
                             versions: dict[UUID, int] | None = None) -> list[Memory]:
        """soft_delete inside the caller's transaction. With `versions`, every memory must still
        be at the version the caller saw."""
        rows = await self._fetch(conn, p, ids, deleted=False, lock=True)
        missing = set(ids) - {r["id"] for r in rows}
        if missing:
            raise NotFound(f"no live memory with id {_ids_text(sorted(missing))} in this session's scope "
                           "(already forgotten? see memory_restore); nothing was forgotten")
        _own(p, rows, "forget")
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
        await self._history(conn, p, [(r["id"], "DELETE", None, {"deleted_at": r["deleted_at"]})
                                      for r in deleted], reason, request_id)
        return [to_memory(r) for r in deleted]

    async def restore(self, p: Principal, ids: Sequence[UUID], *, reason: str | None,
                      may_restore_others: bool, request_id: str | None = None) -> list[Memory]:
        """All or nothing. Undoing someone else's forget (another key, the retention sweep) is an
        admin's call."""
        async with self.transaction(p) as conn:
            rows = await self._fetch(conn, p, ids, deleted=True, lock=True)
            missing = set(ids) - {r["id"] for r in rows}
            if missing:
                raise NotFound(f"no forgotten memory with id {_ids_text(sorted(missing))} in this session's "
                               "scope; nothing was restored")
            _own(p, rows, "restore")
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
            await self._history(conn, p, [(r["id"], "RESTORE", {"deleted_at": old[r["id"]]}, {"deleted_at": None})
                                          for r in restored], reason, request_id)
            return [to_memory(r) for r in restored]

    # --- reads --------------------------------------------------------------------------------

    async def _fetch(self, conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], *,
                     deleted: bool | None, lock: bool = False) -> list[asyncpg.Record]:
        q = Sql()
        where = [visible(q, p), f"m.id = ANY({q.arg(list(ids))}::uuid[])"]
        if deleted is not None:
            where.append("m.deleted_at IS NOT NULL" if deleted else "m.deleted_at IS NULL")
        sql = f"SELECT * FROM memories m WHERE {' AND '.join(where)} ORDER BY m.id"
        return await conn.fetch(sql + (" FOR UPDATE" if lock else ""), *q.args)

    async def peek_many(self, p: Principal, ids: Sequence[UUID]) -> list[Memory]:
        """Live, visible memories among `ids`, in the order given; no access is counted."""
        async with self.transaction(p) as conn:
            rows = {r["id"]: r for r in await self._fetch(conn, p, ids, deleted=False)}
        return [to_memory(rows[i]) for i in ids if i in rows]

    async def get_many(self, p: Principal, ids: Sequence[UUID]) -> list[Memory]:
        """Live, visible memories among `ids`, counting the access (bookkeeping, never ranking)."""
        q = Sql()
        where = [visible(q, p), "m.deleted_at IS NULL", f"m.id = ANY({q.arg(list(ids))}::uuid[])"]
        async with self.transaction(p) as conn:
            rows = await conn.fetch(
                f"""UPDATE memories m SET access_count = access_count + 1, last_accessed = now()
                    WHERE {' AND '.join(where)} RETURNING *""", *q.args)
        by_id = {r["id"]: r for r in rows}
        return [to_memory(by_id[i]) for i in ids if i in by_id]

    async def list(self, p: Principal, f: MemoryFilter | None, order: ListOrder, limit: int,
                   after: Sequence[Any] | None = None) -> tuple[list[Memory], list[Any] | None]:
        """One page in keyset order; returns it with the sort key to pass as `after` for the next
        page (None on the last page)."""
        q = Sql()
        where = [visible(q, p), "m.deleted_at IS NULL", *filtered(q, f)]
        keys = ["occurred_at", "id"] if order != "importance" else ["importance", "occurred_at", "id"]
        direction = "ASC" if order == "oldest" else "DESC"
        if after is not None:
            op = ">" if order == "oldest" else "<"
            # Compare in the column's own types: a real importance read back as a double
            # must find exactly itself again.
            casts = {"importance": "::real", "occurred_at": "::timestamptz", "id": "::uuid"}
            bounds = ", ".join(f"{q.arg(v)}{casts[k]}" for k, v in zip(keys, after, strict=True))
            where.append(f"({', '.join(f'm.{k}' for k in keys)}) {op} ({bounds})")
        sql = (f"SELECT * FROM memories m WHERE {' AND '.join(where)} "
               f"ORDER BY {', '.join(f'm.{k} {direction}' for k in keys)} LIMIT {q.arg(limit + 1)}")
        async with self.transaction(p) as conn:
            rows = await conn.fetch(sql, *q.args)
        next_key = [rows[limit - 1][k] for k in keys] if len(rows) > limit else None
        return [to_memory(r) for r in rows[:limit]], next_key

    async def history(self, p: Principal, memory_id: UUID, limit: int) -> list[HistoryEntry]:
        async with self.transaction(p) as conn:
            if not await self._fetch(conn, p, [memory_id], deleted=None):
                raise NotFound(f"no memory {memory_id} in this session's scope")
            rows = await conn.fetch(
                """SELECT * FROM memory_history WHERE user_id = $1 AND memory_id = $2
                   ORDER BY seq LIMIT $3""", p.user_id, memory_id, limit)
        return [HistoryEntry(seq=r["seq"], event=r["event"], actor=r["actor"], client=r["client"],
                             reason=r["reason"], old=r["old"], new=r["new"], created_at=r["created_at"])
                for r in rows]
