"""The decisions section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

# A claimed job's lease must outlast its model call by this much (candidates, applying).
LEASE_MARGIN_S = 2.0
# One decision asks for at most ~2,000 characters per memory and 300 tokens of answer.
MIN_TOKENS_PER_DAY = 4000


class DecisionSettings(BaseModel):
    """What a new memory does to older ones, and extraction of facts from captured sessions
    (docs/decisions.md). Off by default; a remote endpoint is opt-in."""

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
    extraction: bool = Field(default=True, description=(
        "With a decisions provider: each captured session delta is one job asking the model for its durable "
        "facts (instead of the trigger patterns). Off: trigger patterns only, nothing of the turns sent."))
    extraction_per_session: int = Field(default=50, ge=0, description="Extraction jobs per session (0: no cap).")
    extraction_per_day: int = Field(default=500, ge=0, description="Extraction jobs per user per day (0: no cap).")

    @model_validator(mode="after")
    def _decisions_can_work(self) -> DecisionSettings:
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
