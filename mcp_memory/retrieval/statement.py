"""The SQL stage of hybrid retrieval, built as one statement: up to three candidate lists (HNSW
vector kNN, full text, trigram) fused by weight (relative scores or reciprocal rank), replies
lifted by the questions they answer, times a bounded recency factor and a factor for naming the
question's subject."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from uuid import UUID

import asyncpg

from ..config import RankingSettings
from ..embeddings import conflict_similarity
from ..graph.about_user import speaks_of_user
from ..lexicon import Lexicon
from ..models import MOMENTS, MemoryFilter, Principal
from ..repository import Sql, filtered, live, scope_vectors
from ..repository.embeddings import exact_distance, model_literal, walk_distance
from .conversations import WALK_COLUMNS, other_conversation
from .dates import Period
from .fulltext import TEXT, fulltext_list
from .naming import ADDRESSED_WINDOW, Linked, naming, speaks_of, whole_word
from .narrowing import narrows
from .query import ParsedQuery


def text_search(lexicon: Lexicon) -> str:
    """The lexicon's text search configuration as an SQL literal ('english'). A constant, not a
    bound argument: the statement's shape, and so its plans, are what they were with 'english'
    written in."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", lexicon.text_search):
        raise ValueError(f"not a text search configuration: {lexicon.text_search!r}")
    return f"'{lexicon.text_search}'"


def _where(q: Sql, p: Principal, f: MemoryFilter | None, excluded: list[str], config: str) -> tuple[str, str]:
    """The clauses of the memories a search lists, and of its scope alone (no filter's)."""
    scope = live(q, p)
    clauses = [*scope, *filtered(q, f)]
    if f is not None and f.as_of is not None:
        clauses.append(f"m.created_at <= {q.arg(f.as_of)}")
    if excluded:
        clauses.append(f"NOT m.fts @@ websearch_to_tsquery({config}, {q.arg(' or '.join(excluded))})")
    return " AND ".join(clauses), " AND ".join(scope)


# Past this many half-lives the recency factor is its floor (2^-60 is 1e-18); the cap keeps
# power() from underflowing for a memory dated centuries ago, which would fail every search.
MAX_HALVINGS = 60


def _halvings(reference: str, half_life: str) -> str:
    """Half-lives between a memory and the reference time, 0 for the future, capped, and defined
    for every storable timestamp (±infinity included)."""
    age_days = f"extract(epoch FROM ({reference} - m.occurred_at)) / 86400.0"
    return (f"(CASE WHEN NOT isfinite(m.occurred_at) THEN {MAX_HALVINGS}::float8 "
            f"ELSE least({MAX_HALVINGS}::float8, greatest(0::float8, {age_days}) / {half_life}::float8) END)")


def _in_period(q: Sql, period: Period, after_days: float) -> str:
    """Whether a memory was written in `period` or up to `after_days` after its end."""
    def after() -> str:
        return f"{q.arg(after_days)}::float8 * interval '1 day'"
    if period.month is not None:  # a month of any year
        month = q.arg(period.month)
        return (f"(extract(month FROM m.occurred_at AT TIME ZONE 'UTC') = {month}::int "
                f"OR extract(month FROM (m.occurred_at - {after()}) AT TIME ZONE 'UTC') = {month}::int)")
    clauses = []
    if period.start is not None:
        clauses.append(f"m.occurred_at >= {q.arg(period.start)}::timestamptz")
    if period.end is not None:
        clauses.append(f"m.occurred_at < {q.arg(period.end)}::timestamptz + {after()}")
    return "(" + " AND ".join(clauses) + ")"


