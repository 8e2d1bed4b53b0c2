"""Hybrid retrieval run: the statement (statement.py) in one transaction, then the Python stage
(reorder.py)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg

from ..config import Settings
from ..graph.about_user import about_someone_else, asks_of_user_alone, speaks_of_user
from ..lexicon import Lexicon
from ..lexicon.english import ENGLISH
from ..models import MOMENTS, MemoryFilter, Principal, SearchHit, SearchReading
from ..repository import MemoryRepository
from ..repository.graph_reads import described, subjects_named
from ..repository.sql import fetch_on_kept_plan
from . import focus, then, whose
from .broad_names import broad_names, speakers, spoken_shares, without_names
from .common_words import too_common, word_rows
from .conversations import SPEAKER_TURNS_READ, told_apart
from .hop import one_hop
from .keyed import asked_now, facts_named, keyed_first, keys_out, named_in
from .naming import Linked
from .narrowing import Narrowing, narrowing, plan_kept
from .query import ParsedQuery
from .reorder import after_sql
from .statement import SearchStatement, build_search, text_search
from .summaries import sources_of, summaries_first

__all__ = ["SearchStatement", "build_search", "plan", "search"]


# How many memories naming each subject of a result are read for how it was introduced
# (`_their_people_read`): someone in the user's life is named so in their first notes.
SUBJECT_TEXTS_READ = 5


async def _their_people_read(conn: asyncpg.Connection, p: Principal, parsed: ParsedQuery,
                             rows: Sequence[asyncpg.Record]) -> ParsedQuery:
    """`parsed`, told which of the best `rows` are about someone in the user's life by the graph
    (whose.py `about_their_people`), where it asks of the user alone. Only notes whose words leave it
    open are read for: not a moment, not speaking of the user, not about someone in their life by
    their words ("My sister moved to Oslo.")."""
    lexicon = parsed.lexicon
    if not asks_of_user_alone(parsed.asked or parsed.text, lexicon):
        return parsed
    undecided = [r["id"] for r in rows[:whose.WINDOW] if r["kind"] not in MOMENTS
                 and not speaks_of_user(r["content"], lexicon) and not about_someone_else(r["content"], lexicon)]
    if not undecided:
        return parsed
    subjects = await subjects_named(conn, p, undecided, SUBJECT_TEXTS_READ)
    return replace(parsed, about_their_people=whose.about_their_people(subjects, lexicon))


async def search(repo: MemoryRepository, p: Principal, parsed: ParsedQuery, f: MemoryFilter | None, *,
                 limit: int, settings: Settings, explain: bool = False, vector: list[float] | None = None,
                 model: str | None = None, dimension: int = 0, min_similarity: float | None = None,
                 vectors: focus.TextVectors | None = None, lexicon: Lexicon = ENGLISH,
                 reading: SearchReading | None = None,
                 alone: Callable[[], Awaitable[bool]] | None = None, unnamed: Sequence[str] = (),
                 told: Callable[[list[str]], None] | None = None) -> list[SearchHit]:
    """`vectors` (the service's embedder behind its cache) lets a question about the present
    that names someone find which of their memories answer it (retrieval/focus.py); a question
    about a known entity's keyed attribute gets its values in order of validity (keyed.py); a
    session's summary comes before the turns it sums up (summaries.py). Those stages reorder at
    least a window's worth of hits, cut to `limit` after them: asking for 3 gives the first 3 of
    what asking for 10 gives, not the newest of 3 versions where 10 would have found a newer one.
    `reading`, when given, is told how the statement read the store (explain); `alone`: whether the
    store is nearly all the user's (retrieval/common_words.py; None: taken as shared). `unnamed`: the
    names `vector` was made without (broad_names.Speakers' guess), embedded again if the search
    leaves out others; `told`: given the names it left out."""
    linked: Linked | None = None
    common: list[str] = []
    by_rows: list[str] = []
    narrowed = Narrowing(False)
    speaking: list[tuple[UUID, ...]] = []
    ranked = max(limit, whose.WINDOW)

    whom = then.whose_question(parsed)  # whom it asks of, for the subject factor

    def built(exact: bool = False) -> SearchStatement | None:
        return build_search(p, whom, f, limit=ranked, settings=settings, vector=vector, model=model,
                            dimension=dimension, min_similarity=min_similarity, exact=exact, linked=linked,
                            common=common, fenced=narrowed.fenced, speakers=speaking, by_rows=by_rows)

    statement = built()
    if statement is None:
        return []
    async with repo.reading(p, **statement.gucs) as conn:
        index_rows = await repo.index_rows(conn)
        narrowed = await narrowing(conn, p, f, model, index_rows=index_rows, candidates=settings.search_candidates,
                                   remembered=repo.counted) if statement.walks_graph and model else Narrowing(False)
        exact = narrowed.exact
        named = await named_in(conn, p, whom)
        # A forget preview lists what matches the words, not what the graph knows of them.
        facts = await facts_named(conn, p, named, f) if min_similarity is None else []
        owners = [r for r in facts if r["entity_id"] in named.owner]  # for a hop alone
        facts = [r for r in facts if r["entity_id"] not in named.owner]
        if (keyless := keys_out(whom, facts)) is not whom:
            whom, parsed, named = keyless, keys_out(parsed, facts), named.within(keyless.subject)
        parsed = asked_now(parsed, facts)
        linked = named.linked if settings.subject_boost != 1 else None
        # A listing by similarity (a forget preview) matches the question as said.
        left_out: list[str] = []
        said: str | None = None
        reads_speakers = settings.vector_name_share < 1 or settings.other_conversation < 1
        if linked is not None and min_similarity is None and reads_speakers:
            shares = await spoken_shares(conn, p, linked, settings.vector_name_share, settings.reply_gap_minutes,
                                         repo.counted)
            if settings.other_conversation < 1:
                speaking = await told_apart(conn, p, speakers(shares, SPEAKER_TURNS_READ),
                                            settings.reply_gap_minutes, repo.counted)
            if vector is not None and vectors is not None:
                left_out = broad_names(shares, settings.vector_name_share)
                said = without_names(parsed.text, left_out) if left_out else None
                if said is None:
                    left_out = []
        if sorted(left_out) != sorted(unnamed) and vector is not None and vectors is not None:
            # Embedded here, the connection held meanwhile: which names leave is known only now.
            vector = await vectors.query(said or parsed.text)
        if told is not None and min_similarity is None:
            told(left_out)
        if left_out and reading is not None:
            reading.names_left_out_of_vector = left_out
        if settings.weight_fulltext > 0 and not narrowed.fenced and alone is not None:  # read first: its rows only
            rows_of = await word_rows(conn, p, parsed.matched, parsed.lexicon, text_search(parsed.lexicon),
                                      index_rows=index_rows, cutoff=settings.fulltext_common_rows, alone=alone,
                                      remembered=repo.counted)
            common = too_common(rows_of, settings.fulltext_common_rows)
            by_rows = narrowed.by_rows(rows_of)
        if exact or linked is not None or common or narrowed.fenced or by_rows:
            statement = built(exact=exact) or statement
        kept = settings.search_kept_plans > 0 and min_similarity is None and plan_kept(f, narrowed)
        rows = await (fetch_on_kept_plan(conn, statement.sql, *statement.args, most=settings.search_kept_plans)
                      if kept else conn.fetch(statement.sql, *statement.args))
        if reading is not None:
            reading.words_left_out = list(common)
        hop = await one_hop(conn, p, parsed, [*facts, *owners], f) if facts or owners else None
        # Which of the rows someone described, where a newer plain memory may go before a keyed value
        # (keyed.py `newer_unsaid`: a question about now, whose answers the focus finds).
        follows = bool(facts) and hop is None and settings.present_focus and focus.applies(parsed)
        said = await described(conn, p, [r["id"] for r in rows]) if follows else frozenset()
        parsed = await _their_people_read(conn, p, parsed, rows) if min_similarity is None else parsed
        summed_up = await sources_of(conn, p, rows) if min_similarity is None else {}
    if min_similarity is None and settings.subject_boost != 1:
        rows = whose.theirs_after(rows, parsed, settings.subject_boost)
    ordered = await after_sql(rows, parsed, past=statement.past, conflict=statement.conflict, settings=settings,
                              explain=explain, vectors=vectors, listing=min_similarity is not None)
    hits = ordered.hits
    # A hop's values go first, then the attribute that led to them ("Kwame's manager"), as asked.
    led = [*facts, *owners] if hop is not None else facts
    for known, attribute in ((led, hop and hop.relation), (hop and hop.facts, hop and hop.attribute)):
        if known:
            hits = await keyed_first(parsed, known, hits, lexicon=lexicon, limit=ranked,
                                     snippet_chars=settings.snippet_chars, explain=explain, vectors=vectors,
                                     doubt_floor=settings.graph_doubt_floor, attribute=attribute,
                                     answers=ordered.answers if follows else frozenset(), described=said,
                                     now=f.as_of if f is not None and f.as_of is not None else datetime.now(UTC))
    if summed_up:
        hits = summaries_first(hits, summed_up, settings.summary_turns_kept)
    return hits[:limit]


async def plan(repo: MemoryRepository, p: Principal, statement: SearchStatement) -> dict[str, Any]:
    """The planner's plan for a search (EXPLAIN, not run): for checking which indexes it uses."""
    async with repo.transaction(p, **statement.gucs) as conn:
        text = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {statement.sql}", *statement.args)
    return json.loads(text)[0]["Plan"]
