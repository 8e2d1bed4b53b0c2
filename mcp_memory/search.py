"""Hybrid retrieval in one SQL statement: up to three candidate lists (HNSW vector kNN, full
text, trigram) fused by weighted reciprocal rank, times a bounded recency factor."""

from __future__ import annotations

import asyncpg

from .config import Settings
from .models import MemoryFilter, Principal, ScopeInfo, SearchHit, human_age, memory_uri
from .repository import MemoryRepository, Sql, filtered, visible
from .repository.embeddings import model_literal, vector_cast


def split_query(query: str) -> tuple[str, list[str]]:
    """('what to find', ['excluded', 'words']): a leading '-' excludes a word everywhere."""
    words = query.split()
    excluded = [w[1:] for w in words if w.startswith("-") and len(w) > 1]
    return " ".join(w for w in words if not (w.startswith("-") and len(w) > 1)), excluded


def _where(q: Sql, p: Principal, f: MemoryFilter | None, excluded: list[str]) -> str:
    clauses = [visible(q, p), "m.deleted_at IS NULL", *filtered(q, f)]
    if f is not None and f.as_of is not None:
        clauses.append(f"m.created_at <= {q.arg(f.as_of)}")
    if excluded:
        clauses.append(f"NOT m.fts @@ websearch_to_tsquery('english', {q.arg(' or '.join(excluded))})")
    return " AND ".join(clauses)


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
        explain={"vector": row["vec_rank"], "fulltext": row["fts_rank"], "trigram": row["trgm_rank"],
                 "fused": round(row["fused"], 6), "recency": round(row["recency"], 4)} if explain else None,
    )


async def search(repo: MemoryRepository, p: Principal, query: str, f: MemoryFilter | None, *,
                 limit: int, settings: Settings, explain: bool = False, vector: list[float] | None = None,
                 model: str | None = None, dimension: int = 0,
                 min_similarity: float | None = None) -> list[SearchHit]:
    """`min_similarity` keeps only vector candidates at least that close (cosine): nearest
    neighbours always exist, but "what matches" (a forget preview) must not include them all."""
    q = Sql()
    cap = q.arg(settings.search_candidates)
    query, excluded = split_query(query)
    # name -> (weight, candidates query selecting id and key, order of key)
    lists: dict[str, tuple[float, str, str]] = {}
    if vector is not None and model and dimension and settings.weight_vector > 0:
        distance = f"{vector_cast(dimension)} <=> {q.arg(vector)}::vector({int(dimension)})"
        lists["vec"] = (settings.weight_vector, f"""
            SELECT m.id, {distance} AS key FROM memories m
            WHERE {_where(q, p, f, excluded)} AND m.embedding_model = {model_literal(model)}
              {f"AND {distance} <= {q.arg(1 - min_similarity)}" if min_similarity is not None else ""}
            ORDER BY {distance} LIMIT {cap}""", "ASC")
    if settings.weight_fulltext > 0 and query:
        # websearch syntax ANDs every word; a question rarely shares all its words with the
        # answer, so conjunctions become disjunctions (negations and phrases keep their meaning).
        tsq = (f"regexp_replace(websearch_to_tsquery('english', {q.arg(query)})::text, ' & (?!!)', ' | ', 'g')"
               "::tsquery")
        lists["fts"] = (settings.weight_fulltext, f"""
            SELECT m.id, ts_rank(m.fts, pq.tsq) AS key FROM memories m, (SELECT {tsq} AS tsq) pq
            WHERE {_where(q, p, f, excluded)} AND m.fts @@ pq.tsq
            ORDER BY key DESC, m.id LIMIT {cap}""", "DESC")
    if settings.weight_trigram > 0 and query and len(query.split()) <= settings.trigram_max_words:
        # Names, identifiers and typos in short queries; a long question's trigrams match
        # everything a little and cost a similarity per row.
        text = q.arg(query)
        lists["trgm"] = (settings.weight_trigram, f"""
            SELECT m.id, word_similarity({text}, m.content) AS key FROM memories m
            WHERE {_where(q, p, f, excluded)} AND {text} <% m.content
            ORDER BY key DESC, m.id LIMIT {cap}""", "DESC")
    if not lists:
        return []

    k = q.arg(float(settings.rrf_k))
    ctes = ",\n".join(
        f"{name} AS MATERIALIZED (SELECT id, row_number() OVER (ORDER BY key {order}, id) AS r FROM ({sql}) c)"
        for name, (_, sql, order) in lists.items())
    union = "\nUNION ALL\n".join(
        f"SELECT id, {q.arg(weight)}::float8 / ({k} + r) AS s, '{name}' AS list, r FROM {name}"
        for name, (weight, _, _) in lists.items())
    as_of = f.as_of if f is not None else None
    reference = q.arg(as_of) + "::timestamptz" if as_of is not None else "now()"
    floor = q.arg(settings.recency_floor)
    half_life = q.arg(settings.recency_half_life_days)
    # A superseded memory ranks below its live successor (penalised, and re-ordered below).
    penalty = (f"""CASE WHEN EXISTS (SELECT 1 FROM memories s WHERE s.user_id = m.user_id
                                      AND s.id = m.superseded_by AND s.deleted_at IS NULL)
                        THEN {q.arg(settings.superseded_penalty)}::float8 ELSE 1 END"""
               if as_of is None else "1")
    sql = f"""
    WITH {ctes},
    fused AS (
        SELECT id, sum(s) AS fused,
               min(r) FILTER (WHERE list = 'vec') AS vec_rank,
               min(r) FILTER (WHERE list = 'fts') AS fts_rank,
               min(r) FILTER (WHERE list = 'trgm') AS trgm_rank
        FROM ({union}) u GROUP BY id
    ),
    scored AS (
        SELECT m.user_id, m.id, m.title, m.content, m.kind, m.tags, m.agent_id, m.project_id, m.occurred_at,
               m.superseded_by, f.fused, f.vec_rank, f.fts_rank, f.trgm_rank,
               {floor}::float8 + (1 - {floor}::float8) * power(2::float8, -greatest(0::float8,
                   extract(epoch FROM ({reference} - m.occurred_at)) / 86400.0) / {half_life}::float8) AS recency
        FROM fused f JOIN memories m ON m.user_id = {q.arg(p.user_id)} AND m.id = f.id
    )
    SELECT m.*, fused * recency * {penalty} AS score FROM scored m
    ORDER BY score DESC, length(m.content), m.id
    LIMIT {q.arg(limit)}
    """
    gucs = {"pg_trgm__word_similarity_threshold": str(settings.trigram_threshold),
            "hnsw__ef_search": str(settings.hnsw_ef_search), "hnsw__iterative_scan": "relaxed_order"}
    async with repo.transaction(p, **gucs) as conn:
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