def _share(settings: RankingSettings, order: str) -> str:
    """What one place in a candidate list is worth before its weight.

    Reciprocal rank throws away how far apart the candidates are: the full-text list's clear
    winner and a long tail of one-word matches step down by the same 1 / (k + r). Relative fusion
    scales each list's own scores to 0..1 between its best and worst candidate, so a list that
    is sure counts for more than one that is guessing (LoCoMo nDCG@10 .505 -> .540)."""
    if settings.fusion == "rrf":
        return f"1 / ({float(settings.rrf_k)}::float8 + r)"
    high, low = "max(key) OVER ()", "min(key) OVER ()"
    best, worst = (high, low) if order == "DESC" else (low, high)
    return f"coalesce((key - {worst}) / nullif({best} - {worst}, 0), 1)"


def _missed_share(settings: RankingSettings) -> str:
    """The vector list's share of a candidate its index walk missed (`x` in vec_missed, closer
    than the list's worst): what it would get in the list (`w`: the list's best and worst key)."""
    if settings.fusion == "rrf":
        return f"1 / ({float(settings.rrf_k)}::float8 + (SELECT count(*) + 1 FROM vec v WHERE v.key < x.key))"
    return "least(1, coalesce((w.worst - x.key) / nullif(w.worst - w.best, 0), 1))"


def _by_id(q: Sql, p: Principal, candidates: str, alias: str) -> str:
    """Join each candidate to its memory by primary key, one index probe per candidate. A plain
    join let the planner scan the whole scope and hash it, deforming ~30 columns of every row
    (tuple deforming is the top function in a profile of the backend), for a candidate list of a
    few hundred rows at most (LoCoMo: search SQL 3-8 % faster, same rows). LIMIT 1 (the key is
    unique) keeps the subquery from being flattened back into a join."""
    return (f"CROSS JOIN LATERAL (SELECT * FROM memories {alias} WHERE {alias}.user_id = {q.arg(p.user_id)} "
            f"AND {alias}.id = {candidates}.id LIMIT 1) {alias}")


# Only the best-scoring episodes among the candidates pass their score on to their replies.
REPLY_SOURCES = 20
# A question mark in most scripts; full width in Chinese and Japanese, reversed in Arabic.
QUESTION = "[?\uff1f\u061f]"


def _neighbour(where: str, existed: str, direction: str, weight: str, gap: str) -> str:
    """The episode written next (`>`) or just before (`<`) each source that asks something, in
    its scope, within the gap, and the share of the source's fused score it takes. The neighbour
    is the adjacent live turn (of those `existed` at the search's `as_of`), taken only if the
    search's filters let it through: not the nearest turn that passes them, which under a narrow
    filter (a tag on 5% of 100,000) is some other turn further off, and a probe that walks past
    every turn in between."""
    order = "ASC" if direction == ">" else "DESC"
    window = (f"m.occurred_at <= s.occurred_at + {gap}" if direction == ">"
              else f"m.occurred_at >= s.occurred_at - {gap}")
    return f"""
        SELECT m.id, {weight} * s.fused AS s FROM sources s CROSS JOIN LATERAL (
            SELECT m.* FROM memories m
            WHERE s.asks AND m.user_id = s.user_id AND m.kind = 'episode' AND m.deleted_at IS NULL AND {existed}
              AND m.agent_id IS NOT DISTINCT FROM s.agent_id AND m.project_id IS NOT DISTINCT FROM s.project_id
              AND (m.occurred_at, m.created_at, m.id) {direction} (s.occurred_at, s.created_at, s.id)
              AND {window}
            ORDER BY m.occurred_at {order}, m.created_at {order}, m.id {order} LIMIT 1) m
        WHERE {where}"""


