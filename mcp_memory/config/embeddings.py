"""The embeddings section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, model_validator


class EmbeddingSettings(BaseModel):
    """The model that turns text into vectors; writes fail open (stored without a vector,
    embedded later)."""

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
    embedding_breaker_failures: int = Field(default=3, ge=1, description=(
        "After this many embedder failures in a row, writes store without a vector at once (no waiting); "
        "the embedder is probed 1 s later, then 1.5x longer after each failed probe..."))
    embedding_breaker_cooldown_s: float = Field(default=30, gt=0, description=(
        "...up to this long; once it answers, the memories stored meanwhile are embedded in the background."))
    embedding_turn_weight: float = Field(default=0, ge=0, le=1, description=(
        "For stores of conversations (a companion's, an assistant's chats): an episode's vector is its own "
        "text's plus this much of the vector of the turn before it in its scope, so a reply that says little "
        "alone ('Some fun ones like charades.') is found by what it answers (LoCoMo R@10 .763 -> .775 at 1). "
        "Off by default: on a coding agent's captured sessions it put more unrelated turns into auto-recall "
        "(docs/benchmarks.md). The turn before was embedded when it was written: no second embedding. Applies "
        "to episodes embedded from then on; `mcp-memory backfill --episodes` embeds those stored before again."))
    embedding_turn_minutes: float = Field(default=30, ge=0, description=(
        "An episode's vector holds the turn before it (embedding_turn_weight) only when that turn occurred at most "
        "this many minutes earlier; 0: never."))
    query_cache_entries: int = Field(default=1024, ge=0, le=100_000, description=(
        "Query vectors kept in each server's memory (most recently used; 1.5 KiB each at 384 dimensions): an "
        "agent asks again what it asked a while ago, and the peer keeps 1,024. 0 embeds every query."))

    @model_validator(mode="after")
    def _own_model_is_pinned(self) -> EmbeddingSettings:
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
        from ..embeddings.model_files import require_digest
        from ..embeddings.own import TOKENIZER_NAME

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
