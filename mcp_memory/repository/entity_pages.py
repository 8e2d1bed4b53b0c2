"""What the console's entity pages read beyond a profile (repository/graph_reads.py): one entity as it is
stored (merged ones too), the memories naming it newest first, the entities merged into it, the
edits that touched it, and the entities one memory names. Every query keeps to the session's scope."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from ..models import Principal
from .sql import Sql, visible

_NAMING = """(SELECT count(*) FROM memory_entities me JOIN memories m ON m.user_id = me.user_id AND m.id = me.memory_id
               AND m.deleted_at IS NULL WHERE me.user_id = e.user_id AND me.entity_id = e.id)"""


async def entity(conn: asyncpg.Connection, p: Principal, entity_id: UUID) -> asyncpg.Record | None:
    """One visible entity, live or merged (with what it was merged into), and how many live
    memories name it."""
    q = Sql()
    return await conn.fetchrow(
        f"""SELECT e.id, e.name, e.kind, e.canonical, e.aliases, e.agent_id, e.project_id, e.merged_into,
                   e.created_at, t.name AS into_name, t.kind AS into_kind, {_NAMING} AS memories
            FROM entities e LEFT JOIN entities t ON t.user_id = e.user_id AND t.id = e.merged_into
            WHERE {visible(q, p, "e")} AND e.id = {q.arg(entity_id)}""", *q.args)


async def timeline(conn: asyncpg.Connection, p: Principal, entity_id: UUID, limit: int) -> list[asyncpg.Record]:
    """The live memories naming the entity, newest (by occurred_at) first, each with its role and key."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT m.id, m.title, m.content, m.kind, m.occurred_at, m.superseded_by, m.pinned, m.agent_id,
                   m.project_id, me.role, f.attribute, f.key_words
            FROM memory_entities me JOIN memories m ON m.user_id = me.user_id AND m.id = me.memory_id
            LEFT JOIN memory_facts f ON f.user_id = me.user_id AND f.memory_id = me.memory_id
                                    AND f.entity_id = me.entity_id
            WHERE me.user_id = {q.arg(p.user_id)} AND me.entity_id = {q.arg(entity_id)} AND m.deleted_at IS NULL
              AND {visible(q, p)}
            ORDER BY m.occurred_at DESC, m.created_at DESC, m.id LIMIT {q.arg(limit)}""", *q.args)


async def merged_in(conn: asyncpg.Connection, p: Principal, entity_id: UUID) -> list[asyncpg.Record]:
    """The visible entities merged into this one, each with the live merge that did it."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, e.agent_id, e.project_id, x.id AS edit, x.created_at AS merged_at
            FROM entities e LEFT JOIN LATERAL (
                SELECT d.id, d.created_at FROM entity_edits d WHERE {visible(q, p, "d")} AND d.kind = 'merge'
                AND d.user_id = e.user_id AND d.other_id = e.id AND d.entity_id = e.merged_into
                AND d.undone_at IS NULL
                ORDER BY d.seq DESC LIMIT 1) x ON true
            WHERE {visible(q, p, "e")} AND e.merged_into = {q.arg(entity_id)} ORDER BY e.name""", *q.args)


async def edits_of(conn: asyncpg.Connection, p: Principal, entity_id: UUID, limit: int) -> list[asyncpg.Record]:
    """The visible edits that touched the entity, the newest first."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT * FROM entity_edits e WHERE {visible(q, p, "e")}
              AND e.entity_ids && ARRAY[{q.arg(entity_id)}::uuid] ORDER BY e.seq DESC LIMIT {q.arg(limit)}""",
        *q.args)


async def named_by(conn: asyncpg.Connection, p: Principal, memory_id: UUID) -> list[asyncpg.Record]:
    """The entities a visible memory names: its subject(s) first, each with the key stated of it."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, me.role, f.attribute
            FROM memories m JOIN memory_entities me ON me.user_id = m.user_id AND me.memory_id = m.id
            JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
            LEFT JOIN memory_facts f ON f.user_id = me.user_id AND f.memory_id = me.memory_id
                                    AND f.entity_id = me.entity_id
            WHERE {visible(q, p)} AND m.id = {q.arg(memory_id)} AND {visible(q, p, "e")}
            ORDER BY me.role, e.name""", *q.args)
