"""The console section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ConsoleSettings(BaseModel):
    """The review console's sign-in sessions (docs/console.md)."""

    console_session_hours: float = Field(default=8, gt=0, le=24 * 30, description=(
        "A console sign-in ends this long after it began, however busy (absolute expiry)."))
    console_idle_minutes: float = Field(default=60, gt=0, le=24 * 60, description=(
        "A console session unused this long ends (idle expiry)."))
