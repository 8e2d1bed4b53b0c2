"""The capture section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .. import limits
from ..hookprotocol import RECALL_TIMEOUT_S, SESSION_START_TIMEOUT_S


class CaptureSettings(BaseModel):
    """Auto-capture and auto-recall through harness hooks (docs/hooks.md)."""

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
    session_start_recent: int = Field(default=5, ge=0, le=50, description=(
        "Recent memories of the project added at session start, besides the pinned core."))
    capture_worker_timeout_s: float = Field(default=120, gt=0, description=(
        "The detached process a capture hook hands its work to gives up after this long and records the "
        "session as not captured (the next session start says so)."))
    capture_catch_up_days: float = Field(default=1, ge=0, description=(
        "Hooks catch up sessions of their project whose capture never finished: those a hook saw, and "
        "transcripts changed within this many days (older history from before the hooks is left alone)."))
    hook_channel: bool = Field(default=True, description=(
        "`mcp-memory serve` answers this machine's hooks for its store over a socket only this user can reach "
        "(no process start, model load or database start per prompt); false: it does not listen, and a hook "
        "with it false does not ask (read by mcp_memory/hookline.py as well)."))