def _replies(q: Sql, p: Principal, where: str, f: MemoryFilter | None, settings: RankingSettings) -> str:
    """CTEs that add to `listed` the turns next to the best-matching questions.

    A question shares the words of a later search ("What are you researching?"), its answer
    often shares none ("Adoption agencies."). So an episode that asks something passes
    `reply_weight` of its fused score to the episode written next in its scope, within
    `reply_gap_minutes` (LoCoMo R@10 .685 -> .734, nDCG@10 .538 -> .577). A question is also often
    a follow-up on the turn before it, in the search's words where that turn has others ("Ana:
    We hiked around Lake Bled." / "Tom: Slovenia for your holiday? How was it?"), so it passes
    `preceding_weight` to that turn too (R@10 .747 -> .756, nDCG .593 -> .600; from every
    episode instead of questions only, nDCG .597 and one conversation worse). Facts,
    preferences and the other kinds stand alone and neither give nor take."""
    if settings.reply_weight <= 0 and settings.preceding_weight <= 0:
        return ""
    gap = f"{q.arg(settings.reply_gap_minutes)}::float8 * interval '1 minute'"
    existed = f"m.created_at <= {q.arg(f.as_of)}" if f is not None and f.as_of is not None else "TRUE"
    links = []
    if settings.reply_weight > 0:
        links.append(_neighbour(where, existed, ">", f"{q.arg(settings.reply_weight)}::float8", gap))
    if settings.preceding_weight > 0:
        links.append(_neighbour(where, existed, "<", f"{q.arg(settings.preceding_weight)}::float8", gap))
    union = "\n        UNION ALL".join(links)
    return f"""
    sources AS MATERIALIZED (
        SELECT s.fused, s.user_id, s.id, s.agent_id, s.project_id, s.occurred_at, s.created_at,
               s.content ~ {q.arg(QUESTION)} AS asks
        FROM (SELECT l.fused, x.user_id, x.id, x.agent_id, x.project_id, x.occurred_at, x.created_at, x.content
              FROM listed l {_by_id(q, p, "l", "x")}
              WHERE x.kind = 'episode'
              ORDER BY l.fused DESC, x.id LIMIT {REPLY_SOURCES}) s
    ),
    replies AS ({union}
    ),
    fused AS (
        SELECT id, sum(fused) AS fused, min(vec_rank) AS vec_rank, min(fts_rank) AS fts_rank,
               min(trgm_rank) AS trgm_rank, max(fts_key) AS fts_key, sum(reply) AS reply
        FROM (SELECT * FROM listed
              UNION ALL
              SELECT id, s, NULL, NULL, NULL, NULL, s FROM replies) u
        GROUP BY id
    ),"""


# A row of the SQL stage: an asyncpg record, or a mapping with its columns (a benchmark replaying
# captured rows, bench/after_sql.py; a row whose factor the Python stage changed, whose.py).
Row = asyncpg.Record | Mapping[str, Any]


@dataclass
class SearchStatement:
    """One search as the database will run it: the statement, its arguments, the transaction's
    settings, and what the Python stage after it needs to know."""

    sql: str
    args: list[Any]
    gucs: dict[str, str] = field(default_factory=dict)
    past: bool = False
    conflict: float = 1.0
    # Whether the vector list may walk the HNSW graph; past a filter that leaves few memories
    # they are sorted instead (`exact`, when retrieval/narrowing.py says so).
    walks_graph: bool = False


