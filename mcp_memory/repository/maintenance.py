"""Whole-database work outside any one session: the retention purge, export and verbatim import.
These run as the operator (CLI or the server's own sweep), never from a tool."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from ..models import PurgeReport
from . import graph_transfer
from .deadlocks import again_if_stopped
from .first_load import build_memory, in_empty_store
from .graph_backlog import enqueue
from .sql import planner_rows
from .staging import staged

RETENTION_ACTOR = "system:retention"
# Any fixed number: replicas on one database agree on it, so one of them analyzes at a time.
_ANALYZE_LOCK = 0x6D63706D616E  # "mcpman"
_BATCH = 5000
# Columns an export carries; the vector and the generated full-text column are rebuilt.
EXPORT_COLUMNS = ("id", "agent_id", "project_id", "kind", "title", "content", "tags", "metadata", "importance",
                  "confidence", "pinned", "priority", "source", "content_hash", "occurred_at", "valid_until",
                  "created_at", "updated_at", "version", "access_count", "last_accessed", "deleted_at",
                  "deleted_reason", "superseded_by", "contradicted")
HISTORY_COLUMNS = ("memory_id", "event", "old", "new", "actor", "client", "request_id", "reason", "created_at")


class MaintenanceRepository:
    """Takes the owner's pool (Database.admin): this work spans users, so row-level security
    must not narrow it."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def analyze(self) -> None:
        await self.pool.execute("ANALYZE memories")

    async def defer_text_indexes_of_empty_store(self) -> list[str]:
        """Drop the memories' GIN indexes (full text, trigram, tags) when the store holds no memory
        at all, their definitions kept in deferred_indexes in the same transaction, for a first
        load to build them once after its rows; the names dropped. A role that may not, or a lock
        another session holds past a moment, leaves them where they are."""
        async def defer(conn: asyncpg.Connection) -> list[str]:
            rows = await conn.fetch(
                """SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition
                   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                   WHERE i.indrelid = 'memories'::regclass AND a.amname = 'gin' ORDER BY c.relname""")
            await conn.executemany(
                "INSERT INTO deferred_indexes (name, definition) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                [(r["name"], r["definition"]) for r in rows])
            for r in rows:
                await conn.execute('DROP INDEX "{}"'.format(r["name"].replace('"', '""')))
            return [r["name"] for r in rows]

        async with self.pool.acquire() as conn:
            return await in_empty_store(conn, defer) or []

    async def restore_deferred_indexes(self, memory_mb: int = 0) -> int:
        """Build the indexes a first load deferred (`defer_text_indexes_of_empty_store`), with
        `memory_mb` of working memory (0: the server's); how many it built. Every `migrate` does
        the same for a load that was killed before it got here."""
        async with self.pool.acquire() as conn, conn.transaction():
            await build_memory(conn, memory_mb)
            return await conn.fetchval("SELECT mcp_memory_restore_deferred_indexes()")

    async def analyze_once(self) -> float | None:
        """ANALYZE memories unless another process (a replica) is already doing it; returns the
        planner's row estimate afterwards, or None when it was someone else's turn. The lock is
        transaction-level (ANALYZE runs in a transaction), so it holds through a pooler in
        transaction mode too, where a session lock's unlock may reach another server connection."""
        async with self.pool.acquire() as conn, conn.transaction():
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _ANALYZE_LOCK):
                return None
            await conn.execute("ANALYZE memories")
            return await planner_rows(conn)

    async def planner_rows(self) -> float:
        """The planner's estimate of rows in memories; -1 when it was never analyzed."""
        async with self.pool.acquire() as conn:
            return await planner_rows(conn)

    async def others_hold_at_most(self, user_id: str, n: int) -> bool:
        """Whether other users than `user_id` hold at most `n` memories, forgotten ones included:
        two ranges of the primary key, read no further than n + 1 rows each."""
        return bool(await self.pool.fetchval(
            """SELECT count(*) <= $2 FROM ((SELECT 1 FROM memories WHERE user_id < $1 LIMIT $2 + 1)
                                            UNION ALL (SELECT 1 FROM memories WHERE user_id > $1 LIMIT $2 + 1)) o""",
            user_id, n))

    # --- retention --------------------------------------------------------------------------

    async def purge(self, now: datetime, *, purge_after_days: int, history_days: int, idempotency_days: int,
                    stale_after_days: int | None, dry_run: bool) -> PurgeReport:
        """Hard-delete what time has released. Batched so no transaction holds locks for long."""
        started = time.perf_counter()
        tombstone_cutoff = now - timedelta(days=purge_after_days)
        counts: dict[str, int] = {}
        async with self.pool.acquire() as conn:
            if stale_after_days is None:
                counts["stale"] = 0
            else:
                counts["stale"] = await self._forget_stale(conn, now, now - timedelta(days=stale_after_days),
                                                           dry_run)
            counts["tombstones"] = await self._purge_tombstones(conn, tombstone_cutoff, dry_run)
            for name, sql in (
                ("history", "FROM memory_history WHERE created_at < $1"),
                ("tokens", "FROM forget_tokens WHERE used_at IS NOT NULL OR expires_at < $1"),
                ("idempotency", "FROM idempotency_keys WHERE created_at < $1"),
                ("rate_limits", "FROM rate_limits WHERE window_start < $1"),
                # Finished decision jobs are bookkeeping: they go with the history rows their
                # decisions wrote (undo finds a job through its history row). Queued and running
                # jobs are work still to do and are never touched.
                ("jobs", "FROM memory_jobs WHERE status IN ('done', 'dead', 'cancelled') AND finished_at < $1"),
            ):
                cutoff = {"history": now - timedelta(days=history_days), "tokens": now,
                          "jobs": now - timedelta(days=history_days),
                          "idempotency": now - timedelta(days=idempotency_days),
                          "rate_limits": now - timedelta(hours=1)}[name]
                if dry_run:
                    counts[name] = await conn.fetchval(f"SELECT count(*) {sql}", cutoff)
                else:
                    counts[name] = int((await conn.execute(f"DELETE {sql}", cutoff)).split()[-1])
        return PurgeReport(dry_run=dry_run, stale_forgotten=counts["stale"], tombstones=counts["tombstones"],
                           history=counts["history"], forget_tokens=counts["tokens"],
                           idempotency_keys=counts["idempotency"], decision_jobs=counts["jobs"],
                           seconds=round(time.perf_counter() - started, 3))

    async def _purge_tombstones(self, conn: asyncpg.Connection, cutoff: datetime, dry_run: bool) -> int:
        if dry_run:
            return await conn.fetchval("SELECT count(*) FROM memories WHERE deleted_at < $1", cutoff)
        total = 0
        while True:
            async with conn.transaction():
                purged = await conn.fetch(
                    """WITH doomed AS (
                           SELECT user_id, id FROM memories WHERE deleted_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
                       DELETE FROM memories m USING doomed d WHERE m.user_id = d.user_id AND m.id = d.id
                       RETURNING m.user_id, m.id, m.deleted_at""", cutoff, _BATCH)
                await conn.executemany(
                    """INSERT INTO memory_history (user_id, memory_id, event, old, actor, reason)
                       VALUES ($1, $2, 'PURGE', $3, $4, 'restore window over')""",
                    [(r["user_id"], r["id"], {"deleted_at": r["deleted_at"]}, RETENTION_ACTOR) for r in purged])
            total += len(purged)
            if len(purged) < _BATCH:
                return total

    async def _forget_stale(self, conn: asyncpg.Connection, now: datetime, cutoff: datetime, dry_run: bool) -> int:
        where = ("deleted_at IS NULL AND NOT pinned "
                 "AND coalesce(last_accessed, created_at) < $1 AND updated_at < $1")
        if dry_run:
            return await conn.fetchval(f"SELECT count(*) FROM memories WHERE {where}", cutoff)
        async with conn.transaction():
            rows = await conn.fetch(
                f"""UPDATE memories SET deleted_at = $2, deleted_reason = 'stale: not read or changed'
                    WHERE {where} RETURNING user_id, id, deleted_at""", cutoff, now)
            await conn.executemany(
                """INSERT INTO memory_history (user_id, memory_id, event, new, actor, reason)
                   VALUES ($1, $2, 'DELETE', $3, $4, 'stale: not read or changed')""",
                [(r["user_id"], r["id"], {"deleted_at": r["deleted_at"]}, RETENTION_ACTOR) for r in rows])
        return len(rows)

    # --- export / import --------------------------------------------------------------------

    async def export(self, user_id: str, *, include_forgotten: bool,
                     vectors_of: str | None = None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """The user's entities, then every memory of the user (all agents and projects) with its
        history and graph, oldest first, then the edits a person made to the graph, each as (type,
        record); with `vectors_of` (a model), the vector of each memory that model embedded."""
        where = "m.user_id = $1" + ("" if include_forgotten else " AND m.deleted_at IS NULL")
        vector = "CASE WHEN m.embedding_model = $2 THEN m.embedding END" if vectors_of else "NULL::vector"
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            for entity in await graph_transfer.entities(conn, user_id):
                yield "entity", entity
            history: dict[UUID, list[dict[str, Any]]] = {}
            for h in await conn.fetch(
                    f"""SELECT {", ".join(HISTORY_COLUMNS)} FROM memory_history
                        WHERE user_id = $1 AND memory_id IN (SELECT m.id FROM memories m WHERE {where})
                        ORDER BY seq""", user_id):
                history.setdefault(h["memory_id"], []).append(dict(h))
            async for row in conn.cursor(
                    f"""SELECT {', '.join(f'm.{c}' for c in EXPORT_COLUMNS)}, {vector} AS vector,
                               {graph_transfer.MEMORY_GRAPH}
                        FROM memories m {graph_transfer.UNREAD_JOIN} WHERE {where} ORDER BY m.created_at, m.id""",
                    user_id, *([vectors_of] if vectors_of else [])):
                record = {c: row[c] for c in EXPORT_COLUMNS}
                exported: dict[str, Any] = {"memory": record, "history": history.get(record["id"], []),
                                            "graph": graph_transfer.graph_of(row)}
                if row["given"]:  # not read yet: what its writer said of it waits with it
                    exported["structure"] = row["given"]
                if row["vector"] is not None:
                    exported["vector"] = row["vector"].to_numpy()
                yield "memory", exported
            for edit in await graph_transfer.edits(conn, user_id):
                yield "edit", edit

    async def already_there(self, user_id: str,
                            keys: Sequence[tuple[UUID | None, str | None, str | None, str]]) -> list[bool]:
        """For each (id, agent_id, project_id, content_hash) an import would write: is a memory with
        that id, or the same live text in that scope, already stored? (What a dry run reports.)"""
        if not keys:
            return []
        rows = await self.pool.fetch(
            """SELECT t.i FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[])
                      WITH ORDINALITY AS t(id, agent_id, project_id, content_hash, i)
               WHERE EXISTS (SELECT 1 FROM memories m WHERE m.id = t.id)
                  OR EXISTS (SELECT 1 FROM memories m WHERE m.user_id = $1 AND m.content_hash = t.content_hash
                             AND coalesce(m.agent_id, '') = coalesce(t.agent_id, '')
                             AND coalesce(m.project_id, '') = coalesce(t.project_id, '') AND m.deleted_at IS NULL)""",
            user_id, [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], [k[3] for k in keys])
        found = {row["i"] for row in rows}
        return [i in found for i in range(1, len(keys) + 1)]

    async def import_entities(self, user_id: str, entities: Sequence[dict[str, Any]]) -> graph_transfer.Taken:
        """An export's entities into the store under `user_id`, before its memories
        (graph_transfer.take_entities); what the memories' graphs then point at."""
        async with self.pool.acquire() as conn, conn.transaction():
            return await graph_transfer.take_entities(conn, user_id, entities)

    async def import_edits(self, user_id: str, taken: graph_transfer.Taken,
                           edits: Sequence[dict[str, Any]]) -> tuple[int, int]:
        """An export's entity edits, after its memories: (taken, left out: graph_transfer.take_edits)."""
        async with self.pool.acquire() as conn, conn.transaction():
            return await graph_transfer.take_edits(conn, user_id, taken, edits)

    async def import_records(self, user_id: str, records: Sequence[dict[str, Any]], model: str | None = None,
                             taken: graph_transfer.Taken | None = None) -> int:
        """Insert exported memories verbatim (ids, times, versions, history) under `user_id`, with
        the graph each record carries on the entities `taken` (an unread one, or any without
        `taken`, goes on the graph's backlog), and with `model`, each record's `vector` (None: the
        backfill embeds it) as that model's. A memory whose id, or whose live text in its scope, is
        already there is skipped, so importing twice adds nothing. Returns how many were inserted.
        A batch is copied into temporary tables and inserted from them: a row at a time, three round
        trips each, was 620 rows a second."""
        # Batches written at once (importers.py) wait on each other's rows where a file holds one
        # memory twice: the one PostgreSQL chose to stop goes again, from its start.
        return await again_if_stopped(lambda: self._import_batch(user_id, records, model, taken))

    async def import_edges(self, user_id: str, records: Sequence[dict[str, Any]]) -> None:
        """Every edge of an export's `records` whose two ends are both here now, after its batches
        (`graph_transfer.put_edges`)."""
        async with self.pool.acquire() as conn, conn.transaction():
            await graph_transfer.put_edges(conn, user_id, records)

    async def _import_batch(self, user_id: str, records: Sequence[dict[str, Any]], model: str | None,
                            taken: graph_transfer.Taken | None) -> int:
        cols = ("user_id", *EXPORT_COLUMNS, "embedding", "embedding_model")
        async with self.pool.acquire() as conn, conn.transaction():
            typed = await staged(conn, "import_rows", "memories", cols, {"metadata"}, [
                (user_id, *(r["memory"][c] for c in EXPORT_COLUMNS), vector, model if vector is not None else None)
                for r in records for vector in (r.get("vector") if model else None,)])
            inserted = {row["id"] for row in await conn.fetch(
                f"INSERT INTO memories ({', '.join(cols)}) SELECT {typed} FROM import_rows "
                "ORDER BY n ON CONFLICT DO NOTHING RETURNING id")}
            # An id twice in the file: the INSERT kept its first record, so its history is that one's.
            new = list({r["memory"]["id"]: r for r in reversed(records) if r["memory"]["id"] in inserted}.values())
            read = [r for r in new if taken is not None and r.get("graph") is not None]
            await enqueue(conn, user_id, [(r["memory"]["id"], r["memory"]["created_at"], r.get("structure"))
                                          for r in new if taken is None or r.get("graph") is None])
            history = ("user_id", *HISTORY_COLUMNS)
            typed = await staged(conn, "import_history", "memory_history", history, {"old", "new"},
                                 [(user_id, *(h[c] for c in HISTORY_COLUMNS)) for r in new for h in r["history"]])
            await conn.execute(f"INSERT INTO memory_history ({', '.join(history)}) "
                               f"SELECT {typed} FROM import_history ORDER BY n")
            if taken is not None:
                await graph_transfer.put_graph(conn, user_id, taken, read)
        return len(inserted)

