"""Every knob of the server, read once from the environment (prefix ``MCP_MEMORY_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from . import limits
from .hookprotocol import RECALL_TIMEOUT_S, SESSION_START_TIMEOUT_S


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


# A claimed job's lease must outlast its model call by this much (candidates, applying).
LEASE_MARGIN_S = 2.0
# One decision asks for at most ~2,000 characters per memory and 300 tokens of answer.
MIN_TOKENS_PER_DAY = 4000


ENV_PREFIX = "MCP_MEMORY_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # Storage
    database_url: str | None = Field(
        default=None,
        description="PostgreSQL >= 15 with pgvector >= 0.7 (postgresql://user:pass@host/db); unset means the "
        "embedded server under data_dir.",
    )
    data_dir: Path = Field(default_factory=default_data_dir, description=(
        "Where the embedded database, the hook status files and the logs live; default: the platform's user "
        "data directory (~/.local/share/mcp-memory on Linux)."))
    pool_min_size: int = Field(default=1, ge=0, description="Connections the pool keeps open when idle.")
    pool_max_size: int = Field(default=10, ge=1, description="Most connections one server process opens.")
    db_start_timeout_s: float = Field(default=60.0, gt=0, description=(
        "How long a tool call waits for the database at start-up; also the most starting the embedded "
        "server (or waiting for another process's start lock) and connecting may take."))

    # Local (stdio) identity; HTTP sessions take theirs from the credential.
    user: str | None = Field(default=None, description="Defaults to the OS user.")
    agent: str | None = Field(default=None, description="Defaults to the MCP client's name.")
    local_permissions: str = Field(default="read,write,forget,admin", description=(
        "What a stdio session may do, comma-separated: read, write, forget, admin. 'read' makes a harness "
        "read-only; 'read,write' lets it remember but not forget."))
    project: str | None = Field(
        default=None,
        description="Defaults to the client's root or the working directory's git repository; "
        "'none' disables the project namespace.",
    )

    # Limits
    # Each may tighten the limit the tools' schemas publish (limits.py), never loosen it.
    max_content_chars: int = Field(default=limits.MAX_CONTENT_CHARS, ge=1, le=limits.MAX_CONTENT_CHARS,
                                   description="Longest memory content a write accepts.")
    max_title_chars: int = Field(default=limits.MAX_TITLE_CHARS, ge=1, le=limits.MAX_TITLE_CHARS,
                                 description="Longest title a write accepts.")
    max_tags: int = Field(default=limits.MAX_TAGS, ge=0, le=limits.MAX_TAGS, description="Most tags on one memory.")
    max_tag_chars: int = Field(default=limits.MAX_TAG_CHARS, ge=1, le=limits.MAX_TAG_CHARS,
                               description="Longest tag.")
    max_batch: int = Field(default=limits.MAX_BATCH, ge=1, le=limits.MAX_BATCH,
                           description="Most memories one memory_write_many call takes.")
    graph_max_names: int = Field(default=24, ge=1, le=1000, description=(
        "Most names one memory adds to the graph (entities and mentions): the names its writer passed in "
        "`about` and its subject always, then the names its text holds, in order, up to this many in all. A "
        "pasted list of thousands of capitalised names adds no more (none of the benchmarks' 8,468 texts "
        "names more than 8); the memory itself is stored whole, and searched by all of its text."))
    snippet_chars: int = Field(default=400, ge=40, description=(
        "Characters of a memory's content in a search hit's snippet (and forget previews, `related`, browse "
        "pages)."))
    resource_page_size: int = Field(default=50, ge=1, le=500, description="Memories per resource page.")
    resource_page_chars: int = Field(default=24_000, ge=1000, description=(
        "A resource page stops before this many characters of JSON (memories are listed by their start; "
        "read a memory's URI for all of it)."))

    # Core memories (startup hydration): pinned memories, highest priority first, cut at whole memories.
    core_budget_chars: int = Field(default=4000, ge=0, description="Characters of core memories by default.")
    core_budgets: dict[str, int] = Field(default_factory=dict, description=(
        'Budget per model name pattern, JSON: {"opus": 6000, "8b": 1500}; a glob or a case-insensitive '
        "substring, the longest matching pattern wins."))

    # Embeddings
    embedding_provider: str = Field(default="local", description=(
        "local (offline, from pip packages), openai, openai-compatible (Ollama, vLLM, LM Studio), voyage, none."))
    embedding_model: str | None = Field(default=None, description=(
        "local: all-MiniLM-L6-v2-int8 (default), e5 (multilingual-e5-small 4-bit, extra e5), static; "
        "openai: text-embedding-3-small by default; voyage: voyage-3.5 by default (extra voyage)."))
    embedding_dimension: int | None = Field(default=None, ge=1, description=(
        "Vector size, for a model that can shorten its vectors; default: the model's own."))
    embedding_api_key: str | None = Field(default=None, description="Default: OPENAI_API_KEY / VOYAGE_API_KEY.")
    embedding_base_url: str | None = Field(default=None, description=(
        "Endpoint of the openai-compatible provider, e.g. http://localhost:11434/v1."))
    embedding_model_path: Path | None = Field(default=None, description=(
        "local: your own ONNX model file instead of the packaged all-MiniLM-L6-v2 int8, of the same shape "
        "(inputs input_ids, attention_mask; token embeddings out, 384 wide unless embedding_dimension says), with "
        "its tokenizer.json beside it; both checked against the two digests below (docs/security.md)."))
    embedding_model_sha256: str | None = Field(default=None, description=(
        "The SHA-256 the file at embedding_model_path must have; required with it (refused without, naming the "
        "file's actual digest to check)."))
    embedding_tokenizer_sha256: str | None = Field(default=None, description=(
        "The SHA-256 the tokenizer.json beside embedding_model_path must have; required with it, likewise."))
    embedding_timeout_s: float = Field(default=10, gt=0, description="A write stores no vector past this.")
    query_cache_entries: int = Field(default=1024, ge=0, le=100_000, description=(
        "Query vectors kept in each server's memory (most recently used; 1.5 KiB each at 384 dimensions): an "
        "agent asks again what it asked a while ago, and the peer keeps 1,024. 0 embeds every query."))
    embedding_breaker_failures: int = Field(default=3, ge=1, description=(
        "After this many embedder failures in a row, writes store without a vector at once (no waiting); "
        "the embedder is probed 1 s later, then 1.5x longer after each failed probe..."))
    embedding_breaker_cooldown_s: float = Field(default=30, gt=0, description=(
        "...up to this long; once it answers, the memories stored meanwhile are embedded in the background."))

    # Reranking (retrieval/rerank.py): off by default; sends the query and the best hits' text.
    rerank_provider: Literal["none", "voyage", "tei", "cohere-compatible"] = Field(default="none", description=(
        "none: no reranker; voyage: Voyage AI's rerank API (extra voyage); tei: Hugging Face "
        "text-embeddings-inference's /rerank; cohere-compatible: a /rerank endpoint taking "
        '{"model", "query", "documents"} (vLLM, Infinity, llama.cpp, Jina, Cohere). A search then sends the '
        "query and the text of its best rerank_top_n hits (each up to 4,000 characters) to the reranker."))
    rerank_model: str | None = Field(default=None, description=(
        "voyage: rerank-2.5 by default; cohere-compatible: sent as `model` when set; tei: unused (the "
        "server runs one model)."))
    rerank_base_url: str | None = Field(default=None, description=(
        "The reranker's endpoint without /rerank, e.g. http://localhost:8080 (tei), http://localhost:8000/v1 "
        "(vLLM); required for tei and cohere-compatible; voyage: default the Voyage API."))
    rerank_api_key: str | None = Field(default=None, description=(
        "Sent as a bearer token to the reranker only. voyage: default VOYAGE_API_KEY; the others send none "
        "unless set."))
    rerank_top_n: int = Field(default=30, ge=1, le=1000, description=(
        "How many of a search's best hits the reranker orders (the search finds at least this many); "
        "the rest follow in their order."))
    rerank_timeout_s: float = Field(default=2.0, gt=0, le=30, description=(
        "Past this a search returns its hits in their own order, with one warning logged (so does a reranker "
        "error); after 3 failures in a row the reranker is skipped, probed again 1 s later, then 1.5x longer "
        "after each failed probe, up to 30 s."))

    # Language
    language: str = Field(default="english", description=(
        "The language memories and questions are read in: its words for names, keys, the user, time and dates "
        "(one module per language in mcp_memory/lexicon, e.g. portuguese). Full text stems with English's rules in "
        "every language for now (docs/languages.md)."))

    # Retrieval
    search_candidates: int = Field(default=100, ge=10, le=2000, description=(
        "Candidates each list (vector, full text, trigram) brings to the fusion."))
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
        "(a common word must not rank a whole large scope)."))
    fulltext_idf: bool = Field(default=True, description=(
        "Weigh each query word by its rarity among the candidates (BM25's idf) instead of counting every word alike."))
    trigram_threshold: float = Field(default=0.3, gt=0, le=1, description=(
        "Least trigram similarity (pg_trgm) for the trigram list."))
    trigram_scan: int = Field(default=300, ge=10, description=(
        "At most this many rows that pass the trigram threshold are scored by similarity."))
    trigram_max_words: int = Field(default=2, ge=0, description=(
        "Longer queries skip the trigram list (it compares every candidate: 200 ms at 20,000 memories for 4 words); "
        "so does a query whose words full text already finds in a full list of candidates."))
    recency_floor: float = Field(default=0.7, ge=0, le=1, description="1 turns recency off.")
    recency_half_life_days: float = Field(default=180, gt=0, description=(
        "Age at which the recency factor is halfway between 1 and recency_floor."))
    conflict_similarity: float | None = Field(default=None, ge=0, le=1, description=(
        "Results this similar (cosine) are versions of one fact (episodes aside: a turn replaces no other): "
        "among those the query's words match equally well, the newest ranks first (so 'when did order 5 ship' "
        "keeps 'order 5 shipped' above a newer 'order 7 shipped'). Default: set per local model (MiniLM 0.65, e5 0.88, "
        "static 0.75), 0.8 for others. 1 turns it off."))
    hnsw_ef_search: int = Field(default=100, ge=10, le=1000, description=(
        "pgvector's hnsw.ef_search for the vector list: higher finds more of the true nearest, slower."))
    vector_rescore: bool = Field(default=True, description=(
        "A full-text or trigram candidate the vector list's index walk did not return is given the place its "
        "cosine (computed exactly) would hold in that list: where most of a scope is alike the walk can miss "
        "a memory closer than all it returns. false: the walk's own list only."))
    related_limit: int = Field(default=5, ge=0, le=20, description=(
        "memory_write / memory_update return up to this many close memories (`related`); 0 turns it off."))
    related_similarity: float | None = Field(default=None, ge=0, le=1, description=(
        "Least cosine for `related`. Default: the model's conflict threshold minus 0.25 (MiniLM 0.40)."))
    reply_weight: float = Field(default=0.5, ge=0, le=1, description=(
        "An episode that asks a question (holds ?, ？ or ؟) passes this share of its score to the episode "
        "written next in its scope, the reply (only the best 20 candidate episodes pass it on); 0 turns it off."))
    preceding_weight: float = Field(default=0.25, ge=0, le=1, description=(
        "An episode that asks a question also passes this share of its score to the episode written just "
        "before it in its scope, the turn it follows up on; 0 turns it off."))
    reply_gap_minutes: float = Field(default=30, ge=0, description=(
        "A later episode is no reply (an earlier one nothing the question follows up on) when it occurred "
        "more than this after (before) the question."))

    # Planner statistics after bursts of writes (statistics.py), on any PostgreSQL.
    analyze_min_writes: int = Field(default=50, ge=1, description=(
        "ANALYZE memories in the background once this many writes, or analyze_fraction of the table if more, "
        "landed since the last one."))
    analyze_fraction: float = Field(default=0.1, gt=0, le=1, description=(
        "See analyze_min_writes: the share of the table whose writes trigger an ANALYZE on a large store."))

    period_boost: float = Field(default=3.0, ge=1, le=10, description=(
        "Score factor for a memory written in the period a query names ('in October 2023', 'on 3 June, "
        "2023', 'during June', 'before 2019'); 1 turns it off."))
    period_after_days: float = Field(default=14, ge=0, description=(
        "What happened in a period is often written down after it ('last Friday I …'): memories up to "
        "this many days past its end count as in it."))
    subject_boost: float = Field(default=1.25, ge=1, le=10, description=(
        "Score factor for a memory naming every person or thing the question names (capitalised words), "
        "other than only addressing them (\"Thanks, Mel!\")."))
    present_focus: bool = Field(default=True, description=(
        "For a question about the present: rank its subject's memories that answer it first, newest first, "
        "judged by similarity with the subject taken out (retrieval/focus.py)."))
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
        "or naming that value. 1 turns it off."))
    graph_doubt_floor: float = Field(default=0.30, ge=0, le=1, description=(
        "A question about a subject's keyed attribute gets the values in order of validity unless a newer "
        "fact of the subject, under a key the lexicon does not know, says the same kind of thing: at least "
        "this close with the names masked (cosine). Doubt needs less than a replace: versions phrased far "
        "apart measure .34-.43, the subject's other facts .12-.15."))
    superseded_penalty: float = Field(default=0.5, gt=0, le=1,
                                      description="Score factor for a memory another one supersedes.")

    # Forgetting by query: preview -> execute.
    forget_token_ttl_s: int = Field(default=600, ge=10, description=(
        "A forget preview's token executes only within this many seconds."))
    forget_max_batch: int = Field(default=25, ge=1, description="Largest preview a non-admin may ask for.")
    forget_min_similarity: float = Field(default=0.6, ge=0, le=1, description=(
        "A forget preview by query lists a memory with no word in common only this close (cosine)."))

    # Retention: only time removes data.
    purge_after_days: int = Field(default=30, ge=1, description="How long a forgotten memory stays restorable.")
    history_days: int = Field(default=180, ge=1, description=(
        "How long history rows (and finished decision jobs) are kept."))
    idempotency_days: int = Field(default=30, ge=1, description=(
        "How long a write's idempotency_key is remembered (a retry within it returns the first result)."))
    stale_after_days: int | None = Field(
        default=None, ge=1, description="Forget (softly) unpinned memories not read (memory_get) or changed "
        "in this many days; unset disables it.")
    retention_interval_hours: float = Field(default=6, ge=0, description="0 sweeps only at start-up.")

    # HTTP transports
    host: str = Field(default="127.0.0.1", description="Address the HTTP and SSE transports listen on.")
    port: int = Field(default=8765, ge=0, le=65535, description="Port of the HTTP and SSE transports.")
    public_url: str | None = Field(default=None, description="The URL clients use, e.g. https://mem.example.com; "
                                   "default http://host:port.")
    allowed_hosts: list[str] = Field(default_factory=list, description="Extra Host header values to accept "
                                     "(DNS-rebinding protection), e.g. mem.example.com.")
    no_auth: bool = Field(default=False, description="Serve HTTP without authentication (loopback only).")
    console_session_hours: float = Field(default=8, gt=0, le=24 * 30, description=(
        "A console sign-in ends this long after it began, however busy (absolute expiry)."))
    console_idle_minutes: float = Field(default=60, gt=0, le=24 * 60, description=(
        "A console session unused this long ends (idle expiry)."))
    graceful_shutdown_s: float = Field(default=30, ge=0, description=(
        "On SIGTERM, requests in flight get this long to finish."))

    # OAuth / JWT bearer tokens, and how long a verified API key is trusted
    jwt_issuer: str | None = Field(default=None, description=(
        "The `iss` a bearer token must carry (required once tokens are on)."))
    jwt_audience: str | None = Field(default=None, description=(
        "The `aud` a bearer token must carry (required once tokens are on)."))
    jwt_jwks_url: str | None = Field(default=None, description=(
        "The issuer's signing keys (JWKS URL); this or jwt_secret turns OAuth / JWT bearer tokens on."))
    jwt_secret: str | None = Field(default=None, description="Shared HS256 secret instead of a JWKS.")
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "HS256"], description=(
        "Signature algorithms accepted, JSON; HS* only with jwt_secret."))
    jwt_agents_claim: str = Field(default="mcp_memory_agents", description=(
        "Claim listing the agents a token may act as (absent: any)."))
    jwt_projects_claim: str = Field(default="mcp_memory_projects", description=(
        "Claim listing the projects a token may use (absent: any)."))
    jwt_default_permissions: str = Field(default="read,write,forget",
                                         description="Granted when a token carries no memory:* scope.")
    api_key_cache_s: float = Field(default=10, ge=0, description=(
        "An HTTP server trusts an API key it verified for this long before asking the database again, so "
        "a revoked key still works for up to this long on a server that saw it (0: ask on every request)."))

    # Rate limits for remote principals, per minute (0 disables)
    write_rate_per_minute: int = Field(default=300, ge=0, description=(
        "Writes per minute a remote principal may make (0: no limit)."))
    forget_rate_per_minute: int = Field(default=60, ge=0, description=(
        "Forgets per minute a remote principal may make (0: no limit)."))

    # Decisions (self-correcting memory): a model decides what a new memory does to the older ones
    # close to it (ADD / UPDATE / DELETE / NONE), through the durable job queue `memory_jobs`.
    decisions_provider: Literal["none", "sampling", "openai-compatible"] = Field(default="none", description=(
        "none: no automatic decisions (the `related` list is for the agent); sampling: the connected client's "
        "model (MCP sampling); openai-compatible: a chat-completions endpoint. Sending memory text to a remote "
        "endpoint is opt-in: the new memory and its closest memories are sent."))
    decisions_mode: Literal["async", "sync", "auto"] = Field(default="async", description=(
        "async: a write returns at once, workers decide later; sync: a write waits for its decision up to "
        "decisions_sync_budget_s (then it is left to the workers); auto: sync, but after a decision ran over "
        "the budget the next minute's writes go async. A write never fails because of a model."))
    decisions_base_url: str | None = Field(default=None, description=(
        "Chat-completions endpoint, e.g. http://localhost:11434/v1 (Ollama); unset: api.openai.com."))
    decisions_model: str | None = Field(default=None, description=(
        "Model name (openai-compatible, required) or a hint to the client (sampling)."))
    decisions_api_key: str | None = Field(default=None, description=(
        "Default: OPENAI_API_KEY, only when decisions_base_url is unset (a key is never sent elsewhere)."))
    decisions_timeout_s: float | None = Field(default=None, gt=0, description=(
        "One model call gives up after this long. Unset: it follows the model (decisions/pace.py): 4x its "
        "slowest recent call, from 30 s (300 s for a model on this machine) up to decisions_timeout_max_s."))
    decisions_timeout_max_s: float = Field(default=600, gt=0, description=(
        "The most an unset decisions_timeout_s grows to for a slow model."))
    decisions_sync_budget_s: float = Field(default=5, gt=0, description=(
        "How long a write waits for its decision in sync and auto mode."))
    decisions_structured: bool = Field(default=True, description=(
        "Ask for JSON-schema structured output (an endpoint that rejects it is asked for plain JSON)."))
    decisions_max_attempts: int = Field(default=5, ge=1, description="Then the job is a dead letter.")
    decisions_retry_base_s: float = Field(default=10, ge=0, description="Backoff: this, doubled per attempt.")
    decisions_lease_s: float | None = Field(default=None, gt=0, description=(
        "A claimed job whose worker has not finished in this long (it died) is taken again. Unset: two model "
        "calls at their timeouts and a margin; set, the timeouts stay within it."))
    decisions_workers: int = Field(default=1, ge=1, le=16, description="Concurrent workers per server process.")
    decisions_poll_s: float = Field(default=2, gt=0, description="How often idle workers look for due jobs.")
    extraction: bool = Field(default=True, description=(
        "With a decisions provider: each captured session delta is one job asking the model for its durable "
        "facts (instead of the trigger patterns). Off: trigger patterns only, nothing of the turns sent."))
    extraction_per_session: int = Field(default=50, ge=0, description="Extraction jobs per session (0: no cap).")
    extraction_per_day: int = Field(default=500, ge=0, description="Extraction jobs per user per day (0: no cap).")
    decisions_guard: bool = Field(default=True, description=(
        "Our own check on what a model may replace: the same subject (shared names) and attribute (masked "
        "similarity); a replace about someone else is refused, a doubtful one kept as a suggestion in the job."))
    decisions_guard_floor: float | None = Field(default=None, ge=0, le=1, description=(
        "The masked similarity at which the guard takes a same-subject memory for the same attribute. Higher: "
        "fewer wrong replaces by a small model, more right ones left as suggestions (docs/decisions.md). "
        "Unset: 0.50 for an `openai-compatible` endpoint on this machine (where small models run), else 0.25."))
    decisions_second_look: bool | None = Field(default=None, description=(
        "Ask the model once more, alone with the two memories, about each replace the guard allows by similarity "
        "alone; one not confirmed is kept as a suggestion. A short extra call per such replace (docs/decisions.md). "
        "Unset: on for an `openai-compatible` endpoint on this machine (where small models run), else off."))
    decisions_per_minute: int = Field(default=30, ge=0, description="Model calls per user per minute (0: no limit).")
    decisions_tokens_per_day: int = Field(default=200_000, ge=0, description=(
        "Tokens per user per day (0: no limit); past it jobs wait for the budget, nothing is lost."))

    # Auto-capture and auto-recall through harness hooks (mcp_memory/capture, `mcp-memory hook`).
    capture: bool = Field(default=True, description=(
        "Store transcripts' turns as episodes (hooks, `mcp-memory capture`); false switches capture off, e.g. "
        "in one project's settings env."))
    capture_exclude_projects: list[str] = Field(default_factory=list, description=(
        'Projects never captured, JSON: ["secret-client"].'))
    capture_facts: bool = Field(default=True, description="Also store trigger-pattern facts from what the user says.")
    capture_languages: list[str] = Field(default_factory=lambda: ["en"], description="Trigger tables to use.")
    capture_turn_chars: int = Field(default=8000, ge=200, le=limits.MAX_CONTENT_CHARS,
                                    description="A longer turn is cut to this many characters.")
    recall_limit: int = Field(default=5, ge=0, le=20, description="Most memories auto-recall adds to a prompt.")
    recall_budget_chars: int = Field(default=2000, ge=0, description="Characters auto-recall may add to a prompt.")
    recall_min_similarity: float | None = Field(default=None, ge=0, le=1, description=(
        "Relevance floor (cosine to the prompt) for auto-recall. Default: the model's conflict threshold "
        "minus 0.3 (MiniLM 0.35)."))
    recall_timeout_s: float = Field(default=RECALL_TIMEOUT_S, gt=0, description=(
        "Prompt recall prints nothing past this."))
    session_start_timeout_s: float = Field(default=SESSION_START_TIMEOUT_S, gt=0, description=(
        "Session-start context, likewise."))
    capture_worker_timeout_s: float = Field(default=120, gt=0, description=(
        "The detached process a capture hook hands its work to gives up after this long and records the "
        "session as not captured (the next session start says so)."))
    capture_catch_up_days: float = Field(default=1, ge=0, description=(
        "Hooks catch up sessions of their project whose capture never finished: those a hook saw, and "
        "transcripts changed within this many days (older history from before the hooks is left alone)."))
    session_start_recent: int = Field(default=5, ge=0, le=50, description=(
        "Recent memories of the project added at session start, besides the pinned core."))
    hook_channel: bool = Field(default=True, description=(
        "`mcp-memory serve` answers this machine's hooks for its store over a socket only this user can reach "
        "(no process start, model load or database start per prompt); false: it does not listen, and a hook "
        "with it false does not ask (read by mcp_memory/hookline.py as well)."))
    resident: bool | None = Field(default=None, description=(
        "`mcp-memory serve` over stdio as a thin relay to one resident server per store and OS user, which "
        "holds the model, the pool and the workers for every window (docs/operations.md#resident-server). "
        "Unset or true: relay, starting the resident server when none runs (a window that cannot reach or "
        "start one serves in-process, saying why on stderr); false (or `serve --standalone`): always "
        "in-process (read by mcp_memory/relay.py). HTTP and SSE serve are always in-process."))
    resident_idle_timeout_s: float = Field(default=1800, gt=0, description=(
        "The resident server leaves after this long without a window connected."))
    resident_start_timeout_s: float = Field(default=60, gt=0, description=(
        "How long a window waits for the resident server it started (or another window started) to listen "
        "before it serves in-process instead (read by mcp_memory/relay.py)."))

    # Row-level security: application queries run as this role ('' to skip).
    db_app_role: str = Field(default="mcp_memory_app", description=(
        "The non-owner role application queries run as, so row-level security applies; '' skips it."))
    db_pooler: Literal["none", "transaction"] = Field(default="none", description=(
        "'transaction' when MCP_MEMORY_DATABASE_URL names a connection pooler in transaction mode (PgBouncer "
        "pool_mode = transaction): the session settings (role, plan_cache_mode, jit) go with every "
        "transaction instead, asyncpg's prepared-statement cache is off, and the locks held across "
        "statements are taken inside a transaction (docs/operations.md, 'Behind PgBouncer')."))

    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR; logs go to stderr.")
    log_format: Literal["text", "json"] = Field(default="text", description=(
        "json: one JSON object per log line (time, level, logger, message, request_id), on stderr."))
    metrics_port: int | None = Field(default=None, ge=1, le=65535, description=(
        "Also serve Prometheus metrics on 127.0.0.1 at this port (for a stdio server, which has no HTTP "
        "endpoint; the HTTP transport always has /metrics)."))

    @field_validator("local_permissions")
    @classmethod
    def _known_permissions(cls, value: str) -> str:
        names = {p.strip() for p in value.split(",") if p.strip()}
        if not names or names - {"read", "write", "forget", "admin"}:
            raise ValueError(f"MCP_MEMORY_LOCAL_PERMISSIONS must be a comma-separated subset of read, write, "
                             f"forget, admin; got {value!r}")
        return value

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        from .lexicon import available
        if value not in available():
            raise ValueError(f"MCP_MEMORY_LANGUAGE: no lexicon for {value!r}; there are: {', '.join(available())}")
        return value

    @model_validator(mode="after")
    def _decisions_can_work(self) -> Settings:
        """Decision settings that cannot work stop start-up, with the fix, instead of failing
        every job later (a lease shorter than a model call gets the job taken again mid-call)."""
        if self.decisions_provider == "none":
            return self
        if self.decisions_provider == "openai-compatible" and not (self.decisions_model or "").strip():
            raise ValueError("MCP_MEMORY_DECISIONS_MODEL: the openai-compatible provider needs a model name "
                             "(e.g. gpt-4o-mini, or the name your local server gives its model)")
        if (self.decisions_lease_s is not None and self.decisions_timeout_s is not None
                and self.decisions_lease_s < self.decisions_timeout_s + LEASE_MARGIN_S):
            raise ValueError(
                f"MCP_MEMORY_DECISIONS_LEASE_S ({self.decisions_lease_s:g}) must exceed MCP_MEMORY_DECISIONS_TIMEOUT_S "
                f"({self.decisions_timeout_s:g}) by at least {LEASE_MARGIN_S:g} s, or a job is taken again while its "
                f"model still answers and never applied: set the lease to {self.decisions_timeout_s + 60:g} or "
                "lower the timeout")
        if 0 < self.decisions_tokens_per_day < MIN_TOKENS_PER_DAY:
            raise ValueError(f"MCP_MEMORY_DECISIONS_TOKENS_PER_DAY ({self.decisions_tokens_per_day}) is below one "
                             f"decision's bound (~{MIN_TOKENS_PER_DAY} tokens), so every job would wait forever: "
                             f"set at least {MIN_TOKENS_PER_DAY}, or 0 for no limit")
        return self

    @model_validator(mode="after")
    def _own_model_is_pinned(self) -> Settings:
        """A model file of your own is loaded only with the digests you expect: a path without
        them is refused, naming the files' actual digests to check (the files are hashed only
        then; whether they match is checked at start-up, `mcp-memory doctor` and load)."""
        digests = {"MCP_MEMORY_EMBEDDING_MODEL_SHA256": self.embedding_model_sha256,
                   "MCP_MEMORY_EMBEDDING_TOKENIZER_SHA256": self.embedding_tokenizer_sha256}
        if self.embedding_model_path is None:
            given = [name for name, value in digests.items() if value]
            if given:
                raise ValueError(f"{' and '.join(given)} without MCP_MEMORY_EMBEDDING_MODEL_PATH checks nothing: "
                                 "set the path of your model, or unset the digest")
            return self
        from .embeddings.model_files import require_digest
        from .embeddings.own import TOKENIZER_NAME

        if self.embedding_provider.strip().lower() != "local":
            raise ValueError("MCP_MEMORY_EMBEDDING_MODEL_PATH is a model for the local provider, not "
                             f"{self.embedding_provider!r}")
        path = self.embedding_model_path.expanduser()
        for file in (path, path.parent / TOKENIZER_NAME):
            if not file.is_file():
                raise ValueError(f"MCP_MEMORY_EMBEDDING_MODEL_PATH: {file} is not a file (the model, and its "
                                 f"{TOKENIZER_NAME} beside it)")
        self.embedding_model_sha256 = require_digest(path, self.embedding_model_sha256,
                                                     "MCP_MEMORY_EMBEDDING_MODEL_SHA256")
        self.embedding_tokenizer_sha256 = require_digest(path.parent / TOKENIZER_NAME, self.embedding_tokenizer_sha256,
                                                         "MCP_MEMORY_EMBEDDING_TOKENIZER_SHA256")
        return self

    @model_validator(mode="after")
    def _reranker_can_work(self) -> Settings:
        if self.rerank_provider in ("tei", "cohere-compatible") and not (self.rerank_base_url or "").strip():
            raise ValueError(f"MCP_MEMORY_RERANK_BASE_URL: the {self.rerank_provider} reranker needs its endpoint "
                             "(without /rerank), e.g. http://localhost:8080")
        return self

    @property
    def embedded(self) -> bool:
        return not self.database_url


# The configuration reference (docs/configuration.md, `python -m mcp_memory.config_reference`) lists
# every setting under one of these, in this order; a new setting goes into one or the test fails.
SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "server": ("The MCP server: HTTP transport, limits of the tools and resources, forgetting, rate limits, "
               "the language memories are read in.", (
        "host", "port", "public_url", "allowed_hosts", "no_auth", "graceful_shutdown_s", "language",
        "resident", "resident_idle_timeout_s", "resident_start_timeout_s",
        "max_content_chars", "max_title_chars", "max_tags", "max_tag_chars", "max_batch", "graph_max_names",
        "snippet_chars",
        "resource_page_size", "resource_page_chars", "core_budget_chars", "core_budgets",
        "forget_token_ttl_s", "forget_max_batch", "forget_min_similarity",
        "write_rate_per_minute", "forget_rate_per_minute")),
    "identity": ("Who a session is: the local (stdio) identity, what OAuth / JWT tokens grant, and how "
                 "long an HTTP server trusts an API key it verified.", (
        "user", "agent", "project", "local_permissions",
        "jwt_issuer", "jwt_audience", "jwt_jwks_url", "jwt_secret", "jwt_algorithms",
        "jwt_agents_claim", "jwt_projects_claim", "jwt_default_permissions", "api_key_cache_s")),
    "storage": ("The database: embedded by default, or any PostgreSQL >= 15 with pgvector.", (
        "database_url", "data_dir", "pool_min_size", "pool_max_size", "db_start_timeout_s", "db_app_role",
        "db_pooler")),
    "embeddings": ("The model that turns text into vectors; writes fail open (stored without a vector, "
                   "embedded later).", (
        "embedding_provider", "embedding_model", "embedding_dimension", "embedding_api_key",
        "embedding_base_url", "embedding_model_path", "embedding_model_sha256", "embedding_tokenizer_sha256",
        "embedding_timeout_s", "embedding_breaker_failures", "embedding_breaker_cooldown_s",
        "query_cache_entries")),
    "reranking": ("An optional reranker over a search's best hits (docs/ranking.md#reranking). Off by default; "
                  "when on, the query and those hits' text are sent to it (docs/security.md).", (
        "rerank_provider", "rerank_model", "rerank_base_url", "rerank_api_key", "rerank_top_n",
        "rerank_timeout_s")),
    "decisions": ("What a new memory does to older ones, and extraction of facts from captured sessions "
                  "(docs/decisions.md). Off by default; a remote endpoint is opt-in.", (
        "decisions_provider", "decisions_mode", "decisions_base_url", "decisions_model", "decisions_api_key",
        "decisions_timeout_s", "decisions_timeout_max_s", "decisions_sync_budget_s", "decisions_structured",
        "decisions_max_attempts",
        "decisions_retry_base_s", "decisions_lease_s", "decisions_workers", "decisions_poll_s",
        "decisions_guard", "decisions_guard_floor", "decisions_second_look", "decisions_per_minute",
        "decisions_tokens_per_day",
        "extraction", "extraction_per_session", "extraction_per_day")),
    "capture": ("Auto-capture and auto-recall through harness hooks (docs/hooks.md).", (
        "capture", "capture_exclude_projects", "capture_facts", "capture_languages", "capture_turn_chars",
        "recall_limit", "recall_budget_chars", "recall_min_similarity", "recall_timeout_s",
        "session_start_timeout_s", "session_start_recent", "capture_worker_timeout_s",
        "capture_catch_up_days", "hook_channel")),
    "console": ("The review console's sign-in sessions (docs/console.md).", (
        "console_session_hours", "console_idle_minutes")),
    "operations": ("Logs, metrics, retention and planner statistics (docs/operations.md).", (
        "log_level", "log_format", "metrics_port",
        "purge_after_days", "history_days", "idempotency_days", "stale_after_days", "retention_interval_hours",
        "analyze_min_writes", "analyze_fraction")),
    "ranking": ("Advanced: how search ranks (docs/ranking.md). The defaults were settled on several dev sets "
                "phrased differently; change them only with the benchmarks at hand (docs/benchmarks.md).", (
        "related_limit", "related_similarity", "recency_floor", "recency_half_life_days",
        "period_boost", "period_after_days", "subject_boost", "present_focus", "present_margin",
        "summary_turns_kept",
        "graph_rules_keys", "graph_adopt_floor", "graph_doubt_floor", "superseded_penalty", "conflict_similarity",
        "reply_weight", "preceding_weight", "reply_gap_minutes",
        "search_candidates", "fusion", "rrf_k", "weight_vector", "weight_fulltext", "weight_trigram",
        "fulltext_scan", "fulltext_idf", "trigram_threshold", "trigram_scan", "trigram_max_words",
        "hnsw_ef_search", "vector_rescore")),
}
ADVANCED_SECTIONS = frozenset({"ranking"})
