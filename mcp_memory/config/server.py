"""The server section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from .. import limits


class ServerSettings(BaseModel):
    """The MCP server: HTTP transport, limits of the tools and resources, forgetting, rate
    limits, the language memories are read in."""

    # HTTP transports
    host: str = Field(default="127.0.0.1", description="Address the HTTP and SSE transports listen on.")
    port: int = Field(default=8765, ge=0, le=65535, description="Port of the HTTP and SSE transports.")
    public_url: str | None = Field(default=None, description="The URL clients use, e.g. https://mem.example.com; "
                                   "default http://host:port.")
    allowed_hosts: list[str] = Field(default_factory=list, description="Extra Host header values to accept "
                                     "(DNS-rebinding protection), e.g. mem.example.com.")
    no_auth: bool = Field(default=False, description="Serve HTTP without authentication (loopback only).")
    graceful_shutdown_s: float = Field(default=30, ge=0, description=(
        "On SIGTERM, requests in flight get this long to finish."))
    # Language
    language: str = Field(default="english", description=(
        "The language memories and questions are read in: its words for names, keys, the user, time and dates "
        "(one module per language in mcp_memory/lexicon, e.g. portuguese). Full text stems with English's rules in "
        "every language for now (docs/languages.md)."))
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
    # Forgetting by query: preview -> execute.
    forget_token_ttl_s: int = Field(default=600, ge=10, description=(
        "A forget preview's token executes only within this many seconds."))
    forget_max_batch: int = Field(default=25, ge=1, description="Largest preview a non-admin may ask for.")
    forget_min_similarity: float = Field(default=0.6, ge=0, le=1, description=(
        "A forget preview by query lists a memory with no word in common only this close (cosine)."))
    # Rate limits for remote principals, per minute (0 disables)
    write_rate_per_minute: int = Field(default=300, ge=0, description=(
        "Writes per minute a remote principal may make (0: no limit)."))
    forget_rate_per_minute: int = Field(default=60, ge=0, description=(
        "Forgets per minute a remote principal may make (0: no limit)."))

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        from ..lexicon import available
        if value not in available():
            raise ValueError(f"MCP_MEMORY_LANGUAGE: no lexicon for {value!r}; there are: {', '.join(available())}")
        return value
