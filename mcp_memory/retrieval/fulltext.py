"""Full text's candidate list in the search statement: the memories holding a question's words,
each word weighed by its rarity among them (BM25's idf), ts_rank breaking ties.

Ranking scores every match, and a common word matches a whole large scope, so at most
`fulltext_scan` memories holding every word are ranked, and as many holding any. Where more hold
any, which ones: a LIMIT on one scan keeps the first its bitmap meets in the table's physical order,
in a store written over time the oldest (a million memories in one scope, a labelled conversation's
turns spread among them: R@10 .54 against .80 without the million; docs/benchmarks.md, "Which
memories full text ranks"). So each word (a quoted phrase as one) is read on its own, up to
`fulltext_scan` of its memories, and those holding the rarest word come first: the memories that
can rank highest hold the words that weigh most (MaxScore's reasoning), and a word fewer memories
hold than the limit has all of them ranked. Among memories whose rarest word is the same, the
table's order, as before. Where fewer hold any of the words, the list is every one of them, as
before."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..config import RankingSettings
from ..repository import Sql
from .common_words import MOST_WORDS, words_of
from .naming import first_name_of
from .query import ParsedQuery

# A phrase in a question, as websearch_to_tsquery reads one.
QUOTED = re.compile(r'"([^"]*)"')
# What the subject factor and a surname's first name read of a memory.
TEXT = "(m.content || ' ' || coalesce(m.title, ''))"


def _any_word(q: Sql, parsed: ParsedQuery, words: str, config: str, common: Sequence[str]) -> tuple[str, list[str]]:
    """The question (`words`, bound) as a tsquery any of whose words a memory may hold, and the
    other forms of its words it matches by."""
    # websearch syntax ANDs every word; a question rarely shares all its words with the answer,
    # so conjunctions become disjunctions (negations and phrases keep their meaning).
    any_word = f"regexp_replace(websearch_to_tsquery({config}, {words})::text, ' & (?!!)', ' | ', 'g')::tsquery"
    for word in common:
        any_word = f"ts_rewrite({any_word}, plainto_tsquery({config}, {q.arg(word)}), ''::tsquery)"
    # A question's word matches by the forms a memory says it in too ("did she grow up": "she grew up";
    # the lexicon's `word_forms`), each weighed by its own rarity; a word left out as too common
    # leaves its forms out.
    forms = parsed.lexicon.other_forms(w for w in parsed.lexicon.words(parsed.matched) if w not in common)
    if forms:
        any_word = f"({any_word} || websearch_to_tsquery({config}, {q.arg(' or '.join(forms))}))"
    return any_word, forms


def read_apart(parsed: ParsedQuery, forms: Sequence[str], common: Sequence[str], fenced: bool) -> list[tuple[str, str]]:
    """What is read one at a time, rarest first, as (tsquery function, text): each quoted phrase
    of the question, its other words (stop words and `common` ones out) and their other `forms`.
    Nothing where a filter is read first (narrowing.FENCE_BELOW: fewer memories pass it than the
    list holds) or for a long text pasted as a query, whose words would each cost a scan."""
    lexicon = parsed.lexicon
    phrases = [p for p in QUOTED.findall(parsed.matched) if lexicon.words(p)]
    words = [w for w in words_of(QUOTED.sub(" ", parsed.matched), lexicon) if w not in common]
    apart = [*(("phraseto_tsquery", p) for p in phrases), *(("plainto_tsquery", w) for w in [*words, *forms])]
    return [] if fenced or len(apart) > MOST_WORDS else apart


@dataclass(frozen=True)
class Rows:
    """Where the words read apart are read (never past a filter read first: `read_apart`): `where`,
    the clauses of the memories the statement may list, `scope` the scope's alone (no filter's);
    `by_rows`, the words read by their own index entries, the filter checked on each of their rows."""

    where: str
    scope: str
    by_rows: Sequence[str]

    def holding(self, k: int, match: str, read: str, scan: str, word: str) -> str:
        """The first `scan` memories holding a word (`match`), as the `k`th word's."""
        if word in self.by_rows:
            # OFFSET 0: the planner cannot AND the filter's index entries into the word's.
            return (f"(SELECT {k} AS w, m.at, m.id, m.fts{read} FROM (SELECT m.*, m.ctid AS at FROM memories m "
                    f"WHERE {self.scope} AND {match} OFFSET 0) m WHERE {self.where} LIMIT {scan})")
        return (f"(SELECT {k} AS w, m.ctid AS at, m.id, m.fts{read} FROM memories m "
                f"WHERE {self.where} AND {match} LIMIT {scan})")


