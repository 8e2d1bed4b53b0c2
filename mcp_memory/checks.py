"""One line of `mcp-memory doctor`: what was checked, whether it passed, and the fix. Its own module
below both the database doctor and the decisions doctor, which each produce them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
