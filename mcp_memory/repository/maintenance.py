"""Whole-database work outside any one session: the retention purge, export and verbatim import.
These run as the operator (CLI or the server's own sweep), never from a tool."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from ..encoding import to_json
from ..models import PurgeReport
from .first_load import build_memory, in_empty_store
from .graph_backlog import enqueue
from .sql import planner_rows

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


async def _structure(conn: asyncpg.Connection, user_id: str) -> dict[UUID, dict[str, Any]]:
    """What each memory's writer (or a model) said of it, as a write takes it: `about` (the names)
    and `key` (in the words it was given). What rules read off the text is read again on import."""
    found: dict[UUID, dict[str, Any]] = {}
    for r in await conn.fetch(
            """SELECT me.memory_id, CASE WHEN e.kind = 'user' THEN 'me' ELSE e.name END AS name,
                      (SELECT f.key_words FROM memory_facts f WHERE f.user_id = me.user_id
                           AND f.memory_id = me.memory_id AND f.source <> 'rules' LIMIT 1) AS key
               FROM memory_entities me JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
               WHERE me.user_id = $1 AND me.role = 'about' AND me.source <> 'rules'
               ORDER BY me.memory_id, e.name""", user_id):
        entry = found.setdefault(r["memory_id"], {"about": []})
        entry["about"].append(r["name"])
        if r["key"] is not None:
            entry["key"] = r["key"]
    return found


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
                     vectors_of: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every memory of the user (all agents and projects) with its history, oldest first; with
        `vectors_of` (a model), the vector of each memory that model embedded (`vector`)."""
        where = "user_id = $1" + ("" if include_forgotten else " AND deleted_at IS NULL")
        vector = "CASE WHEN embedding_model = $2 THEN embedding END" if vectors_of else "NULL::vector"
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            history: dict[UUID, list[dict[str, Any]]] = {}
            for h in await conn.fetch(
                    f"""SELECT {", ".join(HISTORY_COLUMNS)} FROM memory_history
                        WHERE user_id = $1 AND memory_id IN (SELECT id FROM memories WHERE {where})
                        ORDER BY seq""", user_id):
                history.setdefault(h["memory_id"], []).append(dict(h))
            structure = await _structure(conn, user_id)
            async for row in conn.cursor(
                    f"SELECT {', '.join(EXPORT_COLUMNS)}, {vector} AS vector FROM memories WHERE {where} "
                    "ORDER BY created_at, id", user_id, *([vectors_of] if vectors_of else [])):
                record = dict(row)
                embedding = record.pop("vector")
                exported = {"memory": record, "history": history.get(record["id"], [])}
                if record["id"] in structure:
                    exported["structure"] = structure[record["id"]]
                if embedding is not None:
                    exported["vector"] = embedding.to_numpy()
                yield exported

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

    async def import_records(self, user_id: str, records: Sequence[dict[str, Any]], model: str | None = None) -> int:
        """Insert exported memories verbatim (ids, times, versions, history) under `user_id`, and
        with `model`, each record's `vector` (None: the backfill embeds it) as that model's. A
        memory whose id, or whose live text in its scope, is already there is skipped, so
        importing twice adds nothing. Returns how many were inserted. A batch is copied into
        temporary tables and inserted from them: a row at a time, three round trips each, was 620
        rows a second."""
        cols = ("user_id", *EXPORT_COLUMNS, "embedding", "embedding_model")
        async with self.pool.acquire() as conn, conn.transaction():
            typed = await _staged(conn, "import_rows", "memories", cols, {"metadata"}, [
                (user_id, *(r["memory"][c] for c in EXPORT_COLUMNS), vector, model if vector is not None else None)
                for r in records for vector in (r.get("vector") if model else None,)])
            inserted = {row["id"] for row in await conn.fetch(
                f"INSERT INTO memories ({', '.join(cols)}) SELECT {typed} FROM import_rows "
                "ORDER BY n ON CONFLICT DO NOTHING RETURNING id")}
            # An id twice in the file: the INSERT kept its first record, so its history is that one's.
            new = list({r["memory"]["id"]: r for r in reversed(records) if r["memory"]["id"] in inserted}.values())
            await enqueue(conn, user_id, [(r["memory"]["id"], r["memory"]["created_at"], r.get("structure"))
                                          for r in new])
            history = ("user_id", *HISTORY_COLUMNS)
            typed = await _staged(conn, "import_history", "memory_history", history, {"old", "new"},
                                  [(user_id, *(h[c] for c in HISTORY_COLUMNS)) for r in new for h in r["history"]])
            await conn.execute(f"INSERT INTO memory_history ({', '.join(history)}) "
                               f"SELECT {typed} FROM import_history ORDER BY n")
        return len(inserted)


async def _staged(conn: asyncpg.Connection, name: str, like: str, columns: Sequence[str], json: set[str],
                  rows: Sequence[Sequence[Any]]) -> str:
    """`rows` (values of `columns` of table `like`) copied into a temporary table `name` dropped at
    commit, with their order as `n`; returns the select list that reads them back as `like`'s types.
    COPY is binary, and our jsonb codec is text: JSON columns go in as text and are cast back."""
    await conn.execute(f"CREATE TEMP TABLE {name} ON COMMIT DROP AS SELECT "
                       f"{', '.join(f'{c}::text' if c in json else c for c in columns)}, 0 AS n FROM {like} LIMIT 0")
    await conn.copy_records_to_table(name, columns=[*columns, "n"], records=[
        (*(None if v is None else to_json(v) if c in json else v for c, v in zip(columns, row, strict=True)), n)
        for n, row in enumerate(rows)])
    return ", ".join(f"{c}::jsonb" if c in json else c for c in columns)