def build_search(p: Principal, parsed: ParsedQuery, f: MemoryFilter | None, *, limit: int, settings: RankingSettings,
                 vector: list[float] | None = None, model: str | None = None, dimension: int = 0,
                 min_similarity: float | None = None, exact: bool = False,
                 linked: Linked | None = None, common: Sequence[str] = (),
                 fenced: bool = False, speakers: Sequence[Sequence[UUID]] = (),
                 by_rows: Sequence[str] = ()) -> SearchStatement | None:
    """The SQL stage; None when no candidate list applies. `min_similarity` keeps only vector
    candidates at least that close (cosine): nearest neighbours always exist, but "what
    matches" (a forget preview) must not include them all. `exact`: the vector list sorts every
    memory passing the filter by distance, the index unused (retrieval/narrowing.py says when).
    `common`: words left out of full text's any-word list (retrieval/common_words.py). `fenced`: the
    full-text and trigram lists read the memories passing the filter before matching their words
    (narrowing.FENCE_BELOW, FENCE_SHARE). `speakers`: the entities the question names that speak
    turns in the scope (retrieval/conversations.py). `by_rows`: words full text reads by their own
    index entries, the filter checked on each row (narrowing.ENTRIES_PER_ROW)."""
    q = Sql()
    cap = q.arg(settings.search_candidates)
    conflict = settings.conflict_similarity
    if conflict is None:
        conflict = conflict_similarity(model)
    query, excluded = parsed.matched, parsed.excluded
    # A question about the past, or about a period it names, wants older versions as they ranked:
    # no recency, no penalty for being superseded, no newest-first among versions.
    past = parsed.tense == "past" or parsed.period is not None
    # Full text reads the query in the language it was parsed in (the stored column's, see text_search).
    config = text_search(parsed.lexicon)
    # Every list, and the replies, read the same visible rows: one clause, its values bound once.
    where, scope = _where(q, p, f, excluded, config)
    # The rows the word lists match: past the filter first when it leaves few (an OFFSET keeps the
    # planner from ANDing a word's whole index entry with them).
    words_from = f"(SELECT m.* FROM memories m WHERE {where} OFFSET 0) m WHERE true" if fenced \
        else f"memories m WHERE {where}"
    # A turn of a conversation the question's speaker took no part in (retrieval/conversations.py);
    # one naming them is theirs or about them, and is not looked up.
    subject = parsed.subject if settings.subject_boost != 1 else []
    elsewhere = other_conversation(q, p, f, speakers if subject else (), settings.other_conversation,
                                   settings.reply_gap_minutes)
    # name -> (weight, candidates query selecting id and key, order of key)
    lists: dict[str, tuple[float, str, str]] = {}
    if vector is not None and model and dimension and settings.weight_vector > 0:
        given = q.arg(vector)
        distance = exact_distance(dimension, given)
        # A forget preview lists what matches, never the speaker's conversations in its place.
        windowed = bool(elsewhere.took_part) and min_similarity is None
        # The walk follows the index's half-precision vectors; each candidate's key is its exact
        # distance. An index orders only by its own operator: "+ 0" makes the planner sort instead;
        # a scope sorted whole reads its vectors together (repository/scope_vectors.py). A filter's
        # few are read by its own index: through the scope's, a kind's 2,000 of a user's 10,419
        # were ~3 ms slower than from the table.
        together = scope_vectors.read_by(p) if exact and not narrows(f) else ""
        walk = f"""
            SELECT m.id, {distance} AS key{WALK_COLUMNS if windowed else ""} FROM memories m
            WHERE {where} AND m.embedding_model = {model_literal(model)} {together}
              {f"AND {distance} <= {q.arg(1 - min_similarity)}" if min_similarity is not None else ""}
            ORDER BY {f"({distance}) + 0" if exact else walk_distance(dimension, given)} LIMIT {cap}"""
        nearest = elsewhere.nearest(where, scope, distance, model_literal(model), cap, walk) if windowed else walk
        lists["vec"] = (settings.weight_vector, nearest, "ASC")
    if settings.weight_fulltext > 0 and query:
        ranked = fulltext_list(q, parsed, settings, config=config, words_from=words_from, common=common,
                               fenced=fenced, cap=cap, by_rows=by_rows, where=where, scope=scope)
        lists["fts"] = (settings.weight_fulltext, ranked, "DESC")
    if settings.weight_trigram > 0 and query and len(query.split()) <= settings.trigram_max_words:
        # Names, identifiers and typos in short queries; a long question's trigrams match
        # everything a little and cost a similarity per row. A word most memories share
        # ("Terraform" in 7% of 100,000) would have every one of them scored; those are full
        # text's to rank, so only the first `trigram_scan` are, and none once full text has
        # filled its list: the trigram list would be an arbitrary few hundred of thousands, at
        # the price of reading the trigram index for all of them (100,000 memories, p95 of
        # a search in the last 30 days 50 -> 46 ms, with no filter 26 -> 19 ms).
        text = q.arg(query)
        rescue = f"AND (SELECT count(*) FROM fts) < {cap}" if "fts" in lists else ""
        lists["trgm"] = (settings.weight_trigram, f"""
            SELECT c.id, word_similarity({text}, c.content) AS key FROM (
                SELECT m.id, m.content FROM {words_from} AND {text} <% m.content {rescue}
                LIMIT {q.arg(settings.trigram_scan)}) c
            ORDER BY key DESC, c.id LIMIT {cap}""", "DESC")
    if not lists:
        return None

    ctes = ",\n".join(
        f"{name} AS MATERIALIZED (SELECT id, key::float8 AS key, row_number() OVER (ORDER BY key {order}, id) AS r "
        f"FROM ({sql}) c)"
        for name, (_, sql, order) in lists.items())
    union = "\nUNION ALL\n".join(
        f"SELECT id, {q.arg(weight)}::float8 * {_share(settings, order)} AS s, '{name}' AS list, r, key FROM {name}"
        for name, (weight, _, order) in lists.items())
    others = [name for name in lists if name != "vec"]
    if "vec" in lists and others and not exact and settings.vector_rescore:
        # The index walk is approximate: where most of a scope is alike (thousands of notes from a
        # few templates) it can return none of the memories closest to the question, and those the
        # other lists found then had no vector share at all (bench/recall_quality.py --filler
        # 10000). Such a candidate gets the share its cosine, computed exactly, would hold in the
        # vector list (none past its worst): where the walk is exact nothing changes.
        ctes += f""",
    vec_missed AS MATERIALIZED (
        SELECT c.id, ({distance})::float8 AS key
        FROM (SELECT id FROM {" UNION SELECT id FROM ".join(others)}) c
        CROSS JOIN LATERAL (SELECT m.embedding, m.embedding_model FROM memories m
                            WHERE m.user_id = {q.arg(p.user_id)} AND m.id = c.id LIMIT 1) m
        WHERE m.embedding_model = {model_literal(model)} AND NOT EXISTS (SELECT 1 FROM vec v WHERE v.id = c.id)
    )"""
        union += f"""
UNION ALL
SELECT x.id, {q.arg(lists["vec"][0])}::float8 * {_missed_share(settings)} AS s, 'vec' AS list,
       (SELECT count(*) + 1 FROM vec v WHERE v.key < x.key) AS r, x.key
FROM vec_missed x, (SELECT (SELECT min(key) FROM vec) AS best, (SELECT max(key) FROM vec) AS worst) w
WHERE x.key < w.worst"""
    as_of = f.as_of if f is not None else None
    reference = q.arg(as_of) + "::timestamptz" if as_of is not None else "now()"
    floor = q.arg(1.0 if past else settings.recency_floor)
    half_life = q.arg(settings.recency_half_life_days)
    # A superseded memory ranks below its live successor (penalised, and re-ordered below), once
    # that is true: a value dated ahead ("moving to Berlin in March") replaces nothing yet.
    penalty = (f"CASE WHEN s.id IS NULL THEN 1 ELSE {q.arg(settings.superseded_penalty)}::float8 END"
               if as_of is None and not past else "1")
    # A forget preview (min_similarity) lists what matches, never what merely answered it.
    replies = _replies(q, p, where, f, settings) if min_similarity is None else ""
    # A question about someone is about their memories: a memory naming everyone it names gains
    # over one that only shares its other words ("how does Pavel Jankowski keep fit" is not
    # answered by "Wendell Jankowski keeps fit with rowing"). Naming them only to address them
    # ("Thanks, Pavel!") earns nothing: checked among the best `window` only (`naming.speaks_of`).
    text = TEXT
    names = naming(q, text, subject, parsed.full_names, whole_word, linked)
    named = f"CASE WHEN {names} THEN {q.arg(settings.subject_boost)}::float8 ELSE 1 END" if names else "1"
    spoken_of = naming(q, text, subject, parsed.full_names, partial(speaks_of, greetings=parsed.lexicon.greetings),
                        linked.about() if linked is not None else None)
    # A note the graph files about someone else, naming none of them, loses what theirs gain: a
    # colleague's "based in the Lagos office" shares more words with "Which office is Kenji in?"
    # than Kenji's own "relocated to Singapore" does.
    elsewhere_about = ""
    if linked is not None and any(linked.entities.values()) and names:
        user_asked = speaks_of_user(parsed.asked or parsed.text, parsed.lexicon)
        elsewhere_about = (f"WHEN m.named = 1 AND {linked.about_another(q, sorted(MOMENTS), user_asked=user_asked)} "
                           f"THEN 1 / {q.arg(settings.subject_boost)}::float8 ")
    about = (f"CASE WHEN m.named > 1 AND {spoken_of} THEN m.named {elsewhere_about}ELSE 1 END" if spoken_of
             else "m.named")
    window = limit + ADDRESSED_WINDOW if spoken_of else limit
    # A query that names a period is about what was written in it (retrieval/dates.py).
    period = (f"CASE WHEN {_in_period(q, parsed.period, settings.period_after_days)} "
              f"THEN {q.arg(settings.period_boost)}::float8 ELSE 1 END"
              if parsed.period is not None and settings.period_boost != 1 else "1")
    sql = f"""
    WITH {elsewhere.ctes}{ctes},
    listed AS (
        SELECT id, sum(s) AS fused,
               min(r) FILTER (WHERE list = 'vec') AS vec_rank,
               min(r) FILTER (WHERE list = 'fts') AS fts_rank,
               min(r) FILTER (WHERE list = 'trgm') AS trgm_rank,
               max(key) FILTER (WHERE list = 'fts') AS fts_key,
               0::float8 AS reply
        FROM ({union}) u GROUP BY id
    ),{replies or " fused AS (SELECT * FROM listed),"}
    scored AS (
        SELECT m.user_id, m.id, m.title, m.content, m.kind, m.tags, m.agent_id, m.project_id, m.occurred_at,
               {"m.embedding" if conflict < 1 else "NULL::vector AS embedding"},
               m.superseded_by, f.fused, f.vec_rank, f.fts_rank, f.trgm_rank, f.fts_key, f.reply,
               {floor}::float8 + (1 - {floor}::float8)
                   * power(2::float8, -{_halvings(reference, half_life)}) AS recency,
               {named}::float8 AS named, {period}::float8 AS period
        FROM fused f {_by_id(q, p, "f", "m")}
    ),
    best AS (
        SELECT m.*, c.conversation, s.id AS successor, fused * recency * {penalty} * period * c.conversation AS base
        FROM scored m LEFT JOIN memories s
            ON s.user_id = m.user_id AND s.id = m.superseded_by AND s.deleted_at IS NULL
           AND s.occurred_at <= {reference}
        CROSS JOIN LATERAL (SELECT CASE WHEN m.named > 1 THEN 1 ELSE {elsewhere.factor} END::float8 AS conversation) c
        ORDER BY fused * recency * {penalty} * period * c.conversation * named DESC, length(m.content), m.id
        LIMIT {q.arg(window)}
    )
    SELECT m.*, a.about, m.base * a.about AS score
    FROM best m CROSS JOIN LATERAL (SELECT ({about})::float8 AS about) a
    ORDER BY score DESC, length(m.content), m.id
    LIMIT {q.arg(limit)}
    """
    gucs = {"pg_trgm__word_similarity_threshold": str(settings.trigram_threshold),
            "hnsw__ef_search": str(settings.hnsw_ef_search), "hnsw__iterative_scan": "relaxed_order"}
    return SearchStatement(sql, q.args, gucs, past, conflict, walks_graph="vec" in lists and not exact)
