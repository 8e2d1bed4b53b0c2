"""How values become text: the one SHA-256 digest and the one JSON encoder (dates, UUIDs)."""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any
from uuid import UUID


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _default(value: object) -> str:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def to_json(value: Any, **options: Any) -> str:
    """JSON with dates as ISO 8601 and UUIDs as strings; anything else unknown is an error."""
    return json.dumps(value, default=_default, **options)