def _rarest_first(q: Sql, apart: Sequence[tuple[str, str]], config: str, rows: Rows, read: str,
                  scan: str) -> tuple[str, str]:
    """A CTE of each word's (or phrase's) first `scan` memories and the branch choosing `scan` of
    them, those holding the rarest first, each still matching the any-word query `pq.tsq` as
    websearch syntax reads the question. Among those whose rarest word is the same, the table's
    order, as one scan had it: where the words cannot tell memories apart, the list holds what it
    held. Where only the scope narrows the rows, the words are one scan over an array of them, one
    statement whatever their number (a search's plan is kept by its statement's text,
    repository/sql.py fetch_on_kept_plan: 788 LoCoMo questions made 127 statements, so 48); a scan
    returns a word's rows in the table's order by whichever index it reads. Under a filter each word
    is a scan of its own, planned for its value: the planner then reads the user's entries of a kind
    (memories_user_kind_fts) or a rare word's own (`rows.by_rows`), where for a word it cannot see it
    read the word's entries of every user."""
    if rows.by_rows or rows.where != rows.scope:
        scans = "\n                UNION ALL ".join(
            rows.holding(k, f"m.fts @@ {function}({config}, {q.arg(text)})", read, scan, text)
            for k, (function, text) in enumerate(apart))
    else:
        texts, phrase = q.arg([text for _, text in apart]), q.arg([f == "phraseto_tsquery" for f, _ in apart])
        scans = f"""SELECT w.k AS w, m.at, m.id, m.fts{", m.text" if read else ""}
                FROM unnest({texts}::text[], {phrase}::bool[]) WITH ORDINALITY w(text, phrase, k)
                CROSS JOIN LATERAL (SELECT m.ctid AS at, m.id, m.fts{read} FROM memories m
                    WHERE {rows.where} AND m.fts @@ CASE WHEN w.phrase THEN phraseto_tsquery({config}, w.text)
                                                          ELSE plainto_tsquery({config}, w.text) END
                    LIMIT {scan}) m"""
    ctes = f"""hits AS MATERIALIZED ({scans}),
            """
    branch = f"""(SELECT r.id, r.fts{", r.text" if read else ""}
                               FROM (SELECT DISTINCT ON (h.id) h.*, n.n FROM hits h
                                     JOIN (SELECT w, count(*) AS n FROM hits GROUP BY w) n USING (w)
                                     ORDER BY h.id, n.n) r
                               WHERE r.fts @@ pq.tsq ORDER BY r.n, r.at LIMIT {scan})"""
    return ctes, branch


def fulltext_list(q: Sql, parsed: ParsedQuery, settings: RankingSettings, *, config: str, words_from: str,
                  common: Sequence[str], fenced: bool, cap: str, where: str, scope: str,
                  by_rows: Sequence[str] = ()) -> str:
    """The list's query, selecting id and key (higher is better). `words_from` is the FROM and
    WHERE of the memories the statement may list (`where` its clauses, `scope` the scope's alone);
    `common`: words left out of the any-word list (retrieval/common_words.py); `fenced`: a filter's
    memories are read first; `by_rows`: words read by their own index entries, the filter checked on
    each of their rows (retrieval/narrowing.py)."""
    words = q.arg(parsed.matched)
    any_word, forms = _any_word(q, parsed, words, config, common)
    scan = q.arg(settings.fulltext_scan)
    key, idf, called = "ts_rank(c.fts, c.tsq)", "", ""
    if settings.fulltext_idf:
        # ts_rank counts every query word alike, so a word in half the scope (a speaker's
        # name) outweighs the rare one the question is about. Weight each word by its rarity
        # among the candidates (BM25's idf; they are every memory holding a query word when
        # there are fewer than `fulltext_scan`, otherwise those of the rarest words and a few of
        # the rest: no extra index scan) and let ts_rank break ties. Each word's count is its own
        # pass over the candidates: grouping their product by word sorted tsqueries (statement 7%
        # slower, bench/sql_ab.py).
        # A surname the question names in full is matched by the first name alone too ("From
        # standup: Benedikt picked up Osprey."): colleagues' notes rarely repeat it, and
        # lacking its weight such a note ranked below all of the person's other memories.
        first, alone = first_name_of(q, parsed.full_names, config)
        said = q.arg(" ".join([parsed.matched, *forms])) if forms else words
        called = " OR (c.fts @@ w.first AND c.text ~ w.alone)" if parsed.full_names else ""
        key = (f"coalesce((SELECT sum(w.idf) FROM idf w WHERE c.fts @@ w.q{called}), 0)"
               " + 0.1 * ts_rank(c.fts, c.tsq)")
        idf = f""",
            idf AS MATERIALIZED (SELECT t.q, t.first, t.alone,
                                        ln(1 + n.n / (0.5 + (SELECT count(*) FROM c WHERE c.fts @@ t.q))) AS idf
                    FROM (SELECT DISTINCT quote_literal(lexeme)::tsquery AS q, {first} AS first, {alone} AS alone
                          FROM unnest(tsvector_to_array(to_tsvector({config}, {said}))) lexeme) t,
                         (SELECT count(*)::float8 AS n FROM c) n)"""
    read = f", {TEXT} AS text" if called else ""
    ctes, any_rows = "", f"(SELECT m.id, m.fts{read} FROM {words_from} AND m.fts @@ {any_word} LIMIT {scan})"
    if each := read_apart(parsed, forms, common, fenced):
        ctes, any_rows = _rarest_first(q, each, config, Rows(where, scope, by_rows), read, scan)
    # The any-word query is made once (OFFSET 0 keeps it a row of its own) for what reads it row by row;
    # an index scan names its query's functions itself, constant in a plan made for the values and made
    # once per scan in a generic one (retrieval/narrowing.py plan_kept), where a reference to the row
    # would be the functions again for every row (a LoCoMo statement by the generic plan 13.7 against
    # 7.3 ms).
    return f"""
            WITH {ctes}c AS (
                SELECT DISTINCT ON (id) id, fts, {"text, " if called else ""}pq.tsq
                FROM (SELECT {any_word} AS tsq OFFSET 0) pq,
                     LATERAL ((SELECT m.id, m.fts{read} FROM {words_from}
                                 AND m.fts @@ websearch_to_tsquery({config}, {words}) LIMIT {scan})
                              UNION ALL
                              {any_rows}) both_){idf}
            SELECT c.id, {key} AS key FROM c
            ORDER BY key DESC, c.id LIMIT {cap}"""
