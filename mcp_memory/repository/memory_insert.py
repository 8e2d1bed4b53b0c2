"""Writing new memories: one (with its idempotency key and the older memories it supersedes) or a
batch, each with its ADD history row and decision job in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID, uuid4

import asyncpg
import numpy as np
from pgvector import Vector

from ..encoding import to_json
from ..errors import Conflict
from ..graph import Said
from ..models import Memory, NewMemory, Principal
from . import graph
from .edges import Edge, link
from .fact_order import Relinked, write_links
from .memory_rows import _snapshot, to_memory
from .memory_store import MemoryStore, history
from .sql import Sql

_INSERT_COLUMNS = ("id", "user_id", "agent_id", "project_id", "kind", "title", "content", "content_hash",
                   "tags", "metadata", "importance", "confidence", "pinned", "priority", "source", "embedding",
                   "embedding_model")


class MemoryInsert(MemoryStore):
    async def insert(self, p: Principal, new: NewMemory, new_id: UUID, *, idempotency_key: str | None = None,
                     request_hash: str | None = None, supersedes: Sequence[UUID] = (),
                     request_id: str | None = None, said: Said | None = None) -> tuple[Memory, bool]:
        """Store a memory as `new_id`; returns (memory, created). An identical live text in the
        same scope, or an idempotency key seen before with the same request (`request_hash`),
        returns the existing memory instead; the key with another request is a conflict.
        `supersedes` marks older memories as replaced by this one, and `said` (what it names and the
        key it states) is recorded in the graph, in the same transaction."""
        async with self.writing(p) as conn:
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
            await history(conn, p, [(row["id"], "ADD", None, _snapshot(row))], None, request_id)
            await self._supersede(conn, p, row["id"], supersedes, request_id)
            await graph.lock_names(conn, p.user_id, [said])
            recorded = await graph.record(conn, p, row, said) if said is not None else graph.Recorded()
            await self._enqueue(conn, p, [row], supersedes)
            return self._with_graph(row, recorded), True

    @staticmethod
    def _with_graph(row: asyncpg.Record, recorded: graph.Recorded) -> Memory:
        memory = to_memory(row)
        return memory.model_copy(update={
            "about": [recorded.entities[e] for e in recorded.about] or None, "key": recorded.key,
            "replaced": recorded.replaced or None,
            "superseded_by": recorded.replaced_by or memory.superseded_by})

    async def _insert_row(self, conn: asyncpg.Connection, p: Principal, new: NewMemory, new_id: UUID,
                          in_order: bool = False) -> tuple[asyncpg.Record | None, asyncpg.Record | None]:
        """(the inserted row, None), or (None, the live twin with the same text in the scope).
        `in_order`: stamped with the clock, not the transaction's start, so the rows of one batch
        are created in their order (a decision weighs a memory against those written before it)."""
        values = {"id": new_id, "user_id": p.user_id, **new.model_dump(exclude={"occurred_at"})}
        if new.embedding is not None:
            values["embedding"] = np.asarray(new.embedding, dtype=np.float32)
        q = Sql()
        cols = list(_INSERT_COLUMNS)
        placeholders = [q.arg(values[c]) for c in cols]
        cols.append("occurred_at")
        placeholders.append(f"coalesce({q.arg(new.occurred_at)}::timestamptz, now())")
        if in_order:
            cols.append("created_at")
            placeholders.append("clock_timestamp()")
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

    async def _insert_rows(self, conn: asyncpg.Connection, p: Principal, news: Sequence[NewMemory]
                           ) -> list[tuple[asyncpg.Record | None, asyncpg.Record | None]]:
        """`_insert_row(in_order=True)` for a whole batch in two statements instead of one per
        memory (500 memories with vectors, interleaved A/B under a load of 13: 5.2 s -> 3.8 s
        median; the rest is the indexes' own work): each (the row inserted, None), or (None, its
        live twin: in the store, or earlier in the batch), or (None, None) when the twin was
        forgotten before it was read (the caller tries that one alone)."""
        if not news:
            return []
        ids = [uuid4() for _ in news]
        q = Sql()
        arrays = {
            "id": q.arg(ids) + "::uuid[]",
            **{c: q.arg([getattr(n, c) for n in news]) + f"::{t}[]" for c, t in (
                ("agent_id", "text"), ("project_id", "text"), ("kind", "text"), ("title", "text"),
                ("content", "text"), ("content_hash", "text"), ("importance", "real"), ("confidence", "real"),
                ("pinned", "boolean"), ("priority", "smallint"), ("source", "text"), ("embedding_model", "text"),
                ("occurred_at", "timestamptz"))},
            # Arrays of arrays of other lengths and JSON objects travel as JSON text, one per memory.
            "tags": q.arg([to_json(list(n.tags)) for n in news]) + "::text[]",
            "metadata": q.arg([to_json(n.metadata) for n in news]) + "::text[]",
            "embedding": q.arg([Vector(np.asarray(n.embedding, dtype=np.float32)) if n.embedding is not None
                                else None for n in news]) + "::vector[]",
        }
        select = {c: f"v.{c}" for c in _INSERT_COLUMNS}
        select.update({"user_id": q.arg(p.user_id), "tags": "ARRAY(SELECT jsonb_array_elements_text(v.tags::jsonb))",
                       "metadata": "v.metadata::jsonb", "occurred_at": "coalesce(v.occurred_at, now())",
                       "created_at": "clock_timestamp()"})  # after the sort: in the batch's order
        inserted = {r["id"]: r for r in await conn.fetch(
            f"""INSERT INTO memories ({", ".join(select)})
                SELECT {", ".join(select.values())}
                FROM unnest({", ".join(arrays.values())}) WITH ORDINALITY AS v({", ".join(arrays)}, ord)
                ORDER BY v.ord
                ON CONFLICT (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), content_hash)
                WHERE deleted_at IS NULL DO NOTHING RETURNING *""", *q.args)}
        twins: dict[tuple[str, str, str], asyncpg.Record] = {}
        left = [n for i, n in zip(ids, news, strict=True) if i not in inserted]
        if left:
            twins = {(r["agent_id"] or "", r["project_id"] or "", r["content_hash"]): r for r in await conn.fetch(
                """SELECT m.* FROM memories m
                   JOIN unnest($2::text[], $3::text[], $4::text[]) AS t(agent_id, project_id, content_hash)
                     ON coalesce(m.agent_id, '') = t.agent_id AND coalesce(m.project_id, '') = t.project_id
                    AND m.content_hash = t.content_hash
                   WHERE m.user_id = $1 AND m.deleted_at IS NULL""",
                p.user_id, [n.agent_id or "" for n in left], [n.project_id or "" for n in left],
                [n.content_hash for n in left])}
        return [(inserted[i], None) if i in inserted else
                (None, twins.get((n.agent_id or "", n.project_id or "", n.content_hash)))
                for i, n in zip(ids, news, strict=True)]

    async def insert_many(self, p: Principal, news: Sequence[NewMemory], request_id: str | None = None,
                          said: Sequence[Said | None] = (),
                          edges: Sequence[Sequence[Edge]] = ()) -> list[tuple[Memory, bool]]:
        """Store memories in one transaction, all or none: (memory, created) for each, in order; a
        text already live in its scope (or earlier in the batch) returns that memory. `edges`, one
        list per memory, link it (the one stored, or the one it duplicates) to others in the same
        transaction (repository/edges.py)."""
        rows: list[tuple[asyncpg.Record, bool]] = []
        async with self.writing(p) as conn:
            for new, (row, existing) in zip(news, await self._insert_rows(conn, p, news), strict=True):
                if row is None and existing is None:  # its twin was forgotten meanwhile: one at a time
                    row, existing = await self._insert_row(conn, p, new, uuid4(), in_order=True)
                if row is None and existing is None:
                    raise Conflict("an identical memory was being written and forgotten at the same time; retry")
                rows.append((row, True) if row is not None else (existing, False))
            await history(conn, p, [(r["id"], "ADD", None, _snapshot(r)) for r, created in rows if created],
                          None, request_id)
            # In the batch's order, so a later item's key replaces an earlier one's; every name's lock
            # first, so two batches naming the same people in other orders wait instead of deadlocking.
            saids = list(said) or [None] * len(rows)
            await graph.lock_names(conn, p.user_id, [s for (_, created), s in zip(rows, saids, strict=True) if created])
            batch = graph.Batch.of([r for r, _ in rows], [s if created else None
                                                          for (_, created), s in zip(rows, saids, strict=True)])
            recorded = [await graph.record(conn, p, r, s, batch) if created and s is not None else graph.Recorded()
                        for (r, created), s in zip(rows, saids, strict=True)]
            await batch.flush(conn, p.user_id)
            for (r, _), links in zip(rows, list(edges) or [()] * len(rows), strict=True):
                await link(conn, p, r["id"], links)
            await self._enqueue(conn, p, [r for r, created in rows if created])
        return [(self._with_graph(r, g), created) for (r, created), g in zip(rows, recorded, strict=True)]

    async def _supersede(self, conn: asyncpg.Connection, p: Principal, successor: UUID,
                         older: Sequence[UUID], request_id: str | None) -> None:
        older = [i for i in dict.fromkeys(older)]
        if not older:
            return
        if successor in older:
            raise Conflict("a memory cannot supersede itself")
        rows = await self._lock_own(conn, p, older, deleted=False, verb="supersede", missing=(
            "supersedes names no live memory {ids} in this session's scope; nothing was written"))
        await write_links(conn, p, [Relinked(r["id"], r["superseded_by"], successor) for r in rows],
                          f"superseded by {successor}", request_id)
