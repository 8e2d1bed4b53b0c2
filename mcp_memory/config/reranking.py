"""The reranking section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


class RerankSettings(BaseModel):
    """An optional reranker over a search's best hits (docs/ranking.md#reranking). Off by
    default; when on, the query and those hits' text are sent to it (docs/security.md)."""

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

    @model_validator(mode="after")
    def _reranker_can_work(self) -> RerankSettings:
        if self.rerank_provider in ("tei", "cohere-compatible") and not (self.rerank_base_url or "").strip():
            raise ValueError(f"MCP_MEMORY_RERANK_BASE_URL: the {self.rerank_provider} reranker needs its endpoint "
                             "(without /rerank), e.g. http://localhost:8080")
        return self
