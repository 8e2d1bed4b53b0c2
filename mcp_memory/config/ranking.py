"""The ranking section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RankingSettings(BaseModel):
    """Advanced: how search ranks (docs/ranking.md). The defaults were settled on several dev
    sets phrased differently; change them only with the benchmarks at hand (docs/benchmarks.md)."""

    related_limit: int = Field(default=5, ge=0, le=20, description=(
        "memory_write / memory_update return up to this many close memories (`related`); 0 turns it off."))
    related_similarity: float | None = Field(default=None, ge=0, le=1, description=(
        "Least cosine for `related`. Default: the model's conflict threshold minus 0.25 (MiniLM 0.40)."))
    recency_floor: float = Field(default=0.7, ge=0, le=1, description="1 turns recency off.")
    recency_half_life_days: float = Field(default=180, gt=0, description=(
        "Age at which the recency factor is halfway between 1 and recency_floor."))
    period_boost: float = Field(default=3.0, ge=1, le=10, description=(
        "Score factor for a memory written in the period a query names ('in October 2023', 'on 3 June, "
        "2023', 'during June', 'before 2019'); 1 turns it off."))
    period_after_days: float = Field(default=14, ge=0, description=(
        "What happened in a period is often written down after it ('last Friday I …'): memories up to "
        "this many days past its end count as in it."))
    subject_boost: float = Field(default=1.5, ge=1, le=10, description=(
        "Score factor for a memory naming every person or thing the question names (capitalised words), "
        "other than only addressing them (\"Thanks, Mel!\"); a note the graph files about someone else, naming "
        "none of them, gets its inverse, and for a question about the user alone notes about their people go "
        "after the user's. 1 turns all of it off."))
    vector_name_share: float = Field(default=0.3, gt=0, le=1, description=(
        "A name the question holds whose turns are at least this share of the memories around them (the "
        "turns within reply_gap_minutes of theirs, and every memory that is no turn: a conversation's speaker) "
        "is left out of the question's vector: it tells the vector little, and short turns carrying it came "
        "first; the subject factor and full text still read it. 1 turns it off."))
    other_conversation: float = Field(default=0.25, gt=0, le=1, description=(
        "Score factor for a turn (episode) of a conversation the question's named speaker took no part in: "
        "no turn of theirs within reply_gap_minutes of it, in its scope. A store of one conversation is "
        "ranked as without it. 1 turns it off."))
    present_focus: bool = Field(default=True, description=(
        "For a question about the present (a time word such as \"now\", or none and an attribute holding one "
        "value at a time): rank its subject's memories that answer it first, newest first, "
        "judged by similarity with the subject taken out (retrieval/focus.py); for one asking such an "
        "attribute in a dated span ('in March 2024'), the one written last before the span ended first "
        "(retrieval/then.py)."))
    present_margin: float = Field(default=0.15, ge=0, le=2, description=(
        "When only two of the subject's memories are compared: how far below the closer one's cosine "
        "with the question (names masked) the other still answers it."))
    summary_turns_kept: int = Field(default=2, ge=0, le=50, description=(
        "Where a session's summary and turns it sums up both answer a search: the summary takes the place "
        "of its best ranked turn, this many of its turns keep theirs after it, the rest go to the end of "
        "the list (retrieval/summaries.py); auto-recall shows the summary for them all."))
    graph_rules_keys: Literal["off", "facts", "replace"] = Field(default="off", description=(
        "When the writer passes no key: 'facts' files a memory under the one attribute its words point "
        "to (by the lexicon) so a question about that attribute finds its values in order; 'replace' also "
        "lets a newer such value replace the older, as a writer's key does; 'off' reads no key from text."))
    graph_adopt_floor: float = Field(default=0.65, ge=0, le=1, description=(
        "A writer's key in words the lexicon does not know takes the attribute of the subject's one current "
        "value whose text says the same kind of thing: at least this close with the names masked (cosine), "
        "or naming that value; from then on those words mean that attribute for the subject. 1 turns it off."))
    graph_doubt_floor: float = Field(default=0.30, ge=0, le=1, description=(
        "A question about a subject's keyed attribute gets the values in order of validity unless a newer "
        "fact of the subject, under a key the lexicon does not know, says the same kind of thing: at least "
        "this close with the names masked (cosine). Doubt needs less than a replace: versions phrased far "
        "apart measure .34-.43, the subject's other facts .12-.15."))
    superseded_penalty: float = Field(default=0.5, gt=0, le=1,
                                      description="Score factor for a memory another one supersedes.")
    conflict_similarity: float | None = Field(default=None, ge=0, le=1, description=(
        "Results this similar (cosine) are versions of one fact (episodes aside: a turn replaces no other): "
        "among those the query's words match equally well, the newest ranks first (so 'when did order 5 ship' "
        "keeps 'order 5 shipped' above a newer 'order 7 shipped'). Default: set per local model (MiniLM 0.65, e5 0.88, "
        "static 0.75), 0.8 for others. 1 turns it off."))
    reply_weight: float = Field(default=0.5, ge=0, le=1, description=(
        "An episode that asks a question (holds ?, ？ or ؟) passes this share of its score to the episode "
        "written next in its scope, the reply (only the best 20 candidate episodes pass it on); 0 turns it off."))
    preceding_weight: float = Field(default=0.25, ge=0, le=1, description=(
        "An episode that asks a question also passes this share of its score to the episode written just "
        "before it in its scope, the turn it follows up on; 0 turns it off."))
    reply_gap_minutes: float = Field(default=30, ge=0, description=(
        "A later episode is no reply (an earlier one nothing the question follows up on) when it occurred "
        "more than this after (before) the question."))
    # Retrieval
    search_candidates: int = Field(default=100, ge=10, le=2000, description=(
        "Candidates each list (vector, full text, trigram) brings to the fusion."))
    search_kept_plans: int = Field(default=32, ge=0, description=(
        "A search no filter narrows runs on the generic plan its statement keeps on a database connection, "
        "planned at its first call there instead of at every call (one LoCoMo conversation's searches 16.6 -> 12.9 ms "
        "p50, the same hits); "
        "each connection keeps the first this many statements' plans, each ~0.6-1 MB of its backend's memory "
        "(788 LoCoMo questions are 48 statements, the first 32 of them 96% of the searches). A "
        "filtered search, or one in a scope small beside the store, is planned for its values, and so is every "
        "search through a transaction-mode pooler (nothing is kept there). 0: every search planned for its values."))
    fusion: Literal["relative", "rrf"] = Field(default="relative", description=(
        "relative: weight x each list's score scaled to 0..1 between its best and worst candidate; "
        "rrf: weight / (k + rank)."))
    rrf_k: int = Field(default=20, ge=1, description="Only with fusion rrf.")
    weight_vector: float = Field(default=0.6, ge=0, description=(
        "Weight of the vector (cosine) list in the fusion; 0 turns the list off."))
    weight_fulltext: float = Field(default=1.0, ge=0, description="Weight of the full-text list in the fusion.")
    weight_trigram: float = Field(default=0.5, ge=0, description="Weight of the trigram list in the fusion.")
    fulltext_scan: int = Field(default=1000, ge=100, description=(
        "At most this many rows holding every query word, and as many holding any, are ranked by full text "
        "(a common word must not rank a whole large scope); each word is read up to this many of its rows, and "
        "those holding the rarest words are ranked first."))
    fulltext_common_rows: int = Field(default=10000, ge=0, description=(
        "A query word the planner expects in more memories of the scope than this is left out of full text's "
        "any-word list (the every-word list still requires it; the question's rarest word always stays): it "
        "would fill that list with an arbitrary few of its memories at the cost of reading all of them. 0: every "
        "word is listed by."))
    fulltext_idf: bool = Field(default=True, description=(
        "Weigh each query word by its rarity among the candidates (BM25's idf) instead of counting every word alike."))
    trigram_threshold: float = Field(default=0.3, gt=0, le=1, description=(
        "Least trigram similarity (pg_trgm) for the trigram list."))
    trigram_scan: int = Field(default=300, ge=10, description=(
        "At most this many rows that pass the trigram threshold are scored by similarity."))
    trigram_max_words: int = Field(default=2, ge=0, description=(
        "Longer queries skip the trigram list (it compares every candidate: 200 ms at 20,000 memories for 4 words); "
        "so does a query whose words full text already finds in a full list of candidates."))
    hnsw_ef_search: int = Field(default=100, ge=10, le=1000, description=(
        "pgvector's hnsw.ef_search for the vector list: higher finds more of the true nearest, slower."))
    vector_rescore: bool = Field(default=True, description=(
        "A full-text or trigram candidate the vector list's index walk did not return is given the place its "
        "cosine (computed exactly) would hold in that list: where most of a scope is alike the walk can miss "
        "a memory closer than all it returns. false: the walk's own list only."))
