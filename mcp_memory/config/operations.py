"""The operations section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class OperationsSettings(BaseModel):
    """Logs, metrics, retention and planner statistics (docs/operations.md)."""

    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR; logs go to stderr.")
    log_format: Literal["text", "json"] = Field(default="text", description=(
        "json: one JSON object per log line (time, level, logger, message, request_id), on stderr."))
    metrics_port: int | None = Field(default=None, ge=1, le=65535, description=(
        "Also serve Prometheus metrics on 127.0.0.1 at this port (for a stdio server, which has no HTTP "
        "endpoint; the HTTP transport always has /metrics)."))
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
    # Planner statistics after bursts of writes (statistics.py), on any PostgreSQL.
    analyze_min_writes: int = Field(default=50, ge=1, description=(
        "ANALYZE memories in the background once this many writes, or analyze_fraction of the table if more, "
        "landed since the last one."))
    analyze_fraction: float = Field(default=0.1, gt=0, le=1, description=(
        "See analyze_min_writes: the share of the table whose writes trigger an ANALYZE on a large store."))
