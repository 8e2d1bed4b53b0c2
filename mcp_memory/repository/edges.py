"""Typed links between two memories (memory_edges, sql/016_graph.sql): written in the caller's
transaction, read for the decisions. A link is made only between memories the principal sees and
may change (a credential confined to its agents or projects reads what they share with others but
links only its own), and it carries the narrower namespace of the two, so whoever reads it sees
both ends. Writing the same link again changes nothing: a job retaken after a crash adds none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

import asyncpg

from ..models import Principal
from .sql import Sql, visible

EdgeKind = Literal["derived_from", "contradicts", "extends", "supports", "similar"]
EdgeSource = Literal["writer", "rules", "model"]


@dataclass(frozen=True)
class Edge:
    """A link from a memory being written to another: `kind` (the memory is derived_from `to`, …)
    and who said so."""

    kind: EdgeKind
    to: UUID
    source: EdgeSource = "writer"


def _changeable(q: Sql, p: Principal, alias: str) -> str:
    """Visible to `p`, and in a namespace `p` may change."""
    rule = [visible(q, p, alias)]
    if p.agent_confined:
        rule.append(f"{alias}.agent_id IS NOT NULL")
    if p.project_confined:
        rule.append(f"{alias}.project_id IS NOT NULL")
    return " AND ".join(rule)


async def link(conn: asyncpg.Connection, p: Principal, from_id: UUID, edges: Sequence[Edge]) -> int:
    """Store `edges` from `from_id`, in the caller's transaction; those whose ends `p` may not see
    or change, a memory linked to itself, and links already stored are left out. Returns how many
    were added."""
    edges = [e for e in dict.fromkeys(edges) if e.to != from_id]
    if not edges:
        return 0
    q = Sql()
    user = q.arg(p.user_id)
    added = await conn.fetch(
        f"""INSERT INTO memory_edges (user_id, from_id, to_id, kind, agent_id, project_id, source)
            SELECT f.user_id, f.id, t.id, x.kind, coalesce(f.agent_id, t.agent_id),
                   coalesce(f.project_id, t.project_id), x.source
            FROM unnest({q.arg([e.to for e in edges])}::uuid[], {q.arg([e.kind for e in edges])}::text[],
                        {q.arg([e.source for e in edges])}::text[]) x(to_id, kind, source)
            JOIN memories f ON f.user_id = {user} AND f.id = {q.arg(from_id)} AND {_changeable(q, p, "f")}
            JOIN memories t ON t.user_id = {user} AND t.id = x.to_id AND {_changeable(q, p, "t")}
            ON CONFLICT DO NOTHING RETURNING to_id""", *q.args)
    return len(added)


async def unlink_to(conn: asyncpg.Connection, p: Principal, to_id: UUID, kind: EdgeKind, source: EdgeSource) -> int:
    """Remove the links of `kind` said by `source` into `to_id` (a decision undone takes back what it
    said of the memory); returns how many."""
    q = Sql()
    done = await conn.execute(
        f"""DELETE FROM memory_edges e WHERE e.user_id = {q.arg(p.user_id)} AND e.to_id = {q.arg(to_id)}
            AND e.kind = {q.arg(kind)} AND e.source = {q.arg(source)}""", *q.args)
    return int(done.split()[-1])


async def linked(conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID], kind: EdgeKind | None = None
                 ) -> dict[UUID, list[tuple[EdgeKind, UUID, EdgeSource]]]:
    """For each memory of `ids`, its outgoing links whose other end `p` sees: (kind, to, source),
    oldest first."""
    q = Sql()
    where = [f"e.user_id = {q.arg(p.user_id)}", f"e.from_id = ANY({q.arg(list(ids))}::uuid[])", visible(q, p, "t")]
    if kind is not None:
        where.append(f"e.kind = {q.arg(kind)}")
    rows = await conn.fetch(
        f"""SELECT e.from_id, e.kind, e.to_id, e.source FROM memory_edges e
            JOIN memories t ON t.user_id = e.user_id AND t.id = e.to_id
            WHERE {" AND ".join(where)} ORDER BY e.created_at, e.to_id""", *q.args)
    found: dict[UUID, list[tuple[EdgeKind, UUID, EdgeSource]]] = {}
    for r in rows:
        found.setdefault(r["from_id"], []).append((r["kind"], r["to_id"], r["source"]))
    return found


__all__ = ["Edge", "EdgeKind", "EdgeSource", "link", "linked", "unlink_to"]
