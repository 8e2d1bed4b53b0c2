"""Ranked retrieval in one SQL statement: candidate lists fused by weighted reciprocal rank."""

from __future__ import annotations

import asyncpg

from .config import Settings
from .models import MemoryFilter, Principal, ScopeInfo, SearchHit, human_age, memory_uri
from .repository import MemoryRepository, Sql, filtered, visible


def _where(q: Sql, p: Principal, f: MemoryFilter | None) -> str:
    return " AND ".join([visible(q, p), "m.deleted_at IS NULL", *filtered(q, f)])


def _hit(row: asyncpg.Record, snippet_chars: int, explain: bool) -> SearchHit:
    content: str = row["content"]
    return SearchHit(
        id=row["id"],
        uri=memory_uri(row["id"]),
        title=row["title"],
        snippet=content[:snippet_chars],
        truncated=len(content) > snippet_chars,
        kind=row["kind"],
        tags=list(row["tags"]),
        scope=ScopeInfo.of(row["agent_id"], row["project_id"]),
        occurred_at=row["occurred_at"],
        age=human_age(row["occurred_at"]),
        score=round(row["score"], 6),
        superseded_by=row["superseded_by"],
        ranks={"fulltext": row["fts_rank"], "trigram": row["trgm_rank"]} if explain else None,
    )


async def search(repo: MemoryRepository, p: Principal, query: str, f: MemoryFilter | None, *,
                 limit: int, settings: Settings, explain: bool = False) -> list[SearchHit]:
    q = Sql()
    text = q.arg(query)
    k = q.arg(float(settings.rrf_k))
    cap = q.arg(settings.search_candidates)
    # websearch syntax ANDs every word; a question rarely shares all its words with the answer,
    # so plain conjunctions become disjunctions (negations and phrases keep their meaning).
    sql = f"""
    WITH pq AS MATERIALIZED (
        SELECT regexp_replace(websearch_to_tsquery('english', {text})::text,
                              ' & (?!!)', ' | ', 'g')::tsquery AS tsq
    ),
    fts AS (
        SELECT m.id, row_number() OVER (ORDER BY ts_rank(m.fts, pq.tsq) DESC, m.id) AS r
        FROM memories m, pq
        WHERE {_where(q, p, f)} AND m.fts @@ pq.tsq
        ORDER BY r LIMIT {cap}
    ),
    trgm AS (
        SELECT m.id, row_number() OVER (ORDER BY word_similarity({text}, m.content) DESC, m.id) AS r
        FROM memories m
        WHERE {_where(q, p, f)} AND {text} <% m.content
        ORDER BY r LIMIT {cap}
    ),
    fused AS (
        SELECT id, sum(s) AS score, min(fr) AS fts_rank, min(tr) AS trgm_rank
        FROM (SELECT id, {q.arg(settings.weight_fulltext)}::float8 / ({k} + r) AS s,
                     r AS fr, NULL::bigint AS tr FROM fts
              UNION ALL
              SELECT id, {q.arg(settings.weight_trigram)}::float8 / ({k} + r), NULL, r FROM trgm) u
        GROUP BY id
    )
    SELECT m.*, f.score * CASE WHEN m.superseded_by IS NULL THEN 1 ELSE {q.arg(settings.superseded_penalty)}::float8
                          END AS score,
           f.fts_rank, f.trgm_rank
    FROM fused f JOIN memories m ON m.user_id = {q.arg(p.user_id)} AND m.id = f.id
    ORDER BY score DESC, m.occurred_at DESC, m.id
    LIMIT {q.arg(limit)}
    """
    async with repo.transaction(p, pg_trgm__word_similarity_threshold=str(settings.trigram_threshold)) as conn:
        rows = await conn.fetch(sql, *q.args)
    return successors_first([_hit(r, settings.snippet_chars, explain) for r in rows])


def successors_first(hits: list[SearchHit]) -> list[SearchHit]:
    """A superseded memory never ranks above the memory that replaced it."""
    ordered = list(hits)
    position = {h.id: i for i, h in enumerate(ordered)}
    for hit in hits:
        successor = hit.superseded_by
        if successor in position and position[successor] > position[hit.id]:
            ordered.remove(hit)
            ordered.insert(ordered.index(next(h for h in ordered if h.id == successor)) + 1, hit)
            position = {h.id: i for i, h in enumerate(ordered)}
    return ordered
